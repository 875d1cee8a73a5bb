package telemetry

import (
	"testing"
	"time"
)

// The JSON summary shows a route's last complete 10 s interval, the current
// one while there is none, and nothing once the route has been idle for two
// intervals, as the in-memory sink does for the other metrics.
func TestRequestSamplesIntervals(t *testing.T) {
	route := "/test/" + t.Name()
	find := func(now time.Time) (count int, max float64) {
		for _, s := range requestSamples(now) {
			if s.DisplayLabels["route"] == route {
				return s.Count, s.Max
			}
		}
		return 0, 0
	}
	ObserveRequest("GET", route, 200, 3*time.Millisecond)
	ObserveRequest("GET", route, 200, 5*time.Millisecond)
	now := time.Now()
	if n, max := find(now); n != 2 || max != 5 {
		t.Fatalf("current interval: count %d max %v, want 2 and 5", n, max)
	}
	if n, _ := find(now.Add(requestInterval)); n != 2 {
		t.Fatalf("next interval: count %d, want the 2 of the interval before", n)
	}
	if n, _ := find(now.Add(2 * requestInterval)); n != 0 {
		t.Fatalf("two intervals later: count %d, want none", n)
	}
}
