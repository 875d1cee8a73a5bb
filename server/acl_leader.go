package server

import (
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// establishACL runs on a new leader: it makes sure the built-in policy, the
// anonymous token and the configured initial management token exist.
func (s *Server) establishACL() error {
	now := time.Now()
	req := fsm.ACLInitRequest{
		ManagementPolicy: acl.GlobalManagementPolicy(),
		Anonymous:        acl.AnonymousToken(now),
	}
	if secret := s.config.ACLInitialManagementToken; secret != "" {
		initial := acl.ManagementToken("Initial Management Token", secret, now)
		req.Initial = &initial
	}
	if s.aclInitDone(req.Initial) {
		return nil
	}
	_, err := fsm.Apply(s, fsm.ACLInit, &req)
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
