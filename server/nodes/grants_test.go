package nodes_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// The node service grants each node call on its own capability (called
// directly, without HTTP): read-fs for files, read-job for allocation
// stats, alloc-lifecycle for restart and signal, node:read for host
// stats; the grant it mints verifies for that call only, under the
// node's secret; bad arguments are refused before anything is looked up.
func TestServiceGrantsByCapability(t *testing.T) {
	ts := servertest.Start(t)
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	s := nodes.New(deps, nodes.Config{HeartbeatTTL: time.Minute})
	node := &state.Node{ID: uuid.NewString(), Name: "n", Datacenter: "dc1", Resources: state.Resources{CPU: 1000, MemoryMB: 1024}, HTTPAddr: "127.0.0.1:1"}
	reg, err := s.Register(nodes.Caller{ACL: acl.ManageAll()}, node)
	if err != nil {
		t.Fatal(err)
	}
	job := &state.Job{Namespace: "default", ID: "j", Name: "j", Type: state.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{Name: "web", Count: 1, Tasks: []*state.Task{{Name: "app", Driver: "mock_driver", Resources: &state.Resources{CPU: 10, MemoryMB: 10}}}}}}
	if _, err := fsm.Apply(ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	_, stored, err := ts.Server.State().Job(nil, "default", "j")
	if err != nil || stored == nil {
		t.Fatalf("job: %v", err)
	}
	allocID := uuid.NewString()
	plan := &state.Plan{EvalID: uuid.NewString(), Namespace: "default", JobID: "j", JobModifyIndex: stored.JobModifyIndex, Now: time.Now().UnixNano(),
		Placements: []*state.Allocation{{ID: allocID, Namespace: "default", Name: "j.web[0]", NodeID: node.ID, NodeName: "n", JobID: "j", TaskGroup: "web",
			Resources: state.Resources{CPU: 10, MemoryMB: 10}}}}
	if res, err := fsm.Apply(ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan}); err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %v", err, res)
	}
	authz := func(rules string) *acl.Authorizer {
		r, err := acl.Parse(rules)
		if err != nil {
			t.Fatal(err)
		}
		return acl.NewAuthorizer([]*acl.Rules{r})
	}
	fsReader := authz(`namespace "default" { capabilities = ["read-fs"] }`)
	jobReader := authz(`namespace "default" { policy = "read" }`)
	lifecycle := authz(`namespace "default" { capabilities = ["alloc-lifecycle"] }`)
	nodeReader := authz(`node = "read"`)

	cases := []struct {
		g       api.Grant
		allowed *acl.Authorizer
		denied  []*acl.Authorizer
	}{
		{api.Grant{Op: api.GrantFSList, AllocID: allocID, Path: "app"}, fsReader, []*acl.Authorizer{jobReader, lifecycle, nodeReader}},
		{api.Grant{Op: api.GrantFSCat, AllocID: allocID, Path: "/app/x"}, fsReader, []*acl.Authorizer{jobReader, lifecycle}},
		{api.Grant{Op: api.GrantAllocStats, AllocID: allocID}, jobReader, []*acl.Authorizer{fsReader, lifecycle, nodeReader}},
		{api.Grant{Op: api.GrantAllocRestart, AllocID: allocID, Task: "app"}, lifecycle, []*acl.Authorizer{fsReader, jobReader, nodeReader}},
		{api.Grant{Op: api.GrantAllocSignal, AllocID: allocID, Signal: "usr1"}, lifecycle, []*acl.Authorizer{fsReader, jobReader}},
		{api.Grant{Op: api.GrantHostStats, NodeID: node.ID}, nodeReader, []*acl.Authorizer{fsReader, jobReader, lifecycle}},
	}
	for _, c := range cases {
		for _, d := range c.denied {
			_, err := s.Grant(nodes.Caller{ACL: d}, c.g)
			wantCode(t, c.g.Op+" without its capability", err, state.ErrForbidden)
		}
		_, err := s.Grant(nodes.Caller{}, c.g)
		wantCode(t, c.g.Op+" without a token", err, state.ErrForbidden)
		tg, err := s.Grant(nodes.Caller{ACL: c.allowed}, c.g)
		if err != nil || tg.Grant == "" || tg.NodeID != node.ID || tg.HTTPAddr != "127.0.0.1:1" {
			t.Fatalf("%s: %+v %v", c.g.Op, tg, err)
		}
		// Normalized as the node is asked: a rooted clean path, SIGUSR1.
		want := c.g
		switch c.g.Op {
		case api.GrantFSList:
			want.Path = "/app"
		case api.GrantAllocSignal:
			want.Signal = "SIGUSR1"
		}
		if err := api.VerifyGrant(reg.SecretID, tg.Grant, want, time.Now()); err != nil {
			t.Errorf("%s: the grant does not verify for its call: %v", c.g.Op, err)
		}
		other := want
		other.Op = api.GrantLogs
		if api.VerifyGrant(reg.SecretID, tg.Grant, other, time.Now()) == nil {
			t.Errorf("%s: the grant verifies for logs", c.g.Op)
		}
	}
	for what, g := range map[string]api.Grant{
		"a path with ..":            {Op: api.GrantFSCat, AllocID: allocID, Path: "app/../../etc/passwd"},
		"an unknown signal":         {Op: api.GrantAllocSignal, AllocID: allocID, Signal: "SIGSEGV"},
		"a task and all tasks":      {Op: api.GrantAllocRestart, AllocID: allocID, Task: "app", AllTasks: true},
		"an unknown operation":      {Op: "fs/write", AllocID: allocID},
		"a task named ..":           {Op: api.GrantAllocRestart, AllocID: allocID, Task: ".."},
		"a node ID that is not one": {Op: api.GrantHostStats, NodeID: "x"},
	} {
		_, err := s.Grant(nodes.Caller{ACL: acl.ManageAll()}, g)
		wantCode(t, what, err, state.ErrInvalid)
	}
	_, err = s.Grant(nodes.Caller{ACL: acl.ManageAll()}, api.Grant{Op: api.GrantHostStats, NodeID: uuid.NewString()})
	wantCode(t, "stats of an unknown node", err, state.ErrNotFound)
}
