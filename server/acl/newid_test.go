package acl_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// A create whose candidate ID a rule already has is refused by the FSM and
// tried again under another; when every candidate is taken it ends with an
// error, not a loop, and writes nothing.
func TestCreateBindingRuleRetriesTakenIDs(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	const taken = "6f1d0c52-3b0e-4c8e-8f1e-2a3b4c5d6e7f"
	const free = "0b8f7c6a-1d2e-4f30-9a8b-7c6d5e4f3a2b"
	req := acl.BindingRuleRequest{AuthMethod: "m", BindType: "service", BindName: "x", Namespace: "default"}
	count := func() int {
		_, rules, err := env.ts.Server.State().BindingRules(memdb.NewWatchSet(), state.AllNamespaces, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(rules)
	}

	acl.SetNewID(s, func() string { return taken })
	if r, err := s.WriteBindingRule(acl.Internal(), "", req); err != nil || r.ID != taken {
		t.Fatalf("first create: %+v %v, want the rule %s", r, err, taken)
	}

	calls := 0
	acl.SetNewID(s, func() string { calls++; return taken })
	r, err := s.WriteBindingRule(acl.Internal(), "", req)
	if err == nil || err.Error() != "could not find an unused binding rule ID: every candidate was taken" || r != nil {
		t.Fatalf("every candidate taken: %+v %v", r, err)
	}
	if calls != acl.NewIDAttempts || count() != 1 {
		t.Fatalf("%d candidates tried, %d rules; want %d and 1", calls, count(), acl.NewIDAttempts)
	}

	calls = 0
	acl.SetNewID(s, func() string {
		calls++
		if calls < 3 {
			return taken
		}
		return free
	})
	if r, err := s.WriteBindingRule(acl.Internal(), "", req); err != nil || r.ID != free || calls != 3 || count() != 2 {
		t.Fatalf("taken twice, then free: %+v %v after %d candidates, %d rules", r, err, calls, count())
	}
}
