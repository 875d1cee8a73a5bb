package state

import (
	"slices"
	"testing"
)

// clientChanges reads the node's changes after since or fails the test.
func (w *planWorld) clientChanges(since uint64) *ClientAllocChanges {
	w.t.Helper()
	ch, err := w.s.ClientAllocChanges(w.node.ID, since)
	if err != nil {
		w.t.Fatal(err)
	}
	return ch
}

func changedIDs(ch *ClientAllocChanges) []string {
	var out []string
	for _, ca := range ch.Allocs {
		out = append(out, ca.Allocation.ID)
	}
	return out
}

// A node's changes: the whole list from 0; after an index, only what the
// servers changed (with its task group), what left the list (ended on the
// client, deleted by a collection), and the list's length.
func TestClientAllocChanges(t *testing.T) {
	w := newPlanWorld(t, nil)
	all := w.clientChanges(0)
	if !all.Full || len(all.Allocs) != 2 || all.Count != 2 || len(all.Removed) != 0 {
		t.Fatalf("from 0: %+v", all)
	}
	for _, ca := range all.Allocs {
		if ca.TaskGroup == nil || ca.TaskGroup.Name != ca.Allocation.TaskGroup {
			t.Fatalf("allocation %s without its task group", ca.Allocation.ID)
		}
	}
	idx := all.Index

	// The client's own report: nothing changed for it, the index stays.
	if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{{ID: w.alloc["web.a[0]"].ID,
		ClientStatus: AllocClientStatusRunning, TaskStates: map[string]*TaskState{"app": {State: "running"}}}}, nil, 3); err != nil {
		t.Fatal(err)
	}
	if ch := w.clientChanges(idx); ch.Full || len(ch.Allocs) != 0 || len(ch.Removed) != 0 || ch.Count != 2 || ch.Index != idx {
		t.Fatalf("after the client's report: %+v", ch)
	}

	// A placement: it alone comes, whole, without the task states.
	fresh := w.newAlloc("b", 5, 400, w.dep.ID)
	fresh.Metrics = &AllocMetric{NodesEvaluated: 1}
	res := w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex,
		Placements: []*Allocation{fresh}, Now: 5}, "")
	ch := w.clientChanges(idx)
	if ch.Full || !slices.Equal(changedIDs(ch), []string{fresh.ID}) || ch.Count != 3 || ch.Index != res.Index {
		t.Fatalf("after a placement at %d: %+v", res.Index, ch)
	}
	if tg := ch.Allocs[0].TaskGroup; tg == nil || tg.Name != "b" {
		t.Fatalf("the placement's task group: %+v", tg)
	}
	if _, stored, _ := w.s.Alloc(nil, fresh.ID); stored.Metrics == nil || ch.Allocs[0].Allocation.Metrics != nil {
		t.Fatalf("metrics: stored %v, sent %v", stored.Metrics, ch.Allocs[0].Allocation.Metrics)
	}
	idx = ch.Index

	// A stop: the stopped allocation comes (still listed: it runs until
	// its client says it ended), without the task states it reported.
	a0 := w.alloc["web.a[0]"].ID
	w.setStatus(DeploymentStatusSuccessful, DeploymentStatusDescriptionSuccessful)
	res = w.apply(&Plan{EvalID: planID(802), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 6,
		Stops: []*AllocStop{{AllocID: a0, DesiredDescription: "alloc not needed"}}}, "")
	ch = w.clientChanges(idx)
	if ch.Full || !slices.Equal(changedIDs(ch), []string{a0}) || ch.Count != 3 || ch.Index != res.Index ||
		ch.Allocs[0].Allocation.DesiredStatus != AllocDesiredStatusStop {
		t.Fatalf("after a stop at %d: %+v", res.Index, ch)
	}
	if _, stored, _ := w.s.Alloc(nil, a0); stored.TaskStates == nil || ch.Allocs[0].Allocation.TaskStates != nil {
		t.Fatalf("task states: stored %v, sent %v", stored.TaskStates, ch.Allocs[0].Allocation.TaskStates)
	}
	idx = ch.Index

	// The client says it ended: it leaves the list (its report does not
	// move the index: the node reads it with the next change).
	if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{{ID: a0, ClientStatus: AllocClientStatusComplete}}, nil, 7); err != nil {
		t.Fatal(err)
	}
	ch = w.clientChanges(idx)
	if ch.Full || len(ch.Allocs) != 0 || !slices.Equal(ch.Removed, []string{a0}) || ch.Count != 2 || ch.Index != idx {
		t.Fatalf("after the client's end: %+v", ch)
	}

	// A collection deletes it: named again, as deleted, and the index moves.
	gc, err := w.s.GCApply(w.next(), &GCRequest{Params: GCForce, AllocIDs: []string{a0}})
	if err != nil || gc.Allocs != 1 {
		t.Fatalf("collection: %+v %v", gc, err)
	}
	ch = w.clientChanges(idx)
	if ch.Full || len(ch.Allocs) != 0 || !slices.Contains(ch.Removed, a0) || ch.Count != 2 || ch.Index != gc.Index {
		t.Fatalf("after the collection at %d: %+v", gc.Index, ch)
	}
	if later := w.clientChanges(ch.Index); len(later.Removed) != 0 || len(later.Allocs) != 0 || later.Count != 2 {
		t.Fatalf("after the collection's index: %+v", later)
	}

	// An index from before the node was (re)registered: the whole list.
	_, node, _ := w.s.Node(nil, w.node.ID)
	if ch := w.clientChanges(node.CreateIndex - 1); !ch.Full || ch.Count != 2 || len(ch.Allocs) != 2 {
		t.Fatalf("from before the node: %+v", ch)
	}
}

// restoreCopy restores a copy of s, as a snapshot restore does.
func restoreCopy(t *testing.T, s *Store) *Store {
	t.Helper()
	snap := s.Snapshot()
	defer snap.Close()
	r := NewRestore()
	for _, table := range Tables() {
		if err := snap.Each(table, func(row any) error { return r.Insert(table, row) }); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := snap.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx {
		if err := r.Index(e); err != nil {
			t.Fatal(err)
		}
	}
	return r.Commit()
}

// A restored store knows no deletions from before it: every changes read
// is whole until its first commit, and then every read from an index below
// that commit.
func TestClientAllocChangesAfterRestore(t *testing.T) {
	w := newPlanWorld(t, nil)
	before := w.clientChanges(0)
	w.s = restoreCopy(t, w.s)
	if got := w.s.ClientAllocsIndex(nil, w.node.ID); got != before.Index {
		t.Fatalf("restored index %d, want %d", got, before.Index)
	}
	if ch := w.clientChanges(before.Index); !ch.Full || ch.Count != 2 || len(ch.Allocs) != 2 {
		t.Fatalf("before the first commit: %+v", ch)
	}
	fresh := w.newAlloc("b", 5, 400, w.dep.ID)
	res := w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex,
		Placements: []*Allocation{fresh}, Now: 5}, "")
	if ch := w.clientChanges(res.Index - 1); !ch.Full || ch.Count != 3 || len(ch.Allocs) != 3 {
		t.Fatalf("from below the first commit: %+v", ch)
	}
	if ch := w.clientChanges(res.Index); ch.Full || len(ch.Allocs) != 0 || ch.Count != 3 {
		t.Fatalf("from the first commit: %+v", ch)
	}
}

// Past maxTombstones deletions, a node's oldest are dropped: a read from
// before them is whole; one from after them is not.
func TestClientAllocChangesTombstoneHorizon(t *testing.T) {
	w := newPlanWorld(t, nil)
	start := w.clientChanges(0).Index
	var ids []string
	for i := range maxTombstones + 1 {
		a := w.newAlloc("b", 10+i, 1000+i, "")
		a.DesiredStatus, a.ClientStatus = AllocDesiredStatusStop, AllocClientStatusComplete
		w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex,
			Placements: []*Allocation{a}, Now: 5}, "")
		ids = append(ids, a.ID)
	}
	mid := w.clientChanges(start).Index
	gc, err := w.s.GCApply(w.next(), &GCRequest{Params: GCForce, AllocIDs: ids[:maxTombstones]})
	if err != nil || gc.Allocs != maxTombstones {
		t.Fatalf("collection: %+v %v", gc, err)
	}
	last, err := w.s.GCApply(w.next(), &GCRequest{Params: GCForce, AllocIDs: ids[maxTombstones:]})
	if err != nil || last.Allocs != 1 {
		t.Fatalf("collection: %+v %v", last, err)
	}
	if ch := w.clientChanges(mid); !ch.Full || ch.Count != 2 {
		t.Fatalf("from before the dropped tombstones: %+v", ch)
	}
	if ch := w.clientChanges(gc.Index); ch.Full || !slices.Equal(ch.Removed, ids[maxTombstones:]) || ch.Count != 2 {
		t.Fatalf("from after them: %+v", ch)
	}
}
