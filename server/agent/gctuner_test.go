package agent_test

import (
	"net/http"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// selfRuntime is stats.runtime of /v1/agent/self.
func selfRuntime(t *testing.T, ts *servertest.TestServer) map[string]string {
	t.Helper()
	var self struct {
		Stats map[string]map[string]string `json:"stats"`
	}
	ts.Do(t, http.MethodGet, "/v1/agent/self", "").JSON(t, &self)
	return self.Stats["runtime"]
}

// runtimeStats reads the GC percent and heap goal of stats.runtime.
func runtimeStats(t *testing.T, ts *servertest.TestServer) (percent, goal uint64) {
	t.Helper()
	rt := selfRuntime(t, ts)
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

var idleGarbage [][]byte

// Config.GCWhenIdle (the binary's -gc-when-idle) runs the idle collector
// from New to Shutdown: garbage past half the heap's headroom and a quiet
// spell make a collection, which /v1/agent/self counts. Not parallel: the
// collector watches the process's CPU and heap.
func TestAgentCollectsWhenIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	idleStats := func(ts *servertest.TestServer) (bool, uint64) {
		t.Helper()
		rt := selfRuntime(t, ts)
		n, err := strconv.ParseUint(rt["gc_idle_collections"], 10, 64)
		if err != nil || (rt["gc_when_idle"] != "true" && rt["gc_when_idle"] != "false") {
			t.Fatalf("stats.runtime lacks gc_when_idle or gc_idle_collections: %v", rt)
		}
		return rt["gc_when_idle"] == "true", n
	}
	off := servertest.Start(t)
	if on, _ := idleStats(off); on {
		t.Fatal("GCWhenIdle false: gc_when_idle true")
	}

	ts := servertest.Start(t, func(c *server.Config) { c.GCWhenIdle = true })
	on, before := idleStats(ts)
	if !on {
		t.Fatal("GCWhenIdle true: gc_when_idle false")
	}
	// Garbage in 64 KiB pieces of which only the last few are kept, 16 MiB
	// at a time between quiet spells, until a spell finds half the heap's
	// headroom used (Go's own collections, made as it grows, reset it).
	deadline := time.Now().Add(30 * time.Second)
	for {
		for range 256 {
			idleGarbage = append(idleGarbage, make([]byte, 64<<10))
			if len(idleGarbage) > 16 {
				idleGarbage = idleGarbage[1:]
			}
		}
		idleGarbage = nil
		time.Sleep(600 * time.Millisecond)
		if _, n := idleStats(ts); n > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no idle collection in 30 s of garbage and quiet spells (%d before)", before)
		}
	}
	if err := ts.Agent.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if on, _ := idleStats(off); on {
		t.Fatal("after Shutdown: gc_when_idle true")
	}
}
