package state

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// checkUsage compares the incremental per-node usage with a sum over
// every allocation of the store.
func checkUsage(t *testing.T, s *Store) {
	t.Helper()
	txn := s.db.Txn(false)
	defer txn.Abort()
	allocs, err := listTxn[Allocation](txn, nil, allocsTable, "id")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*nodeUse{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		n := want[a.NodeID]
		if n == nil {
			n = &nodeUse{}
			want[a.NodeID] = n
		}
		n.res.CPU += a.Resources.CPU
		n.res.MemoryMB += a.Resources.MemoryMB
		for _, p := range a.AllocatedPorts {
			if n.ports == nil {
				n.ports = map[int][]string{}
			}
			n.ports[p.Value] = append(n.ports[p.Value], a.ID)
		}
	}
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	got := map[string]*nodeUse{}
	for id, n := range s.usage.nodes {
		c := &nodeUse{res: n.res}
		for p, owners := range n.ports {
			if c.ports == nil {
				c.ports = map[int][]string{}
			}
			c.ports[p] = append([]string(nil), owners...)
			sort.Strings(c.ports[p])
		}
		got[id] = c
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("usage %s, want %s", fmtUsage(got), fmtUsage(want))
	}
}

func fmtUsage(m map[string]*nodeUse) string {
	out := "{"
	for id, n := range m {
		out += fmt.Sprintf(" %s: %+v", id, *n)
	}
	return out + " }"
}

// TestNodeUsageFollowsAllocations: the per-node usage the plan check reads
// follows placements, client reports, stops and restores, and the check
// refuses and accepts by it: a node filled to its CPU takes no more, takes
// one again once an allocation completes on its client, and takes one in
// place of an allocation the same plan stops.
func TestNodeUsageFollowsAllocations(t *testing.T) {
	w := newPlanWorld(t, nil) // two allocations of 100 MHz on a 10,000 MHz node
	checkUsage(t, w.s)
	if r, _ := w.s.usage.room(w.node.ID, nil); r != (Resources{CPU: 200, MemoryMB: 20}) {
		t.Fatalf("room after the first plan: %+v", r)
	}
	plan := func(placements ...*Allocation) *Plan {
		return &Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Placements: placements, Now: 5}
	}
	// Fill the node: 98 more.
	var fill []*Allocation
	for i := range 98 {
		a := w.newAlloc("a", 10+i, 300+i, w.dep.ID)
		if i == 0 {
			a.AllocatedPorts = []AllocatedPort{{Label: "http", Value: 20000}}
		}
		fill = append(fill, a)
	}
	w.apply(plan(fill...), "")
	checkUsage(t, w.s)
	extra := w.newAlloc("b", 50, 500, w.dep.ID)
	w.apply(plan(extra), fmt.Sprintf("node %s has no room left", w.node.ID))

	// A client report that keeps the allocation live changes nothing; one
	// that ends it gives its room back.
	if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{{ID: fill[1].ID, ClientStatus: AllocClientStatusRunning}}, nil, 6); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, w.s)
	w.apply(plan(extra), fmt.Sprintf("node %s has no room left", w.node.ID))
	if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{{ID: fill[1].ID, ClientStatus: AllocClientStatusComplete}}, nil, 7); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, w.s)
	w.apply(plan(extra), "")
	checkUsage(t, w.s)

	// Full again; a plan that stops the port holder places in its stead,
	// on its port.
	again := w.newAlloc("b", 51, 501, w.dep.ID)
	w.apply(plan(again), fmt.Sprintf("node %s has no room left", w.node.ID))
	again.AllocatedPorts = []AllocatedPort{{Label: "http", Value: 20000}}
	p := plan(again)
	p.Stops = []*AllocStop{{AllocID: fill[0].ID, DesiredDescription: "alloc not needed"}}
	w.apply(p, "")
	checkUsage(t, w.s)
	if _, held := w.s.usage.room(w.node.ID, []int{20000}); !reflect.DeepEqual(held, map[int][]string{20000: {again.ID}}) {
		t.Fatalf("port 20000 held by %v, want %s", held, again.ID)
	}

	// A restored store sums its allocations anew and checks by them.
	c := restore(t, w.s)
	checkUsage(t, c)
	if r, _ := c.usage.room(w.node.ID, nil); r != (Resources{CPU: 10000, MemoryMB: 1000}) {
		t.Fatalf("room after restore: %+v", r)
	}
	res, err := c.ApplyPlan(w.next(), plan(w.newAlloc("b", 52, 502, w.dep.ID)))
	if err != nil || res.Refused != fmt.Sprintf("node %s has no room left", w.node.ID) {
		t.Fatalf("restored store: %+v, %v", res, err)
	}
}
