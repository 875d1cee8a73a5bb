package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
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
		return ws, w.s.ClientAllocsIndex(ws, nodeID)
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

// A node's index kept from the commits is the one a walk computes: the
// highest AllocModifyIndex of its allocations or the index of the last
// deletion of one (at least 1); so is its count of listed allocations, and
// its changes read after each step adds up to its whole list, through random placements, stops, client
// reports, desired transitions and collections on three nodes, and after
// a restore.
func TestClientAllocsIndexMatchesAWalk(t *testing.T) {
	w := newPlanWorld(t, nil)
	nodes := []string{w.node.ID}
	for i := 2; i <= 3; i++ {
		n := &Node{ID: planID(i), Name: fmt.Sprintf("n%d", i), Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible,
			Resources: Resources{CPU: 100000, MemoryMB: 100000}}
		if err := w.s.NodeRegister(w.next(), n, nil); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n.ID)
	}
	w.setStatus(DeploymentStatusSuccessful, DeploymentStatusDescriptionSuccessful)
	deleted := map[string]uint64{}
	walk := func(nodeID string) uint64 {
		_, allocs, err := w.s.Allocs(nil, AllNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		idx := max(1, deleted[nodeID])
		for _, a := range allocs {
			if a.NodeID == nodeID {
				idx = max(idx, a.AllocModifyIndex)
			}
		}
		return idx
	}
	walkListed := func(nodeID string) int {
		_, allocs, err := w.s.Allocs(nil, AllNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range allocs {
			if a.NodeID == nodeID && !a.ClientTerminalStatus() {
				n++
			}
		}
		return n
	}
	// follow reads each node's changes as its client does and checks that
	// what they add up to is the whole list.
	held := map[string]map[string]bool{}
	since := map[string]uint64{}
	resyncs, revived := 0, 0
	follow := func(step int, nodeID string) {
		t.Helper()
		ch, err := w.s.ClientAllocChanges(nodeID, since[nodeID])
		if err != nil {
			t.Fatal(err)
		}
		if ch.Full != (since[nodeID] == 0) {
			t.Fatalf("step %d: node %s read from %d: Full %v", step, nodeID, since[nodeID], ch.Full)
		}
		if ch.Full || held[nodeID] == nil {
			held[nodeID] = map[string]bool{}
		}
		for _, ca := range ch.Allocs {
			held[nodeID][ca.Allocation.ID] = true
		}
		for _, id := range ch.Removed {
			delete(held[nodeID], id)
		}
		if len(held[nodeID]) != ch.Count {
			// A client that reports an allocation it said ended as
			// running again: only its count tells, and the client reads
			// the whole list.
			resyncs++
			full, err := w.s.ClientAllocChanges(nodeID, 0)
			if err != nil {
				t.Fatal(err)
			}
			held[nodeID] = map[string]bool{}
			for _, ca := range full.Allocs {
				held[nodeID][ca.Allocation.ID] = true
			}
		}
		all, err := w.s.ClientAllocChanges(nodeID, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, ca := range all.Allocs {
			want[ca.Allocation.ID] = true
		}
		if !maps.Equal(held[nodeID], want) || ch.Count != len(want) || all.Count != len(want) {
			t.Fatalf("step %d: node %s holds %v (count %d), the list is %v (count %d)", step, nodeID, held[nodeID], ch.Count, want, all.Count)
		}
		since[nodeID] = ch.Index
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() *Allocation {
		_, allocs, _ := w.s.Allocs(nil, AllNamespaces)
		if len(allocs) == 0 {
			return nil
		}
		return allocs[rng.IntN(len(allocs))]
	}
	plan := func() *Plan {
		return &Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 5}
	}
	n := 2000
	for step := range 400 {
		a := pick()
		switch op := rng.IntN(5); {
		case op == 0 || a == nil:
			n++
			p := w.newAlloc("a", n, n, "")
			p.NodeID = nodes[rng.IntN(len(nodes))]
			pl := plan()
			pl.Placements = []*Allocation{p}
			w.apply(pl, "")
		case op == 1:
			pl := plan()
			pl.Stops = []*AllocStop{{AllocID: a.ID, DesiredDescription: "test"}}
			w.apply(pl, "")
		case op == 2:
			status := []string{AllocClientStatusRunning, AllocClientStatusComplete, AllocClientStatusFailed}[rng.IntN(3)]
			if a.ClientTerminalStatus() && status == AllocClientStatusRunning {
				revived++
			}
			if err := w.s.AllocsClientUpdate(w.next(), a.NodeID, []*AllocClientUpdate{{ID: a.ID, ClientStatus: status}}, nil, 6); err != nil {
				t.Fatal(err)
			}
		case op == 3:
			yes := true
			if err := w.s.AllocsDesiredTransition(w.next(), map[string]DesiredTransition{a.ID: {Migrate: &yes}}, nil); err != nil {
				t.Fatal(err)
			}
		default:
			res, err := w.s.GCApply(w.next(), &GCRequest{Params: GCForce, AllocIDs: []string{a.ID}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Allocs == 1 {
				deleted[a.NodeID] = res.Index
			}
		}
		for _, id := range nodes {
			if got, want := w.s.ClientAllocsIndex(nil, id), walk(id); got != want {
				t.Fatalf("step %d: node %s kept index %d, a walk %d", step, id, got, want)
			}
			if got, want := w.s.ClientAllocChangesCount(id), walkListed(id); got != want {
				t.Fatalf("step %d: node %s kept count %d, a walk %d", step, id, got, want)
			}
			follow(step, id)
		}
	}
	if len(deleted) == 0 {
		t.Fatal("no collection deleted anything: the walk's deletions were not tested")
	}
	if resyncs > revived {
		t.Fatalf("%d whole reads after a count mismatch, %d allocations reported running after they ended", resyncs, revived)
	}
	// A restore knows no deletions: its indexes are the allocations'.
	w.s = restoreCopy(t, w.s)
	deleted = map[string]uint64{}
	for _, id := range nodes {
		if got, want := w.s.ClientAllocsIndex(nil, id), walk(id); got != want {
			t.Fatalf("restored: node %s kept index %d, a walk %d", id, got, want)
		}
		if got, want := w.s.ClientAllocChangesCount(id), walkListed(id); got != want {
			t.Fatalf("restored: node %s kept count %d, a walk %d", id, got, want)
		}
	}
}
