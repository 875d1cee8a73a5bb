package state

import (
	"fmt"
	"testing"
)

// TestApplyPlanRefusesPortCollisions: the applier refuses a plan whose
// placement takes a host port a live allocation (or the node's reserved
// ports, or another placement of the same plan) already holds on the node,
// and accepts it once the holder stops in the same plan or elsewhere.
func TestApplyPlanRefusesPortCollisions(t *testing.T) {
	w := newPlanWorld(t, nil)
	withPorts := func(a *Allocation, ports ...int) *Allocation {
		for i, p := range ports {
			a.AllocatedPorts = append(a.AllocatedPorts, AllocatedPort{Label: fmt.Sprintf("p%d", i), Value: p, HostIP: "127.0.0.1"})
		}
		return a
	}
	plan := func(placements ...*Allocation) *Plan {
		return &Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Placements: placements, Now: 5}
	}
	// The first placement with ports goes in.
	first := withPorts(w.newAlloc("a", 1, 201, w.dep.ID), 20000, 8080)
	w.apply(plan(first), "")
	_, got, err := w.s.Alloc(nil, first.ID)
	if err != nil || got == nil || len(got.AllocatedPorts) != 2 || got.AllocatedPorts[1].Value != 8080 {
		t.Fatalf("stored ports: %+v (%v)", got, err)
	}

	// A second plan computed side by side gives the same dynamic port.
	dup := withPorts(w.newAlloc("b", 1, 202, w.dep.ID), 20000)
	w.apply(plan(dup), fmt.Sprintf("node %s: port 20000 (p0 of allocation %s) is already taken by allocation %s", w.node.ID, dup.ID, first.ID))

	// Two placements of one plan sharing a port.
	x, y := withPorts(w.newAlloc("b", 2, 203, w.dep.ID), 9000), withPorts(w.newAlloc("b", 3, 204, w.dep.ID), 9000)
	w.apply(plan(x, y), fmt.Sprintf("node %s: port 9000 (p0 of allocation %s) is already taken by allocation %s", w.node.ID, y.ID, x.ID))

	// A port the plan frees by stopping its holder may be taken again.
	again := withPorts(w.newAlloc("a", 2, 205, w.dep.ID), 8080)
	p := plan(again)
	p.Stops = []*AllocStop{{AllocID: first.ID, DesiredDescription: "alloc not needed"}}
	w.apply(p, "")
	_, stopped, _ := w.s.Alloc(nil, first.ID)
	if stopped.DesiredStatus != AllocDesiredStatusStop {
		t.Fatalf("holder not stopped: %s", stopped.DesiredStatus)
	}

	// The node's reserved ports are never handed out.
	node := *w.node
	node.ReservedPorts = []int{22}
	if err := w.s.NodeRegister(w.next(), &node, nil); err != nil {
		t.Fatal(err)
	}
	ssh := withPorts(w.newAlloc("b", 4, 206, w.dep.ID), 22)
	w.apply(plan(ssh), fmt.Sprintf("node %s: port 22 (p0 of allocation %s) is already taken by the node's reserved ports", w.node.ID, ssh.ID))
}
