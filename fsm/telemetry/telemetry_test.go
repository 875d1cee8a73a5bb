package telemetry

import (
	"testing"
	"time"
)

// The JSON summary shows a label set's last complete 10 s interval, the
// current one while there is none, and nothing once it has been idle for
// two intervals, as the in-memory sink does for the other metrics.
func TestTimerIntervals(t *testing.T) {
	timer := NewTimer("ctlplane.test.intervals", "test", "route", "status")
	find := func(now time.Time) (count int, max float64, labels map[string]string) {
		for _, s := range timerSamples(now) {
			if s.Name == "ctlplane.test.intervals" {
				return s.Count, s.Max, s.DisplayLabels
			}
		}
		return 0, 0, nil
	}
	timer.Observe(3*time.Millisecond, "/r", "200")
	timer.Observe(5*time.Millisecond, "/r", "200")
	now := time.Now()
	if n, max, labels := find(now); n != 2 || max != 5 || labels["route"] != "/r" || labels["status"] != "200" {
		t.Fatalf("current interval: count %d max %v labels %v, want 2, 5, route /r status 200", n, max, labels)
	}
	if n, _, _ := find(now.Add(timerInterval)); n != 2 {
		t.Fatalf("next interval: count %d, want the 2 of the interval before", n)
	}
	if n, _, _ := find(now.Add(2 * timerInterval)); n != 0 {
		t.Fatalf("two intervals later: count %d, want none", n)
	}
}
