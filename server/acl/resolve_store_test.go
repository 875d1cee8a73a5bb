package acl_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// fsmStore is a state store written through the real FSM, one log index per write.
type fsmStore struct {
	t   *testing.T
	f   *raftfsm.FSM
	idx uint64
}

func newFSMStore(t *testing.T) *fsmStore {
	return &fsmStore{t: t, f: raftfsm.New(hclog.NewNullLogger())}
}

func (s *fsmStore) apply(mt fsm.MessageType, req any) {
	s.t.Helper()
	s.idx++
	buf, err := fsm.Encode(mt, req)
	if err != nil {
		s.t.Fatal(err)
	}
	if err, ok := s.f.Apply(&raft.Log{Index: s.idx, Type: raft.LogCommand, Data: buf}).(error); ok {
		s.t.Fatalf("apply %d: %v", mt, err)
	}
}

func (s *fsmStore) policy(id, rules string) {
	s.apply(fsm.ACLPolicySetType, &fsm.ACLPolicySetRequest{Policy: state.ACLPolicy{ID: id, Name: "p-" + id[:8], Rules: rules}})
}

func (s *fsmStore) token(accessor, secret string, exp *time.Time, policies ...string) {
	tok := state.ACLToken{AccessorID: accessor, SecretID: secret, Namespace: "default", CreateTime: time.Now(), ExpirationTime: exp}
	for _, p := range policies {
		tok.Policies = append(tok.Policies, state.ACLLink{ID: p})
	}
	s.apply(fsm.ACLTokenSetType, &fsm.ACLTokenSetRequest{Token: tok, Create: true})
}

const (
	policyID = "9d0b3c1a-5a8e-4f4b-9b1e-1c2d3e4f5a6b"
	accessor = "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"
	secret   = "5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716"
)

// TestResolveAfterRestore: one Resolver (as the HTTP handler keeps for its
// life) meets a new store after a snapshot restore. The token, its policy
// and every index are the same in both stores; the policy's rules are not.
// What the token may do must come from the store it is resolved in.
func TestResolveAfterRestore(t *testing.T) {
	before, after := newFSMStore(t), newFSMStore(t)
	before.policy(policyID, `acl = "write"`)
	after.policy(policyID, `acl = "read"`)
	before.token(accessor, secret, nil, policyID)
	after.token(accessor, secret, nil, policyID)

	var r acl.Resolver
	_, authz, err := r.Resolve(before.f.State(), secret)
	if err != nil || !authz.ACLWrite() {
		t.Fatalf("before the restore: %v, ACLWrite %v; want write", err, authz != nil && authz.ACLWrite())
	}
	_, authz, err = r.Resolve(after.f.State(), secret)
	if err != nil || authz.ACLWrite() || !authz.ACLRead() {
		t.Errorf("after the restore: %v, ACLWrite %v, ACLRead %v; want read only", err, authz.ACLWrite(), authz.ACLRead())
	}
	// And back: a request still on the old store sees the old rules.
	_, authz, err = r.Resolve(before.f.State(), secret)
	if err != nil || !authz.ACLWrite() {
		t.Errorf("on the old store again: %v, want write", err)
	}
}

// TestResolveExpiry: an expired token is ErrTokenNotFound (reaped or not);
// one that has not expired yet resolves.
func TestResolveExpiry(t *testing.T) {
	s := newFSMStore(t)
	s.policy(policyID, `acl = "write"`)
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	s.token(accessor, secret, &past, policyID)
	s.token("2f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", "live-secret", &future, policyID)
	s.apply(fsm.ACLInitType, &fsm.ACLInitRequest{
		ManagementPolicy: state.ACLPolicy{ID: state.GlobalManagementPolicyID, Name: state.GlobalManagementPolicyName, Rules: `acl = "write"`},
		Anonymous:        state.ACLToken{AccessorID: state.AnonymousTokenID, SecretID: state.AnonymousTokenSecret, Namespace: "default"},
	})

	var r acl.Resolver
	for _, sec := range []string{secret, "no-such-secret"} {
		if _, _, err := r.Resolve(s.f.State(), sec); !errors.Is(err, acl.ErrTokenNotFound) {
			t.Errorf("Resolve(%q): %v, want ErrTokenNotFound", sec, err)
		}
	}
	if tok, authz, err := r.Resolve(s.f.State(), "live-secret"); err != nil || !authz.ACLWrite() || tok.ExpirationTime == nil {
		t.Errorf("live token: %v", err)
	}
	if tok, authz, err := r.Resolve(s.f.State(), ""); err != nil || tok.AccessorID != state.AnonymousTokenID || authz.ACLRead() {
		t.Errorf("no secret: %+v, %v; want the anonymous token without permissions", tok, err)
	}

	// Reaping at a time after the expiry deletes only the expired token.
	s.apply(fsm.ACLTokenReapType, &fsm.ACLTokenReapRequest{AccessorIDs: []string{accessor, "2f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"}, Now: time.Now()})
	if _, tok, _ := s.f.State().ACLTokenByAccessor(nil, accessor); tok != nil {
		t.Error("the expired token was not reaped")
	}
	if _, _, err := r.Resolve(s.f.State(), "live-secret"); err != nil {
		t.Errorf("the live token after reaping: %v", err)
	}
}

// TestResolveCacheFollowsChanges: one Resolver resolves the same secret
// again after every kind of change a token's permissions come from; each
// change shows on the very next resolution, never a cached answer.
func TestResolveCacheFollowsChanges(t *testing.T) {
	const roleID = "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d"
	const readPolicy = "8b7c6d5e-4f3a-4b2c-8d1e-0f9a8b7c6d5e"
	s := newFSMStore(t)
	s.policy(policyID, `acl = "write"`)
	s.policy(readPolicy, `acl = "read"`)
	s.token(accessor, secret, nil, policyID)
	var r acl.Resolver
	level := func() string {
		t.Helper()
		_, authz, err := r.Resolve(s.f.State(), secret)
		switch {
		case errors.Is(err, acl.ErrTokenNotFound):
			return "not found"
		case err != nil:
			t.Fatal(err)
		case authz.ACLWrite():
			return "write"
		case authz.ACLRead():
			return "read"
		}
		return "none"
	}
	steps := []struct {
		change func()
		want   string
	}{
		{func() {}, "write"},
		{func() {}, "write"}, // cached
		{func() { s.policy(policyID, `acl = "read"`) }, "read"},
		{func() { s.policy(policyID, `acl = "deny"`) }, "none"},
		{func() {
			tok := state.ACLToken{AccessorID: accessor, SecretID: secret, Namespace: "default", CreateTime: time.Now(),
				Policies: []state.ACLLink{{ID: readPolicy}}}
			s.apply(fsm.ACLTokenSetType, &fsm.ACLTokenSetRequest{Token: tok})
		}, "read"},
		{func() {
			s.apply(fsm.ACLRoleSetType, &fsm.ACLRoleSetRequest{Role: state.ACLRole{ID: roleID, Name: "writers",
				Policies: []state.ACLLink{{ID: policyID}}}})
			s.policy(policyID, `acl = "write"`)
			tok := state.ACLToken{AccessorID: accessor, SecretID: secret, Namespace: "default", CreateTime: time.Now(),
				Roles: []state.ACLLink{{ID: roleID}}}
			s.apply(fsm.ACLTokenSetType, &fsm.ACLTokenSetRequest{Token: tok})
		}, "write"},
		{func() {
			s.apply(fsm.ACLRoleSetType, &fsm.ACLRoleSetRequest{Role: state.ACLRole{ID: roleID, Name: "writers",
				Policies: []state.ACLLink{{ID: readPolicy}}}})
		}, "read"},
		{func() { s.apply(fsm.ACLPolicyDeleteType, &fsm.ACLPolicyDeleteRequest{ID: readPolicy}) }, "none"},
		{func() { s.apply(fsm.ACLTokenDeleteType, &fsm.ACLTokenDeleteRequest{AccessorID: accessor}) }, "not found"},
	}
	for i, step := range steps {
		step.change()
		if got := level(); got != step.want {
			t.Fatalf("step %d: %s, want %s", i, got, step.want)
		}
	}

	// A cached token that expires is refused by the clock alone.
	now := time.Now()
	r.Now = func() time.Time { return now }
	exp := now.Add(time.Minute)
	s.token("3f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", secret, &exp, policyID)
	if got := level(); got != "write" {
		t.Fatalf("before expiry: %s", got)
	}
	now = exp.Add(time.Second)
	if got := level(); got != "not found" {
		t.Fatalf("after expiry: %s, want not found", got)
	}
}
