package state

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Fixed IDs, listed here in ascending order; tests insert them out of order.
const (
	idA       = "0a1b2c3d-0000-4000-8000-000000000001"
	idB       = "5e6f7a8b-0000-4000-8000-000000000002"
	idC       = "9c8d7e6f-0000-4000-8000-000000000003"
	idD       = "f0e1d2c3-0000-4000-8000-000000000004"
	idMissing = "11111111-2222-4333-8444-555555555555"
)

// watchWait bounds how long a test waits for a watch that must fire, and is
// how long it waits to conclude that one did not. Watch channels close
// synchronously at commit, so a firing watch returns at once.
const watchWait = 50 * time.Millisecond

// fired reports whether any channel of ws is closed.
func fired(ws memdb.WatchSet) bool {
	return !ws.Watch(time.After(watchWait))
}

func newRule(id, ns, method, bindName string) *BindingRule {
	return &BindingRule{
		ID:          id,
		Description: "rule " + bindName,
		AuthMethod:  method,
		Selector:    "value.team == " + bindName,
		BindType:    BindTypeService,
		BindName:    bindName,
		Namespace:   ns,
	}
}

// mustCreate creates a rule at idx and fails the test on any error.
func mustCreate(t *testing.T, s *Store, idx uint64, r *BindingRule) *BindingRule {
	t.Helper()
	out, err := s.BindingRuleSet(idx, r, true)
	if err != nil {
		t.Fatalf("create %s at %d: %v", r.ID, idx, err)
	}
	return out
}

// wantStateError checks that err is a *Error with that code and message.
func wantStateError(t *testing.T, err error, code ErrorCode, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %d %q", code, msg)
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %q is not a *state.Error", err, err)
	}
	if se.Code != code || se.Msg != msg || err.Error() != msg {
		t.Fatalf("got error code %d %q, want %d %q", se.Code, err.Error(), code, msg)
	}
}

func ruleIDs(rules []*BindingRule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.ID)
	}
	return out
}

// ClientAllocChangesCount is the count a node's changes read reports.
func (s *Store) ClientAllocChangesCount(nodeID string) int {
	s.nodeAllocs.mu.RLock()
	defer s.nodeAllocs.mu.RUnlock()
	return s.nodeAllocs.listedLocked(nodeID)
}
