package state

import "testing"

// ClientAllocs with since: the allocations the client has as they are
// (AllocModifyIndex at most since) come bare, without the job version
// lookup; the others with their task group.
func TestClientAllocsSinceLeavesUnchangedBare(t *testing.T) {
	w := newPlanWorld(t, nil)
	idx, all, err := w.s.ClientAllocs(nil, w.node.ID, 0)
	if err != nil || len(all) != 2 {
		t.Fatalf("%d allocations (%v)", len(all), err)
	}
	for _, ca := range all {
		if ca.TaskGroup == nil || ca.TaskGroup.Name != ca.Allocation.TaskGroup {
			t.Fatalf("allocation %s without its task group", ca.Allocation.ID)
		}
	}
	fresh := w.newAlloc("b", 5, 400, w.dep.ID)
	w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex,
		Placements: []*Allocation{fresh}, Now: 5}, "")
	next, all, err := w.s.ClientAllocs(nil, w.node.ID, idx)
	if err != nil || len(all) != 3 || next <= idx {
		t.Fatalf("%d allocations at %d after %d (%v)", len(all), next, idx, err)
	}
	for _, ca := range all {
		isNew := ca.Allocation.ID == fresh.ID
		if isNew != (ca.TaskGroup != nil) || (isNew && ca.TaskGroup.Name != "b") {
			t.Errorf("allocation %s (new: %v): task group %+v", ca.Allocation.ID, isNew, ca.TaskGroup)
		}
	}
}
