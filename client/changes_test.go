package client_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// waitRunners waits until the client runs exactly the allocations ids.
func (e *env) waitRunners(t *testing.T, what string, ids ...string) {
	t.Helper()
	slices.Sort(ids)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := e.client.RunnerIDs()
		if slices.Equal(got, ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: runners %v, want %v", what, got, ids)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func running(a *api.Allocation) bool  { return a.ClientStatus == state.AllocClientStatusRunning }
func complete(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusComplete }

// The client follows its list through the changes reads: it starts what is
// placed, drops what it ended once the servers no longer list it (the next
// change tells it) and what a collection deleted, and after a snapshot
// restore reads the whole list again and runs what it names, no more.
func TestClientFollowsItsAllocationChanges(t *testing.T) {
	e := newEnv(t)
	var ids []string
	var jobs []*state.Job
	for i := range 3 {
		job := e.job(t, fmt.Sprintf("svc-%d", i), nil, nil, map[string]any{"stdout_string": "hi"})
		id, _ := e.place(t, job)
		e.waitAlloc(t, id, "running", running)
		ids, jobs = append(ids, id), append(jobs, job)
	}
	e.waitRunners(t, "three placed", ids...)
	var saved bytes.Buffer
	if err := e.ts.Server.SnapshotSave(&saved); err != nil {
		t.Fatal(err)
	}

	// Stopped: it ends; the next change of the list drops its runner.
	e.stop(t, jobs[0], ids[0])
	e.waitAlloc(t, ids[0], "complete", complete)
	extra := e.job(t, "svc-extra", nil, nil, map[string]any{"stdout_string": "hi"})
	extraID, _ := e.place(t, extra)
	e.waitAlloc(t, extraID, "running", running)
	e.waitRunners(t, "after a stop and a placement", ids[1], ids[2], extraID)

	// Stopped and collected: the collection wakes the client, which drops it.
	e.stop(t, jobs[1], ids[1])
	e.waitAlloc(t, ids[1], "complete", complete)
	gc, err := fsm.Apply(e.ts.Server, fsm.GC, &fsm.GCRequest{Request: state.GCRequest{Params: state.GCForce, AllocIDs: []string{ids[1]}}})
	if err != nil || gc.Allocs != 1 {
		t.Fatalf("collection: %+v %v", gc, err)
	}
	e.waitRunners(t, "after a collection", ids[2], extraID)
	if n := e.client.FullReads(); n != 1 {
		t.Fatalf("%d reads of the whole list before the restore, want the first alone", n)
	}

	// The snapshot of the three running: the whole list again.
	if err := e.ts.Server.SnapshotRestore(&saved); err != nil {
		t.Fatal(err)
	}
	e.waitRunners(t, "after a restore", ids...)
	for _, id := range ids {
		e.waitAlloc(t, id, "running after the restore", running)
	}
	if n := e.client.FullReads(); n < 2 {
		t.Fatalf("%d reads of the whole list after the restore", n)
	}
}
