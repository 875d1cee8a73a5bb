package usage

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

func listIDs(nodes []*state.Node) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// The node list is read once per nodes index and shared: the same list
// while no node changes, a new one once a node goes down or comes, its own
// list for a state older than the one kept, a new one for another store.
func TestNodeListSharedUntilANodeChanges(t *testing.T) {
	s := state.NewStore()
	register := func(idx uint64, i int, status string) {
		t.Helper()
		n := &state.Node{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", 10-i), Name: fmt.Sprintf("n%d", i), Status: status,
			SchedulingEligibility: state.NodeSchedulingEligible, Resources: state.Resources{CPU: 1000, MemoryMB: 1000}}
		if err := s.NodeRegister(idx, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		register(uint64(i+1), i, state.NodeStatusReady)
	}
	var v View
	old := s.PointInTime()
	first, err := v.NodeList(old)
	if err != nil {
		t.Fatal(err)
	}
	// Ready nodes in ID order (n3 has the lowest ID), positions to match.
	if got := listIDs(first.Ready); !reflect.DeepEqual(got, []string{"n3", "n2", "n1"}) {
		t.Fatalf("ready %v", got)
	}
	for i, n := range first.Ready {
		if first.Pos[n.ID] != i || first.ByID[n.ID] != n {
			t.Fatalf("node %s: pos %d, want %d", n.Name, first.Pos[n.ID], i)
		}
	}
	// Allocations and jobs do not move the nodes index.
	if _, err := s.JobRegister(10, &state.Job{ID: "web", Namespace: "default", Type: state.JobTypeService,
		TaskGroups: []*state.TaskGroup{{Name: "g", Count: 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	again, err := v.NodeList(s.PointInTime())
	if err != nil || again != first {
		t.Fatalf("same nodes index: a new list (%v)", err)
	}

	// n2 goes down: not ready any more, still known.
	register(11, 2, state.NodeStatusDown)
	down, err := v.NodeList(s.PointInTime())
	if err != nil || down == first {
		t.Fatalf("a node changed: the old list (%v)", err)
	}
	if got := listIDs(down.Ready); !reflect.DeepEqual(got, []string{"n3", "n1"}) || down.ByID[first.Ready[1].ID] == nil || down.Index != 11 {
		t.Fatalf("after n2 went down: ready %v, index %d", got, down.Index)
	}
	if _, ok := down.Pos[first.Ready[1].ID]; ok {
		t.Fatal("a down node has a place among the ready ones")
	}

	// A worker still on the old state gets that state's nodes, and the
	// newer list stays the one kept.
	stale, err := v.NodeList(old)
	if err != nil || len(stale.Ready) != 3 {
		t.Fatalf("old state: %v (%v)", listIDs(stale.Ready), err)
	}
	if kept, _ := v.NodeList(s.PointInTime()); kept != down {
		t.Fatal("an older state replaced the newer list")
	}

	// Another store (a restore) at the same index: its own nodes.
	other := state.NewStore()
	if err := other.NodeRegister(11, &state.Node{ID: "00000000-0000-4000-8000-0000000000ff", Name: "x", Status: state.NodeStatusReady,
		Resources: state.Resources{CPU: 1, MemoryMB: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	if l, err := v.NodeList(other.PointInTime()); err != nil || !reflect.DeepEqual(listIDs(l.Ready), []string{"x"}) {
		t.Fatalf("another store: %v (%v)", listIDs(l.Ready), err)
	}
}
