package scheduler

import (
	"reflect"
	"testing"
)

// TestFailedPlacements: a dry run that cannot place everything explains
// why, per group: nodes of the job's datacenters evaluated, those without
// the drivers filtered, those without room exhausted by dimension, with
// the plan's own placements counted.
func TestFailedPlacements(t *testing.T) {
	h := newHarness(t)
	h.node("a", "dc1", 250, 0)           // room for two of the job's 100 MHz allocations
	h.node("b", "dc1", 1000, 100)        // 64 MB each: room for one
	h.node("c", "dc1", 0, 0, "raw_exec") // no mock_driver
	h.node("d", "dc2", 0, 0)             // another datacenter: not evaluated
	e := h.register(testJob("web", 5, withMaxParallel(5)))
	p, queued, err := DryRun(h.store.PointInTime(), e, nil, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Placements) != 3 || queued["web"] != 2 {
		t.Fatalf("placements %d, queued %v", len(p.Placements), queued)
	}
	got, err := FailedPlacements(h.store.PointInTime(), h.job("web"), p, queued)
	if err != nil {
		t.Fatal(err)
	}
	want := &PlacementMetric{
		NodesEvaluated: 3, NodesFiltered: 1, NodesAvailable: map[string]int{"dc1": 3},
		ConstraintFiltered: map[string]int{"missing drivers": 1},
		NodesExhausted:     2, DimensionExhausted: map[string]int{"cpu": 1, "memory": 1},
		CoalescedFailures: 1,
	}
	if len(got) != 1 || !reflect.DeepEqual(got["web"], want) {
		t.Fatalf("metrics %+v, want %+v", got["web"], want)
	}

	// Everything placed: no failures at all.
	e = h.register(testJob("small", 1))
	p, queued, err = DryRun(h.store.PointInTime(), e, nil, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := FailedPlacements(h.store.PointInTime(), h.job("small"), p, queued); err != nil || got != nil {
		t.Fatalf("placed job: %v %v", got, err)
	}
}
