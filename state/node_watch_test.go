package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
)

// A node's blocking read wakes when the servers place, stop or update one
// of its allocations, not when its client reports on them, nor when
// another node's allocations change, nor for a node without allocations
// when others get some.
func TestClientAllocsIndexWakesOnServerChangesOfTheNodeOnly(t *testing.T) {
	w := newPlanWorld(t, nil)
	other := &Node{ID: planID(2), Name: "n2", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible,
		Resources: Resources{CPU: 10000, MemoryMB: 10000}}
	idle := &Node{ID: planID(3), Name: "n3", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible}
	for _, n := range []*Node{other, idle} {
		if err := w.s.NodeRegister(w.next(), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	watch := func(nodeID string) (memdb.WatchSet, uint64) {
		ws := memdb.NewWatchSet()
		idx, err := w.s.ClientAllocsIndex(ws, nodeID)
		if err != nil {
			t.Fatal(err)
		}
		return ws, idx
	}

	// The client's own report: no wake, same index.
	ws, before := watch(w.node.ID)
	wsIdle, _ := watch(idle.ID)
	w.health(true, "web.a[0]")
	if fired(ws) {
		t.Fatal("the node's read woke on its client's own report")
	}
	if _, idx := watch(w.node.ID); idx != before {
		t.Fatalf("index %d after the client's report, want %d", idx, before)
	}

	// A placement on another node: neither this node nor the idle one wakes.
	ws, _ = watch(w.node.ID)
	a := w.newAlloc("a", 1, 301, w.dep.ID)
	a.NodeID = other.ID
	wsOther, _ := watch(other.ID)
	w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 5,
		Placements: []*Allocation{a}}, "")
	if !fired(wsOther) {
		t.Fatal("the other node's read did not wake on its placement")
	}
	if fired(ws) || fired(wsIdle) {
		t.Fatal("a read woke on another node's placement")
	}

	// A stop of one of its allocations: it wakes, and the index moves.
	ws, before = watch(w.node.ID)
	res := w.apply(&Plan{EvalID: planID(802), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 6,
		Stops: []*AllocStop{{AllocID: w.alloc["web.a[0]"].ID, DesiredDescription: "alloc not needed"}}}, "")
	if !fired(ws) {
		t.Fatal("the node's read did not wake on a stop of its allocation")
	}
	if _, idx := watch(w.node.ID); idx != res.Index || idx <= before {
		t.Fatalf("index %d after the stop at %d (before %d)", idx, res.Index, before)
	}

	// A snapshot restore abandons the store: every read wakes.
	ws, _ = watch(w.node.ID)
	w.s.Abandon()
	if !fired(ws) {
		t.Fatal("the node's read did not wake when the store was abandoned")
	}
}

// A stored node's computed class is the one of what was written last: the
// cache set at the write follows a registration that changes the class.
func TestNodeComputedClassFollowsWrites(t *testing.T) {
	s := NewStore()
	n := &Node{ID: planID(1), Name: "n1", Datacenter: "dc1", NodeClass: "small", Status: NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": "h1"}}
	if err := s.NodeRegister(10, n, nil); err != nil {
		t.Fatal(err)
	}
	_, got, _ := s.Node(nil, n.ID)
	if got.class == "" || got.ComputedClass() != got.computeClass() {
		t.Fatalf("stored class %q, computed %q", got.class, got.computeClass())
	}
	first := got.ComputedClass()
	c := *n
	c.NodeClass = "large"
	if err := s.NodeRegister(11, &c, nil); err != nil {
		t.Fatal(err)
	}
	_, got, _ = s.Node(nil, n.ID)
	if got.ComputedClass() == first || got.ComputedClass() != got.computeClass() {
		t.Fatalf("class after re-registering as large: %q (was %q, computed %q)", got.ComputedClass(), first, got.computeClass())
	}
	// A unique attribute is not part of the class.
	c2 := c
	c2.Attributes = map[string]string{"kernel.name": "linux", "unique.hostname": "h2"}
	if err := s.NodeRegister(12, &c2, nil); err != nil {
		t.Fatal(err)
	}
	_, again, _ := s.Node(nil, n.ID)
	if again.ComputedClass() != got.ComputedClass() {
		t.Fatalf("a unique attribute changed the class: %q vs %q", again.ComputedClass(), got.ComputedClass())
	}
}
