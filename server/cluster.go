package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/tlsutil"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// Internal cluster endpoints, served beside the API and invisible to it.
const (
	internalServerPath = "/v1/internal/server"
	internalJoinPath   = "/v1/internal/join"
)

// retryInterval paces discovery, joining and registration.
const retryInterval = 250 * time.Millisecond

// nodeInfo is what a server tells others that are forming or joining a cluster.
type nodeInfo struct {
	Self state.ServerInfo
	// Known are the servers this one has heard of while forming a cluster.
	Known []state.ServerInfo
	// Cluster is the Raft configuration once this server has one.
	Cluster []state.ServerInfo
	// AppliedIndex is the last log index this server applied: the leader
	// promotes a non-voter once it has caught up.
	AppliedIndex uint64
}

// self describes this server.
func (s *Server) self() state.ServerInfo {
	return state.ServerInfo{ID: s.nodeID, Name: s.config.NodeName, RaftAddr: s.RaftAddr(), HTTPAddr: s.HTTPAddr(),
		KeyHash: s.keyHash, ACLEnabled: s.config.ACLEnabled}
}

// clusterHandler routes the internal endpoints and sends the rest of the API
// through leader forwarding.
func (s *Server) clusterHandler(api API) http.Handler {
	// The joiner is authenticated where it knocks; the leader checks again
	// (a forwarded join comes with the follower's certificate or the token).
	join := s.requireServer(s.forwarding(http.HandlerFunc(s.handleJoin), nil))
	forwarded := s.forwarding(api, api.AnsweredLocally)
	profiler := map[string]http.Handler{
		"/debug/pprof/profile": s.requireManagement(http.HandlerFunc(pprof.Profile)),
		"/debug/pprof/trace":   s.requireManagement(http.HandlerFunc(pprof.Trace)),
	}
	profilerIndex := s.requireManagement(http.HandlerFunc(pprof.Index))
	// Paths are matched as sent (no cleaning and redirecting, as
	// http.ServeMux would do): the API answers odd paths with a 404.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == internalServerPath:
			s.requireServerCert(http.HandlerFunc(s.handleServerInfo)).ServeHTTP(w, r)
		case p == internalJoinPath:
			join.ServeHTTP(w, r)
		case s.config.EnableDebug && strings.HasPrefix(p, "/debug/pprof/"):
			if h, ok := profiler[p]; ok {
				h.ServeHTTP(w, r)
			} else {
				profilerIndex.ServeHTTP(w, r)
			}
		default:
			forwarded.ServeHTTP(w, r)
		}
	})
}

// requirePermission lets a request through only when ACLs are off or its
// X-Service-Token passes allowed; otherwise it answers 403 with denied.
func (s *Server) requirePermission(allowed func(*acl.Authorizer) bool, denied string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.config.ACLEnabled {
			_, authz, err := s.resolver.Resolve(s.State(), r.Header.Get("X-Service-Token"))
			if err != nil || !allowed(authz) {
				http.Error(w, denied, http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Denials of the internal endpoints.
const (
	deniedJoinTLS   = "Permission denied: joining the cluster needs this datacenter's server certificate (connect over HTTPS with the certificate from `ctlplane tls cert create -server`)"
	deniedJoinToken = "Permission denied: joining the cluster needs a management token (agent flag -join-token, or env CTLPLANE_JOIN_TOKEN)"
	deniedInternal  = "Permission denied: this endpoint is for the cluster's servers and needs this datacenter's server certificate"
)

// requireServer lets a join through when it comes from a server: with TLS,
// one presenting a server certificate of this datacenter; without TLS, one
// holding a management token (when ACLs are on).
func (s *Server) requireServer(next http.Handler) http.Handler {
	token := s.requirePermission((*acl.Authorizer).IsManagement, deniedJoinToken, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.tls == nil {
			token.ServeHTTP(w, r)
			return
		}
		if !tlsutil.IsServer(r.TLS, s.config.Datacenter) {
			http.Error(w, deniedJoinTLS, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireServerCert lets a request through only from a server when TLS is
// on. Without TLS (insecure mode) the endpoint is open, and tells nothing
// secret: addresses, IDs, key hashes and the applied index.
func (s *Server) requireServerCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.tls != nil && !tlsutil.IsServer(r.TLS, s.config.Datacenter) {
			http.Error(w, deniedInternal, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireManagement lets through only a management token when ACLs are on.
func (s *Server) requireManagement(next http.Handler) http.Handler {
	return s.requirePermission((*acl.Authorizer).IsManagement, "Permission denied: the profiler needs a management token", next)
}

func (s *Server) handleServerInfo(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "OPTIONS,GET")
		http.Error(w, fmt.Sprintf("method %s not allowed", r.Method), http.StatusMethodNotAllowed)
		return
	}
	info := nodeInfo{Self: s.self()}
	s.knownMu.Lock()
	for _, k := range s.known {
		info.Known = append(info.Known, k)
	}
	s.knownMu.Unlock()
	info.Cluster = s.raftServersOrNone()
	info.AppliedIndex = s.raft.AppliedIndex()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(info)
}

// raftServers is the current Raft configuration (an error when it cannot be read).
func (s *Server) raftServers() ([]state.ServerInfo, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("failed to read the Raft configuration: %w", err)
	}
	var out []state.ServerInfo
	for _, srv := range f.Configuration().Servers {
		out = append(out, state.ServerInfo{ID: string(srv.ID), RaftAddr: string(srv.Address)})
	}
	return out, nil
}

// raftServersOrNone is raftServers where "none known yet" is the right
// reading of a failure (cluster formation retries; the error is logged).
func (s *Server) raftServersOrNone() []state.ServerInfo {
	out, err := s.raftServers()
	if err != nil {
		s.logger.Debug("no Raft configuration yet", "error", err)
	}
	return out
}

// registerServer records srv unless the record is already identical.
func (s *Server) registerServer(srv state.ServerInfo) error {
	_, cur, err := s.State().Server(memdb.NewWatchSet(), srv.ID)
	if err != nil {
		return err
	}
	if cur != nil && cur.Same(&srv) {
		return nil
	}
	_, err = fsm.Apply(s, fsm.ServerRegister, &fsm.ServerRegisterRequest{Server: srv})
	return err
}

// RemoveServer removes a server from the Raft configuration and forgets it.
func (s *Server) RemoveServer(id string) error {
	members, err := s.raftServers()
	if err != nil {
		return err
	}
	found := false
	for _, c := range members {
		if c.ID == id {
			found = true
		}
	}
	if !found {
		return state.NewError(state.ErrNotFound, "id %q was not found in the Raft configuration", id)
	}
	if err := s.raft.RemoveServer(raft.ServerID(id), 0, 0).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNoLeader
		}
		return fmt.Errorf("failed to remove server %s: %w", id, err)
	}
	_, err = fsm.Apply(s, fsm.ServerDeregister, &fsm.ServerDeregisterRequest{ID: id})
	return err
}

// joinCluster forms or joins the cluster, then keeps this server's record
// current. It runs until shutdown.
func (s *Server) joinCluster(hasState bool) {
	if !hasState && len(s.config.Join) > 0 {
		s.discover()
	}
	select {
	case <-s.failed:
		return // the agent stops (see fail)
	default:
	}
	s.keepRegistered()
}

// discover finds the other servers through the -join addresses. With
// -bootstrap-expect=N, once N servers that are in no cluster know of each
// other, each bootstraps the same configuration (all N, sorted by ID), so a
// single cluster forms whatever the start order. A server that finds an
// existing cluster joins it instead; if that cluster's configuration already
// names this server, it bootstraps with exactly that configuration.
func (s *Server) discover() {
	me := s.self()
	s.knownMu.Lock()
	s.known[me.ID] = me
	s.knownMu.Unlock()
	lastCount := 0
	for {
		select {
		case <-s.shutdownCh:
			return
		default:
		}
		var existing *nodeInfo
		var existingAddr string
		for _, addr := range s.discoveryAddrs() {
			info, err := s.fetchNodeInfo(addr)
			if err != nil {
				s.logger.Debug("discovery: server not reachable", "address", addr, "error", err)
				continue
			}
			// A server that disagrees on the ACL mode must not be in the
			// cluster this one forms: stop rather than form a mixed one.
			for _, k := range append([]state.ServerInfo{info.Self}, info.Known...) {
				if k.ID != "" && k.ACLEnabled != s.config.ACLEnabled {
					s.fail(fmt.Errorf("%sserver %s (%s) has -acl-enabled=%t and this server -acl-enabled=%t; the ACL mode is cluster state and every server must agree",
						aclMismatchPrefix, k.Name, k.HTTPAddr, k.ACLEnabled, s.config.ACLEnabled))
					return
				}
			}
			s.knownMu.Lock()
			s.known[info.Self.ID] = info.Self
			for _, k := range info.Known {
				if k.ID != "" {
					s.known[k.ID] = k
				}
			}
			s.knownMu.Unlock()
			if len(info.Cluster) > 0 && existing == nil {
				existing, existingAddr = info, addr
			}
		}
		if len(s.raftServersOrNone()) > 0 {
			return // configured by a leader that added us
		}
		if existing != nil {
			if s.bootstrapFrom(existing.Cluster) {
				return
			}
			if err := s.requestJoin(existingAddr); err == nil {
				s.logger.Info("joined the cluster", "through", existingAddr)
				return
			} else if isACLMismatch(err) {
				s.fail(err)
				return
			} else {
				s.logger.Warn("join refused, will retry", "through", existingAddr, "error", err)
			}
		} else if expect := s.config.BootstrapExpect; expect > 0 {
			s.knownMu.Lock()
			peers := make([]state.ServerInfo, 0, len(s.known))
			for _, k := range s.known {
				peers = append(peers, k)
			}
			s.knownMu.Unlock()
			if len(peers) >= expect {
				if s.bootstrapFrom(peers) {
					return
				}
			} else if len(peers) != lastCount {
				lastCount = len(peers)
				s.logger.Info("waiting for servers before bootstrapping", "known", len(peers), "expect", expect)
			}
		}
		select {
		case <-s.shutdownCh:
			return
		case <-time.After(retryInterval):
		}
	}
}

// bootstrapFrom bootstraps with the given servers if this one is among them.
func (s *Server) bootstrapFrom(servers []state.ServerInfo) bool {
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	conf := raft.Configuration{}
	in := false
	for _, srv := range servers {
		in = in || srv.ID == s.nodeID
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(srv.ID), Address: raft.ServerAddress(srv.RaftAddr), Suffrage: raft.Voter})
	}
	if !in {
		return false
	}
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		s.logger.Error("failed to bootstrap", "error", err)
		return false
	}
	s.logger.Info("bootstrapped the cluster", "servers", len(conf.Servers))
	return true
}

// discoveryAddrs are the -join addresses plus every HTTP address learned.
func (s *Server) discoveryAddrs() []string {
	seen := map[string]bool{s.HTTPAddr(): true}
	var out []string
	add := func(a string) {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "http://"), "https://")
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, a := range s.config.Join {
		add(a)
	}
	s.knownMu.Lock()
	for _, k := range s.known {
		add(k.HTTPAddr)
	}
	s.knownMu.Unlock()
	return out
}

func (s *Server) fetchNodeInfo(addr string) (*nodeInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme()+"://"+addr+internalServerPath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.clusterClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var info nodeInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return nil, err
	}
	return &info, nil
}

// keepRegistered makes sure the replicated record of this server is current:
// the leader writes its own, a follower asks the leader. That is how every
// server learns where to forward requests.
func (s *Server) keepRegistered() {
	me := s.self()
	for {
		if s.leaderReady.Load() {
			s.forgetDepartedServers()
			s.registerKnownMembers()
		} else {
			s.leaderHTTPAddr() // keeps the last known address current
		}
		_, cur, err := s.State().Server(memdb.NewWatchSet(), me.ID)
		if err == nil && (cur == nil || !cur.Same(&me)) {
			if s.leaderReady.Load() {
				err = s.registerServer(me)
			} else if leader := s.leaderHTTPAddr(); leader != "" {
				err = s.requestJoin(leader)
			}
			if isACLMismatch(err) {
				s.fail(err)
				return
			}
			if err != nil {
				s.logger.Warn("failed to register this server with the leader, will retry", "error", err)
			}
		}
		select {
		case <-s.shutdownCh:
			return
		case <-s.registerCh:
		case <-time.After(retryInterval):
		}
	}
}

// forgetDepartedServers drops the records of servers that are not in the
// Raft configuration (removed peers, or another cluster's servers brought in
// by a snapshot restore).
func (s *Server) forgetDepartedServers() {
	members := map[string]bool{}
	for _, c := range s.raftServersOrNone() {
		members[c.ID] = true
	}
	if len(members) == 0 {
		return
	}
	_, servers, err := s.State().Servers(memdb.NewWatchSet())
	if err != nil {
		return
	}
	for _, srv := range servers {
		if !members[srv.ID] {
			if _, err := fsm.Apply(s, fsm.ServerDeregister, &fsm.ServerDeregisterRequest{ID: srv.ID}); err != nil {
				s.logger.Debug("failed to forget a departed server", "id", srv.ID, "error", err)
			}
		}
	}
}

// registerKnownMembers records the servers met while forming the cluster
// that are members of it, so that followers need not register themselves
// (which, with ACLs on, would need a token).
func (s *Server) registerKnownMembers() {
	members := map[string]string{}
	for _, c := range s.raftServersOrNone() {
		members[c.ID] = c.RaftAddr
	}
	s.knownMu.Lock()
	known := make([]state.ServerInfo, 0, len(s.known))
	for _, k := range s.known {
		known = append(known, k)
	}
	s.knownMu.Unlock()
	for _, k := range known {
		if addr, ok := members[k.ID]; ok && addr == k.RaftAddr && k.ID != s.nodeID {
			// Only a first record: after that, only the member changes it.
			if _, cur, err := s.State().Server(memdb.NewWatchSet(), k.ID); err != nil || cur != nil {
				continue
			}
			if err := s.registerServer(k); err != nil {
				s.logger.Debug("failed to record a member", "id", k.ID, "error", err)
			}
		}
	}
}
