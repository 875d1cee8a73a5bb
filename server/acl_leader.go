package server

import (
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// globalManagementPolicy is the built-in policy that allows everything.
func globalManagementPolicy() state.ACLPolicy {
	p := state.ACLPolicy{
		ID:          state.GlobalManagementPolicyID,
		Name:        state.GlobalManagementPolicyName,
		Description: "Builtin Policy that grants unlimited access",
		Rules:       "acl = \"write\"\noperator = \"write\"\nnamespace \"*\" {\n  policy = \"write\"\n}\n",
	}
	p.Hash = state.HashOf(p.Name, p.Description, p.Rules)
	return p
}

// establishACL runs on a new leader: it makes sure the built-in policy, the
// anonymous token and the configured initial management token exist.
func (s *Server) establishACL() error {
	req := fsm.ACLInitRequest{
		ManagementPolicy: globalManagementPolicy(),
		Anonymous: state.ACLToken{
			AccessorID:  state.AnonymousTokenID,
			SecretID:    state.AnonymousTokenSecret,
			Description: "Anonymous Token",
			Namespace:   state.DefaultNamespace,
			CreateTime:  time.Now().UTC(),
		},
	}
	req.Anonymous.Hash = state.HashOf(req.Anonymous.Description)
	if secret := s.config.ACLInitialManagementToken; secret != "" {
		initial := state.ACLToken{
			AccessorID:  uuid.NewString(),
			SecretID:    secret,
			Description: "Initial Management Token",
			Policies:    []state.ACLLink{{ID: state.GlobalManagementPolicyID, Name: state.GlobalManagementPolicyName}},
			Namespace:   state.DefaultNamespace,
			CreateTime:  time.Now().UTC(),
		}
		initial.Hash = state.HashOf(initial.Description, state.GlobalManagementPolicyID)
		req.Initial = &initial
	}
	if s.aclInitDone(req.Initial) {
		return nil
	}
	_, err := s.Apply(fsm.ACLInitType, &req)
	return err
}

// aclInitDone says whether the built-in objects are all there already, so
// that a leadership change does not write an entry for nothing.
func (s *Server) aclInitDone(initial *state.ACLToken) bool {
	st := s.State()
	ws := memdb.NewWatchSet()
	_, p, err1 := st.ACLPolicy(ws, state.GlobalManagementPolicyID)
	_, anon, err2 := st.ACLTokenByAccessor(ws, state.AnonymousTokenID)
	if err1 != nil || err2 != nil || p == nil || anon == nil {
		return false
	}
	if initial != nil {
		_, tok, err := st.ACLTokenBySecret(ws, initial.SecretID)
		return err == nil && tok != nil
	}
	return true
}

// reapExpiredTokens deletes tokens whose expiry has passed. Expired tokens
// are refused at once anyway; reaping only frees the space.
func (s *Server) reapExpiredTokens() {
	now := time.Now()
	_, expired, err := s.State().ACLTokens(memdb.NewWatchSet(), func(t *state.ACLToken) bool { return t.Expired(now) })
	if err != nil || len(expired) == 0 {
		return
	}
	ids := make([]string, len(expired))
	for i, t := range expired {
		ids[i] = t.AccessorID
	}
	if _, err := s.Apply(fsm.ACLTokenReapType, &fsm.ACLTokenReapRequest{AccessorIDs: ids, Now: now}); err != nil {
		s.logger.Warn("failed to reap expired tokens", "error", err)
	} else {
		s.logger.Debug("reaped expired tokens", "count", len(ids))
	}
}

// leaderACLLoop reaps expired tokens while this server leads.
func (s *Server) leaderACLLoop(stopCh <-chan struct{}) {
	tick := time.NewTicker(s.config.TokenReapInterval)
	defer tick.Stop()
	for {
		select {
		case <-stopCh:
			return
		case <-s.shutdownCh:
			return
		case <-tick.C:
			if !s.leaderReady.Load() {
				return
			}
			s.reapExpiredTokens()
		}
	}
}
