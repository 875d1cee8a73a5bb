package state

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Several nodes' reports in one entry count every health change into one
// copy of their deployment, in order, and leave the deployment read before
// the entry as it was.
func TestAllocsClientUpdatesCountHealthOnce(t *testing.T) {
	w := newPlanWorld(t, map[string]int{"b": 2})
	_, before, _ := w.s.Deployment(nil, w.dep.ID)
	yes, no := true, false
	report := func(name string, healthy *bool) *AllocClientUpdate {
		return &AllocClientUpdate{ID: w.alloc[name].ID, ClientStatus: AllocClientStatusRunning,
			DeploymentStatus: &AllocDeploymentStatus{Healthy: healthy}}
	}
	idx := w.next()
	err := w.s.AllocsClientUpdates(idx, []*NodeAllocReports{
		{NodeID: w.node.ID, Updates: []*AllocClientUpdate{report("web.a[0]", &yes), report("web.b[0]", &yes)}, Now: 7},
		// The same node's next request, in the same entry: b[0] turns unhealthy.
		{NodeID: w.node.ID, Updates: []*AllocClientUpdate{report("web.b[1]", &no), report("web.b[0]", &no)}, Now: 8},
		// Another node cannot report these allocations: skipped.
		{NodeID: planID(2), Updates: []*AllocClientUpdate{report("web.b[1]", &yes)}, Now: 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, d, _ := w.s.Deployment(nil, w.dep.ID)
	if a, b := d.TaskGroups["a"], d.TaskGroups["b"]; a.HealthyAllocs != 1 || a.UnhealthyAllocs != 0 || b.HealthyAllocs != 0 || b.UnhealthyAllocs != 2 {
		t.Fatalf("counters a %+v, b %+v", a, b)
	}
	if d.ModifyIndex != idx || d.ModifyTime != 8 {
		t.Errorf("deployment modified at %d (%d), want %d (8)", d.ModifyIndex, d.ModifyTime, idx)
	}
	if b := before.TaskGroups["b"]; b.HealthyAllocs != 0 || b.UnhealthyAllocs != 0 || before.ModifyIndex == idx {
		t.Errorf("the deployment read before the entry changed: %+v at %d", b, before.ModifyIndex)
	}
	for name, want := range map[string]bool{"web.a[0]": true, "web.b[0]": false, "web.b[1]": false} {
		_, a, _ := w.s.Alloc(nil, w.alloc[name].ID)
		if a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || *a.DeploymentStatus.Healthy != want || a.ModifyIndex != idx {
			t.Errorf("%s: %+v at %d", name, a.DeploymentStatus, a.ModifyIndex)
		}
	}
}

// A node's allocations are read through node_modify (no index by node
// alone): in ID order whatever order they were written in, only that
// node's, and the read's watch fires on a report of one of them.
func TestAllocsByNodeOrderAndWatch(t *testing.T) {
	w := newPlanWorld(t, map[string]int{"b": 2})
	// Reports in reverse ID order, each at its own index: node_modify
	// holds them in that order.
	_, all, _ := w.s.AllocsByNode(nil, w.node.ID)
	if len(all) != 3 {
		t.Fatalf("node has %d allocations, want 3", len(all))
	}
	for i := len(all) - 1; i >= 0; i-- {
		err := w.s.AllocsClientUpdates(w.next(), []*NodeAllocReports{{NodeID: w.node.ID, Now: 5,
			Updates: []*AllocClientUpdate{{ID: all[i].ID, ClientStatus: AllocClientStatusRunning}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	ws := memdb.NewWatchSet()
	idx, got, err := w.s.AllocsByNode(ws, w.node.ID)
	if err != nil || idx != w.idx || len(got) != len(all) {
		t.Fatalf("AllocsByNode: %d allocations at %d (%v), want %d at %d", len(got), idx, err, len(all), w.idx)
	}
	for i := range got {
		if got[i].ID != all[i].ID || got[i].ClientStatus != AllocClientStatusRunning {
			t.Fatalf("allocation %d is %s (%s), want %s, running: not in ID order", i, got[i].ID, got[i].ClientStatus, all[i].ID)
		}
	}
	if _, other, _ := w.s.AllocsByNode(nil, w.node.ID[:35]); len(other) != 0 {
		t.Fatalf("a node ID's prefix reads %d allocations", len(other))
	}
	if err := w.s.AllocsClientUpdates(w.next(), []*NodeAllocReports{{NodeID: w.node.ID, Now: 6,
		Updates: []*AllocClientUpdate{{ID: all[1].ID, ClientStatus: AllocClientStatusFailed}}}}); err != nil {
		t.Fatal(err)
	}
	if ws.Watch(time.After(time.Second)) {
		t.Fatal("a report on the node did not fire the watch of its allocations")
	}
}
