package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// gcStats reads the agent's garbage-collector figures from /v1/agent/self:
// the percent, the heap goal, and whether the idle collector runs.
func gcStats(t *testing.T, a *agent) (percent, goal uint64, whenIdle string) {
	t.Helper()
	body, _ := a.must(t, http.MethodGet, "/v1/agent/self", "")
	var self struct {
		Stats map[string]map[string]string `json:"stats"`
	}
	if err := json.Unmarshal([]byte(body), &self); err != nil {
		t.Fatalf("decoding /v1/agent/self: %v", err)
	}
	rt := self.Stats["runtime"]
	percent, err1 := strconv.ParseUint(rt["gc_percent"], 10, 64)
	goal, err2 := strconv.ParseUint(rt["gc_heap_goal_bytes"], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("stats.runtime lacks gc_percent or gc_heap_goal_bytes: %v", rt)
	}
	return percent, goal, rt["gc_when_idle"]
}

// -gc-heap-floor-mb raises the GC percent so the heap goal is at least the
// floor past the live heap; 0 leaves Go's default.
func TestAgentGCHeapFloorFlag(t *testing.T) {
	dev := []string{"agent", "-dev", "-dev-nodes=0", "-http-addr=127.0.0.1:0"}

	a := spawnAgent(t, "floor 64", append(dev, "-gc-heap-floor-mb=64"))
	percent, goal, whenIdle := gcStats(t, a)
	t.Logf("floor 64: gc_percent %d, heap goal %d MiB", percent, goal>>20)
	if percent <= 100 || goal < 64<<20 {
		t.Fatalf("-gc-heap-floor-mb=64: gc_percent %d, heap goal %d MiB; want > 100 and at least 64 MiB", percent, goal>>20)
	}
	if whenIdle != "true" {
		t.Fatalf("by default: gc_when_idle %q, want true (the idle collector runs)", whenIdle)
	}
	a.stop(t)

	a = spawnAgent(t, "floor 0", append(dev, "-gc-heap-floor-mb=0", "-gc-when-idle=false"))
	if percent, goal, whenIdle := gcStats(t, a); percent != 100 || goal >= 64<<20 || whenIdle != "false" {
		t.Fatalf("-gc-heap-floor-mb=0 -gc-when-idle=false: gc_percent %d, heap goal %d MiB, gc_when_idle %q; want Go's default 100, a small goal and no idle collector", percent, goal>>20, whenIdle)
	}
	a.stop(t)

	p := startProc(t, append(dev, "-gc-heap-floor-mb=-1")...)
	if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), "invalid -gc-heap-floor-mb -1: use 0 (off) or more") {
		t.Fatalf("-gc-heap-floor-mb=-1: exit %d, stderr:\n%s", code, p.stderr.String())
	}
}
