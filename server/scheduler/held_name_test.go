package scheduler

import (
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// A promoted canary holds the name of the old allocation it was placed
// beside, even while a drain moves it: the old allocation is stopped, and
// no replacement takes the canary's name or one past the group's count.
func TestReplacementAvoidsAHeldName(t *testing.T) {
	h := newHarness(t)
	h.nodes(4, 4000, 8192)
	h.process(h.register(testJob("web", 3, withCanary(1, false))))
	h.settle("web")
	h.process(h.register(testJob("web", 3, withCanary(1, false), withSpec("2"))))
	d := h.latest("web")
	var canary *state.Allocation
	for _, a := range h.live("web") {
		if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
			canary = a
		}
	}
	if canary == nil || canary.Name != "web.web[0]" {
		t.Fatalf("canary %+v", canary)
	}
	h.healthy("web")
	h.promote(d.ID)
	// The canary's node drains before the evaluation of the promotion.
	h.drain(canary.NodeID, canary)
	h.run("web", state.EvalTriggerDeploymentWatcher)
	check := func(when string) {
		t.Helper()
		seen := map[string]string{}
		for _, a := range h.live("web") {
			if prev, dup := seen[a.Name]; dup {
				t.Fatalf("%s: %s and %s both hold %s (live %v)", when, prev, a.ID, a.Name, names(h.live("web")))
			}
			seen[a.Name] = a.ID
			if idx := allocIndex(a.Name); idx < 0 || idx >= 3 {
				t.Fatalf("%s: %s is past the group's count (live %v)", when, a.Name, names(h.live("web")))
			}
		}
	}
	check("after the promotion's evaluation")
	for _, a := range h.allocs("web") {
		if a.JobVersion == 0 && a.Name == canary.Name && a.DesiredStatus != state.AllocDesiredStatusStop {
			t.Fatalf("the old allocation under the canary's name still runs: %+v", a)
		}
	}
	h.settle("web")
	check("settled")
	if live := h.live("web"); len(live) != 3 || countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 1 }) != 3 {
		t.Fatalf("settled: %v", names(live))
	}
}
