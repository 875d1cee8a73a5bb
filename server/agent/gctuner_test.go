package agent_test

import (
	"net/http"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// runtimeStats reads stats.runtime of /v1/agent/self.
func runtimeStats(t *testing.T, ts *servertest.TestServer) (percent, goal uint64) {
	t.Helper()
	var self struct {
		Stats map[string]map[string]string `json:"stats"`
	}
	ts.Do(t, http.MethodGet, "/v1/agent/self", "").JSON(t, &self)
	rt := self.Stats["runtime"]
	percent, err1 := strconv.ParseUint(rt["gc_percent"], 10, 64)
	goal, err2 := strconv.ParseUint(rt["gc_heap_goal_bytes"], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("stats.runtime lacks gc_percent or gc_heap_goal_bytes: %v", rt)
	}
	return percent, goal
}

// The agent runs the GC tuner of Config.GCHeapFloor (the binary's
// -gc-heap-floor-mb) from New to Shutdown, which restores the percent the
// process had; 0 starts none. Not parallel: the GC percent is the process's.
func TestAgentRunsTheGCTuner(t *testing.T) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)

	off := servertest.Start(t)
	if percent, _ := runtimeStats(t, off); percent != uint64(base) {
		t.Fatalf("GCHeapFloor 0: gc_percent %d, want the process's %d", percent, base)
	}

	ts := servertest.Start(t, func(c *server.Config) { c.GCHeapFloor = 64 << 20 })
	percent, goal := runtimeStats(t, ts)
	if percent <= uint64(base) || goal < 64<<20 {
		t.Fatalf("GCHeapFloor 64 MiB: gc_percent %d, heap goal %d MiB; want above %d and at least 64 MiB", percent, goal>>20, base)
	}
	if err := ts.Agent.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if percent, _ := runtimeStats(t, off); percent != uint64(base) {
		t.Fatalf("after Shutdown: gc_percent %d, want the process's %d back", percent, base)
	}
}
