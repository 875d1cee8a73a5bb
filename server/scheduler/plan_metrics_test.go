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
	p, queued, got, err := DryRunMetrics(h.store.PointInTime(), e, nil, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Placements) != 3 || queued["web"] != 2 {
		t.Fatalf("placements %d, queued %v", len(p.Placements), queued)
	}
	want := &PlacementMetric{
		NodesEvaluated: 3, NodesFiltered: 1, NodesInPool: 4, NodesAvailable: map[string]int{"dc1": 3},
		// The first placement found node c without the driver; the class
		// is then known ineligible (Nomad's EvalEligibility).
		ConstraintFiltered: map[string]int{"computed class ineligible": 1},
		NodesExhausted:     2, DimensionExhausted: map[string]int{"cpu": 1, "memory": 1},
		CoalescedFailures: 1,
	}
	if len(got) == 1 && got["web"] != nil {
		got["web"].AllocationTime = 0 // a duration: not compared
	}
	if len(got) != 1 || !reflect.DeepEqual(got["web"], want) {
		t.Fatalf("metrics %+v, want %+v", got["web"], want)
	}

	// Everything placed: no failures at all.
	e = h.register(testJob("small", 1))
	if _, _, got, err := DryRunMetrics(h.store.PointInTime(), e, nil, h.now); err != nil || got != nil {
		t.Fatalf("placed job: %v %v", got, err)
	}
}
