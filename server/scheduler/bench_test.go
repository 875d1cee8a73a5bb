package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// benchSetup is a cluster of 1,000 nodes (4 GHz, 8 GB each) and a
// registered 1,000-allocation job with its pending evaluation.
func benchSetup(b *testing.B) (*harness, string) {
	h := newHarness(b)
	h.noCrossCheck = true
	for i := range 1000 {
		h.node(fmt.Sprintf("node-%d", i), "dc1", 4000, 8192)
	}
	e := h.register(testJob("big", 1000))
	return h, e.ID
}

// BenchmarkPlan1000x1000 measures computing the plan alone (reconcile,
// feasibility and bin-packing of 1,000 placements over 1,000 nodes).
func BenchmarkPlan1000x1000(b *testing.B) {
	h, id := benchSetup(b)
	snap, e := h.store.PointInTime(), h.eval(id)
	b.ResetTimer()
	for b.Loop() {
		res, err := compute(snap, e, nil, time.Now())
		if err != nil || len(res.plan.Placements) != 1000 {
			b.Fatalf("%v, %d placements", err, len(res.plan.Placements))
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "placements/s")
}

// BenchmarkProcess1000x1000 measures a whole evaluation: plan, apply to the
// real state store, mark the evaluation complete.
func BenchmarkProcess1000x1000(b *testing.B) {
	for range b.N {
		b.StopTimer()
		h, id := benchSetup(b)
		e := h.eval(id)
		b.StartTimer()
		e = h.process(e)
		b.StopTimer()
		if len(h.live("big")) != 1000 || e.Status != "complete" {
			b.Fatalf("eval %s, %d live", e.Status, len(h.live("big")))
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "placements/s")
}

// BenchmarkPlanLimited1000x1000 is BenchmarkPlan1000x1000 with limited
// placement (Nomad's LimitIterator: ⌈log2 1000⌉ = 10 nodes scored per
// placement, not 1,000).
func BenchmarkPlanLimited1000x1000(b *testing.B) {
	h, id := benchSetup(b)
	snap, e := h.store.PointInTime(), h.eval(id)
	b.ResetTimer()
	for b.Loop() {
		res, err := computeWith(snap, e, nil, time.Now(), true)
		if err != nil || len(res.plan.Placements) != 1000 {
			b.Fatalf("%v, %d placements", err, len(res.plan.Placements))
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "placements/s")
}
