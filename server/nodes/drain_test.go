package nodes_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// Drain and eligibility check their caller themselves (node:write),
// before looking the node up; the operator's accessor is recorded. (A
// bare server: no drainer completes the drain of the empty node.)
func TestDrainServiceChecksItsCaller(t *testing.T) {
	ts := deploytest.Start(t)
	s := nodes.New(ts.Deps, nodes.Config{HeartbeatTTL: time.Minute})
	authz := func(rules string) *acl.Authorizer {
		r, err := acl.Parse(rules)
		if err != nil {
			t.Fatal(err)
		}
		return acl.NewAuthorizer([]*acl.Rules{r})
	}
	reader, writer := authz(`node = "read"`), authz(`node = "write"`)
	n := &state.Node{ID: uuid.NewString(), Name: "a", Datacenter: "dc1", Resources: state.Resources{CPU: 1000, MemoryMB: 1024}}
	if _, err := s.Register(nodes.Caller{ACL: acl.ManageAll()}, n); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]acl.Caller{"no authorizer": {}, "node:read": {Authz: reader}} {
		_, err := s.UpdateDrain(c, n.ID, &state.DrainSpec{}, false, nil)
		wantCode(t, what+" drain", err, state.ErrForbidden)
		_, err = s.UpdateEligibility(c, n.ID, state.NodeSchedulingIneligible)
		wantCode(t, what+" eligibility", err, state.ErrForbidden)
		_, err = s.UpdateDrain(c, uuid.NewString(), nil, true, nil)
		wantCode(t, what+" drain of an unknown node", err, state.ErrForbidden)
	}
	_, err := s.UpdateDrain(acl.Caller{Authz: writer}, uuid.NewString(), nil, true, nil)
	wantCode(t, "unknown node", err, state.ErrNotFound)
	_, err = s.UpdateEligibility(acl.Caller{Authz: writer}, n.ID, "maybe")
	wantCode(t, "bad eligibility", err, state.ErrInvalid)

	res, err := s.UpdateDrain(acl.Caller{Authz: writer, AccessorID: "op-1"}, n.ID, &state.DrainSpec{Deadline: time.Minute}, false, map[string]string{"why": "disk"})
	if err != nil || res.Index == 0 || res.NodeModifyIndex != res.Index || len(res.EvalIDs) != 0 {
		t.Fatalf("drain: %+v %v", res, err)
	}
	_, got, _ := ts.Server.State().Node(nil, n.ID)
	if got.DrainStrategy == nil || got.LastDrain == nil || got.LastDrain.AccessorID != "op-1" || got.LastDrain.Meta["why"] != "disk" || got.ModifyIndex != res.Index {
		t.Fatalf("drained node: %+v", got)
	}
	_, err = s.UpdateEligibility(acl.Caller{Authz: writer}, n.ID, state.NodeSchedulingEligible)
	wantCode(t, "eligible while draining", err, state.ErrInvalid)
}
