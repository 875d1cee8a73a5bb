package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// changesRead is one answer of a node's changes read.
type changesRead struct {
	ch   *api.ClientAllocChanges
	meta *api.QueryMeta
	err  error
}

// readChanges starts a read of the changes after since, blocking on
// waitIndex (0: none), and returns where its answer arrives.
func readChanges(nc *ntNodeClient, nodeID string, since, waitIndex uint64) <-chan changesRead {
	out := make(chan changesRead, 1)
	go func() {
		ch, meta, err := nc.NodeAllocationChanges(context.Background(), nodeID, since, &api.QueryOptions{WaitIndex: waitIndex, WaitTime: time.Minute})
		out <- changesRead{ch, meta, err}
	}()
	return out
}

func awaitChanges(t *testing.T, what string, c <-chan changesRead) changesRead {
	t.Helper()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no answer", what)
		return changesRead{}
	}
}

// blocked checks that a blocking read has not answered yet.
func blocked(t *testing.T, what string, c <-chan changesRead) {
	t.Helper()
	select {
	case r := <-c:
		t.Fatalf("%s answered before any change: %+v %v", what, r.ch, r.err)
	case <-time.After(50 * time.Millisecond):
	}
}

func allocIDs(cas []*api.ClientAlloc) []string {
	var out []string
	for _, ca := range cas {
		out = append(out, ca.Allocation.ID)
	}
	slices.Sort(out)
	return out
}

// GET /v1/client/allocations/:node?changes_since=N over HTTP: the whole list
// from 0; then, each blocking read woken by a change of the servers, only
// what changed (a placement, a stop), what left the list (ended on the
// client, collected), and the list's length; after a snapshot restore, the
// whole list again.
func TestNodeClientAllocationChanges(t *testing.T) {
	env := ntStart(t, time.Minute)
	c := env.client(t, "")
	ctx := context.Background()
	reg := ntNode("node-c")
	nc := ntRegister(t, c, reg)
	job := ntJob(t, env.ts, "svc", nil, map[string]any{"run_for": "1h"})
	first, _ := ntPlace(t, env.ts, job, reg.ID, reg.Name, 2, env.clock.Now())
	var saved bytes.Buffer
	if err := env.ts.Server.SnapshotSave(&saved); err != nil {
		t.Fatal(err)
	}

	// From 0: the whole list, as JSON with every field, and its index.
	resp := env.srv.Do(t, "GET", "/v1/client/allocations/"+reg.ID+"?changes_since=0", "", api.NodeSecretHeader, nc.secret)
	var raw map[string]json.RawMessage
	if resp.Status != 200 || json.Unmarshal([]byte(resp.Body), &raw) != nil || len(raw) != 4 ||
		string(raw["Full"]) != "true" || string(raw["Removed"]) != "[]" || string(raw["Count"]) != "2" {
		t.Fatalf("from 0: %s", resp)
	}
	if idx, err := strconv.ParseUint(resp.Header.Get("X-Service-Index"), 10, 64); err != nil || idx == 0 {
		t.Fatalf("from 0: X-Service-Index %q", resp.Header.Get("X-Service-Index"))
	}
	r := awaitChanges(t, "from 0", readChanges(nc, reg.ID, 0, 0))
	if !r.ch.Full || r.ch.Count != 2 || !slices.Equal(allocIDs(r.ch.Allocs), allocIDs([]*api.ClientAlloc{
		{Allocation: &api.Allocation{ID: first[0].ID}}, {Allocation: &api.Allocation{ID: first[1].ID}}})) {
		t.Fatalf("from 0: %+v", r.ch)
	}
	for _, ca := range r.ch.Allocs {
		if ca.TaskGroup == nil || ca.TaskGroup.Name != "web" {
			t.Fatalf("allocation %s without its task group", ca.Allocation.ID)
		}
	}
	idx := r.meta.LastIndex

	// A placement wakes the blocked read: it alone comes.
	wait := readChanges(nc, reg.ID, idx, idx)
	blocked(t, "the read after the list", wait)
	more, _ := ntPlace(t, env.ts, job, reg.ID, reg.Name, 1, env.clock.Now())
	r = awaitChanges(t, "after a placement", wait)
	if r.ch.Full || r.ch.Count != 3 || len(r.ch.Allocs) != 1 || r.ch.Allocs[0].Allocation.ID != more[0].ID ||
		r.ch.Allocs[0].TaskGroup == nil || len(r.ch.Removed) != 0 || r.meta.LastIndex <= idx {
		t.Fatalf("after a placement: %+v at %d", r.ch, r.meta.LastIndex)
	}
	idx = r.meta.LastIndex

	// A stop: the stopped allocation comes, still counted.
	stopped := first[0].ID
	wait = readChanges(nc, reg.ID, idx, idx)
	res, err := fsm.Apply(env.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: &state.Plan{
		Namespace: "default", JobID: job.ID, JobModifyIndex: job.JobModifyIndex, Now: env.clock.Now().UnixNano(),
		Stops: []*state.AllocStop{{AllocID: stopped, DesiredDescription: "test"}}}})
	if err != nil || res.Refused != "" {
		t.Fatalf("stop: %v %+v", err, res)
	}
	r = awaitChanges(t, "after a stop", wait)
	if r.ch.Full || r.ch.Count != 3 || len(r.ch.Allocs) != 1 || r.ch.Allocs[0].Allocation.ID != stopped ||
		r.ch.Allocs[0].Allocation.DesiredStatus != state.AllocDesiredStatusStop || len(r.ch.Removed) != 0 {
		t.Fatalf("after a stop: %+v", r.ch)
	}
	idx = r.meta.LastIndex

	// The node reports it ended: its own report wakes no read, but the
	// next read names it removed.
	wait = readChanges(nc, reg.ID, idx, idx)
	if _, err := nc.UpdateAllocations(ctx, reg.ID, []*api.AllocClientUpdate{{ID: stopped, ClientStatus: api.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	blocked(t, "the read after the node's own report", wait)
	r = awaitChanges(t, "after the node's report", readChanges(nc, reg.ID, idx, 0))
	if r.ch.Full || r.ch.Count != 2 || len(r.ch.Allocs) != 0 || !slices.Equal(r.ch.Removed, []string{stopped}) || r.meta.LastIndex != idx {
		t.Fatalf("after the node's report: %+v at %d (was %d)", r.ch, r.meta.LastIndex, idx)
	}

	// A collection deletes it: that wakes the waiting read, which names it.
	gc, err := fsm.Apply(env.ts.Server, fsm.GC, &fsm.GCRequest{Request: state.GCRequest{Params: state.GCForce, AllocIDs: []string{stopped}}})
	if err != nil || gc.Allocs != 1 {
		t.Fatalf("collection: %+v %v", gc, err)
	}
	r = awaitChanges(t, "after the collection", wait)
	if r.ch.Full || r.ch.Count != 2 || len(r.ch.Allocs) != 0 || !slices.Contains(r.ch.Removed, stopped) || r.meta.LastIndex != gc.Index {
		t.Fatalf("after the collection at %d: %+v at %d", gc.Index, r.ch, r.meta.LastIndex)
	}
	idx = r.meta.LastIndex

	// A restore of the snapshot taken after the first two: the waiting
	// read wakes with the whole list, as it was.
	wait = readChanges(nc, reg.ID, idx, idx)
	blocked(t, "the read before the restore", wait)
	if err := env.ts.Server.SnapshotRestore(&saved); err != nil {
		t.Fatal(err)
	}
	r = awaitChanges(t, "after the restore", wait)
	if !r.ch.Full || r.ch.Count != 2 || len(r.ch.Removed) != 0 || !slices.Equal(allocIDs(r.ch.Allocs), allocIDs([]*api.ClientAlloc{
		{Allocation: &api.Allocation{ID: first[0].ID}}, {Allocation: &api.Allocation{ID: first[1].ID}}})) {
		t.Fatalf("after the restore: %+v", r.ch)
	}

	expectError(t, env.srv.Do(t, "GET", "/v1/client/allocations/"+reg.ID+"?changes_since=x", "", api.NodeSecretHeader, nc.secret),
		400, `Invalid changes_since: "x" is not an index`)
	expectError(t, env.srv.Do(t, "GET", "/v1/client/allocations/"+reg.ID+"?changes_since=-1", "", api.NodeSecretHeader, nc.secret),
		400, `Invalid changes_since: "-1" is not an index`)
}
