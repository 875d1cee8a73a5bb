package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/limits"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// joinRequest is what a server sends to be added to the cluster or to have
// its record updated.
type joinRequest struct {
	ID, Name, RaftAddr, HTTPAddr string
	// ACLEnabled is the joiner's -acl-enabled: it must be the cluster's.
	ACLEnabled bool
	// Key is the joiner's secret key (see loadServerKey): its SHA-256 is
	// kept in the record, and only the same key may change the record.
	Key string
}

// joinError is a refusal of a join, with the status to serve it with.
type joinError struct {
	code int
	msg  string
}

func (e *joinError) Error() string { return e.msg }

func isACLMismatch(err error) bool {
	return err != nil && strings.Contains(err.Error(), aclMismatchPrefix)
}

// handleJoin runs on the leader (forwarding brings it there), after the
// joiner was authenticated (requireServer): it adds the caller as a
// non-voter, promoted once it has caught up (autopilot), and records it.
func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", "OPTIONS,PUT")
		http.Error(w, fmt.Sprintf("method %s not allowed", r.Method), http.StatusMethodNotAllowed)
		return
	}
	var req joinRequest
	dec := json.NewDecoder(limits.NewJSONReader(io.LimitReader(r.Body, 1<<16)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf("Join decoding failed: %v", err), http.StatusBadRequest)
		return
	}
	if req.ID == "" || req.RaftAddr == "" || req.HTTPAddr == "" || req.Key == "" {
		http.Error(w, "Join needs ID, RaftAddr, HTTPAddr and Key", http.StatusBadRequest)
		return
	}
	if err := s.addServer(&req); err != nil {
		code := http.StatusInternalServerError
		var je *joinError
		switch {
		case errors.As(err, &je):
			code = je.code
		case errors.Is(err, ErrNoLeader):
			code = http.StatusServiceUnavailable
		}
		if code >= 500 {
			s.logger.Warn("failed to add a server", "id", req.ID, "error", err)
		} else {
			s.logger.Warn("refused a join", "id", req.ID, "node", req.Name, "raft_address", req.RaftAddr, "http_address", req.HTTPAddr, "reason", err)
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("true"))
}

// addServer checks a join against the cluster's ACL mode and the records of
// its members, puts the server into the Raft configuration (a new one as a
// non-voter) and records it.
func (s *Server) addServer(req *joinRequest) error {
	if req.ACLEnabled != s.config.ACLEnabled {
		return &joinError{http.StatusConflict, aclMismatch(fmt.Sprintf("server %s (%s)", req.Name, req.ID), req.ACLEnabled, s.config.ACLEnabled).Error()}
	}
	hash := keyHash(req.Key)
	notOwner := &joinError{http.StatusForbidden, fmt.Sprintf(
		"Permission denied: server %s is a member of the cluster and only that server (with the key in its data directory) may change its record", req.ID)}
	if req.ID == s.nodeID && subtle.ConstantTimeCompare([]byte(hash), []byte(s.keyHash)) != 1 {
		return notOwner
	}
	_, cur, err := s.State().Server(memdb.NewWatchSet(), req.ID)
	if err != nil {
		return err
	}
	if cur != nil && cur.KeyHash != "" && subtle.ConstantTimeCompare([]byte(hash), []byte(cur.KeyHash)) != 1 {
		return notOwner
	}
	var member *raft.Server
	conf, err := s.raftConfig()
	if err != nil {
		return err
	}
	for i, c := range conf.Servers {
		if c.ID == raft.ServerID(req.ID) {
			member = &conf.Servers[i]
		} else if string(c.Address) == req.RaftAddr {
			return &joinError{http.StatusConflict, fmt.Sprintf("Raft address %s belongs to server %s; remove it first (ctlplane operator raft remove-peer -id=%s)", req.RaftAddr, c.ID, c.ID)}
		}
	}
	// A member without a record has nothing to prove it by: its address
	// stays as configured.
	if member != nil && cur == nil && string(member.Address) != req.RaftAddr {
		return notOwner
	}
	if member == nil || string(member.Address) != req.RaftAddr {
		var f raft.IndexFuture
		if member != nil && member.Suffrage == raft.Voter {
			s.logger.Info("server moved: updating its Raft address", "id", req.ID, "raft_address", req.RaftAddr)
			f = s.raft.AddVoter(raft.ServerID(req.ID), raft.ServerAddress(req.RaftAddr), 0, 0)
		} else {
			// A newcomer counts for the quorum only once it has caught up:
			// an unreachable one must not cost the cluster its leader.
			s.logger.Info("adding server as a non-voter until it has caught up", "id", req.ID, "node", req.Name, "raft_address", req.RaftAddr)
			f = s.raft.AddNonvoter(raft.ServerID(req.ID), raft.ServerAddress(req.RaftAddr), 0, 0)
		}
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				return ErrNoLeader
			}
			return fmt.Errorf("failed to add server %s: %w", req.ID, err)
		}
	}
	return s.registerServer(state.ServerInfo{ID: req.ID, Name: req.Name, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr,
		KeyHash: hash, ACLEnabled: req.ACLEnabled})
}

// requestJoin asks the cluster behind addr to add this server or update its
// record.
func (s *Server) requestJoin(addr string) error {
	me := s.self()
	body, _ := json.Marshal(&joinRequest{ID: me.ID, Name: me.Name, RaftAddr: me.RaftAddr, HTTPAddr: me.HTTPAddr,
		ACLEnabled: me.ACLEnabled, Key: s.key})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.scheme()+"://"+addr+internalJoinPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if s.config.JoinToken != "" && s.tls == nil {
		req.Header.Set("X-Service-Token", s.config.JoinToken)
	}
	resp, err := s.clusterClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}
