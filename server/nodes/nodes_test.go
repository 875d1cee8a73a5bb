package nodes_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

func wantCode(t *testing.T, what string, err error, code state.ErrorCode) {
	t.Helper()
	var se *state.Error
	if !errors.As(err, &se) || se.Code != code {
		t.Errorf("%s: got %v, want code %d", what, err, code)
	}
}

// The service checks its callers itself: a caller that is not HTTP (here
// the service called directly, over a real Raft server) cannot skip it.
func TestServiceChecksItsCaller(t *testing.T) {
	ts := servertest.Start(t)
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	s := nodes.New(deps, nodes.Config{HeartbeatTTL: time.Minute})
	rules, err := acl.Parse(`node = "read"`)
	if err != nil {
		t.Fatal(err)
	}
	reader := acl.NewAuthorizer([]*acl.Rules{rules})
	node := func(name string) *state.Node {
		return &state.Node{ID: uuid.NewString(), Name: name, Datacenter: "dc1", Resources: state.Resources{CPU: 1000, MemoryMB: 1024}}
	}

	a := node("a")
	_, err = s.Register(nodes.Caller{}, a)
	wantCode(t, "register without a token", err, state.ErrForbidden)
	_, err = s.Register(nodes.Caller{ACL: reader}, a)
	wantCode(t, "register with node:read", err, state.ErrForbidden)
	reg, err := s.Register(nodes.Caller{ACL: acl.ManageAll()}, a)
	if err != nil || reg.NodeID != a.ID || reg.SecretID == "" {
		t.Fatalf("register: %+v %v", reg, err)
	}
	b, err := s.Register(nodes.Caller{ACL: acl.ManageAll()}, node("b"))
	if err != nil {
		t.Fatal(err)
	}
	// Management is not the node; another node's secret is not either.
	for what, c := range map[string]nodes.Caller{
		"management":         {ACL: acl.ManageAll()},
		"another node":       {NodeSecret: b.SecretID},
		"a made-up secret":   {NodeSecret: uuid.NewString()},
		"management + other": {ACL: acl.ManageAll(), NodeSecret: b.SecretID},
	} {
		_, err = s.Register(c, a)
		wantCode(t, what+" re-registers", err, state.ErrForbidden)
		_, _, err = s.Heartbeat(c, a.ID)
		wantCode(t, what+" heartbeats", err, state.ErrForbidden)
		_, err = s.AllocChangesForNode(c, a.ID, 0)
		wantCode(t, what+" reads allocations", err, state.ErrForbidden)
		_, err = s.UpdateAllocs(c, a.ID, nil)
		wantCode(t, what+" updates allocations", err, state.ErrForbidden)
	}
	me := nodes.Caller{NodeSecret: reg.SecretID}
	if _, _, err := s.Heartbeat(me, a.ID); err != nil {
		t.Errorf("own heartbeat: %v", err)
	}
	again, err := s.Register(me, a)
	if err != nil || again.SecretID != "" || again.NodeID != a.ID {
		t.Errorf("own re-registration: %+v %v", again, err)
	}
	_, err = s.LogsGrant(nodes.Caller{}, uuid.NewString(), "t", "stdout")
	wantCode(t, "logs grant without a token", err, state.ErrForbidden)
	_, err = s.LogsGrant(nodes.Caller{ACL: reader}, uuid.NewString(), "t", "stdout")
	wantCode(t, "logs grant of an unknown allocation", err, state.ErrNotFound)
}
