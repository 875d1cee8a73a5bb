package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// With limited placement a large group over many nodes scores a few nodes
// per placement, going
// on where the last one stopped in the evaluation's order: 1,000
// allocations land on (nearly) 1,000 distinct nodes, and computing the
// same evaluation again places every allocation on the same node.
func TestLimitedPlacementSpreadsAndIsDeterministic(t *testing.T) {
	h := newHarness(t)
	h.limited = true
	for i := range 1000 {
		h.node(fmt.Sprintf("node-%d", i), "dc1", 4000, 8192)
	}
	e := h.register(testJob("big", 1000))
	snap := h.store.PointInTime()
	first, err := compute(snap, e, h, time.Now())
	if err != nil || len(first.plan.Placements) != 1000 {
		t.Fatalf("%v, %d placements", err, len(first.plan.Placements))
	}
	perNode := map[string]int{}
	for _, a := range first.plan.Placements {
		perNode[a.NodeID]++
		// ⌈log2 1000⌉ = 10 nodes scored; the metric keeps the best 5.
		if m := a.Metrics; m == nil || len(m.ScoreMetaData) != maxScoreMeta || m.ScoreMetaData[0].NodeID != a.NodeID {
			t.Fatalf("alloc %s metric %+v", a.Name, m)
		}
	}
	if len(perNode) < 990 {
		t.Errorf("1,000 allocations on %d nodes, want them spread (at least 990)", len(perNode))
	}
	again, err := compute(snap, e, h, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string]string{}
	for _, a := range first.plan.Placements {
		placed[a.Name] = a.NodeID
	}
	for _, a := range again.plan.Placements {
		if placed[a.Name] != a.NodeID {
			t.Fatalf("%s placed on %s, then on %s: the evaluation's order is not its own", a.Name, placed[a.Name], a.NodeID)
		}
	}
	// Another evaluation orders the nodes otherwise.
	other := *e
	other.ID = "00000000-0000-0000-0000-000000000001"
	third, err := compute(snap, &other, h, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for _, a := range third.plan.Placements {
		if placed[a.Name] == a.NodeID {
			same++
		}
	}
	if same > 100 {
		t.Errorf("another evaluation placed %d of 1,000 allocations on the same nodes", same)
	}
}
