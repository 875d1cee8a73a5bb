package acl_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
)

// TestValidatorCacheAfterRestore (issue 8, finding 7): one service meets a
// new store after a snapshot restore from another cluster. Auth method "m"
// has the same name and indexes in both stores but trusts another key; a
// login must be judged by the method of the store it runs on, not by a
// validator cached from the old one.
func TestValidatorCacheAfterRestore(t *testing.T) {
	keyA, keyB := newKey(t), newKey(t)
	before, after := newFSMStore(t), newFSMStore(t)
	method := func(k *key) *fsm.ACLAuthMethodSetRequest {
		return &fsm.ACLAuthMethodSetRequest{Create: true, Method: state.ACLAuthMethod{
			Name: "m", Type: "jwt", Namespace: "default",
			Config: map[string]any{"JWTValidationPubKeys": []any{k.pem(t)}, "ClaimMappings": map[string]any{"sub": "name"}},
		}}
	}
	before.apply(fsm.ACLAuthMethodSetType, method(keyA))
	after.apply(fsm.ACLAuthMethodSetType, method(keyB))

	var cur atomic.Pointer[state.Store]
	cur.Store(before.f.State())
	s := acl.NewService(svc.Deps{State: func() *state.Store { return cur.Load() }}, "dc1")
	validates := func(bearer string) bool {
		t.Helper()
		ex, err := s.Explain(context.Background(), acl.Internal(), acl.ExplainRequest{AuthMethod: "m", BearerToken: bearer})
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		return ex.Identity != nil // no rules: the verdict is a refusal either way
	}
	if !validates(keyA.sign(t, "web")) || validates(keyB.sign(t, "web")) {
		t.Fatal("before the restore the method must trust key A only")
	}
	cur.Store(after.f.State())
	if validates(keyA.sign(t, "web")) {
		t.Error("after the restore a token signed by the old cluster's key still validates")
	}
	if !validates(keyB.sign(t, "web")) {
		t.Error("after the restore a token signed by the restored method's key does not validate")
	}
}
