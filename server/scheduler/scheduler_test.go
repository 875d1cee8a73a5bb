package scheduler

import (
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

func TestFirstDeployPlacesCountAndCreatesDeployment(t *testing.T) {
	h := newHarness(t)
	h.nodes(3, 0, 0)
	e := h.process(h.register(testJob("web", 3)))

	d := h.latest("web")
	if d == nil {
		t.Fatal("no deployment created")
	}
	if e.Status != state.EvalStatusComplete || e.DeploymentID != d.ID || !reflect.DeepEqual(e.QueuedAllocations, map[string]int{"web": 0}) {
		t.Fatalf("eval: %+v", e)
	}
	live := h.live("web")
	if got, want := names(live), []string{"web.web[0]", "web.web[1]", "web.web[2]"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	nodes := map[string]bool{}
	for _, a := range live {
		if a.JobVersion != 0 || a.DeploymentID != d.ID || a.EvalID != e.ID || a.NodeName == "" || a.Namespace != "default" ||
			a.DesiredStatus != state.AllocDesiredStatusRun || a.ClientStatus != state.AllocClientStatusPending ||
			a.DeploymentStatus != nil || a.PreviousAllocation != "" || a.Resources != (state.Resources{CPU: 100, MemoryMB: 64}) {
			t.Fatalf("alloc %+v", a)
		}
		nodes[a.NodeID] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("allocs on %d nodes, want 3 (ties go to the node with fewest allocs of the job)", len(nodes))
	}
	g := d.TaskGroups["web"]
	if d.Status != state.DeploymentStatusRunning || d.StatusDescription != state.DeploymentStatusDescriptionRunning ||
		d.JobVersion != 0 || d.EvalPriority != 50 || d.JobCreateIndex != h.job("web").CreateIndex || len(d.TaskGroups) != 1 ||
		g.DesiredTotal != 3 || g.PlacedAllocs != 3 || g.DesiredCanaries != 0 || g.ProgressDeadline == 0 || g.RequireProgressBy == nil {
		t.Fatalf("deployment %+v, group %+v", d, g)
	}

	// Not healthy yet: a second evaluation changes nothing.
	plans := len(h.plans)
	if e := h.run("web", state.EvalTriggerDeploymentWatcher); e.Status != state.EvalStatusComplete || len(h.plans) != plans {
		t.Fatalf("second eval %+v, %d plans", e, len(h.plans)-plans)
	}
	h.settle("web")
	d = h.latest("web")
	if d.Status != state.DeploymentStatusSuccessful || d.StatusDescription != state.DeploymentStatusDescriptionSuccessful {
		t.Fatalf("deployment %s %q", d.Status, d.StatusDescription)
	}
	if !h.job("web").Stable {
		t.Fatal("job version not marked stable")
	}
	// A settled job gives a no-op plan, which is not submitted.
	plans = len(h.plans)
	if e := h.run("web", state.EvalTriggerJobRegister); e.Status != state.EvalStatusComplete || len(h.plans) != plans {
		t.Fatalf("noop eval %+v submitted %d plans", e, len(h.plans)-plans)
	}
}

func TestRollingUpdateMaxParallelBatches(t *testing.T) {
	for _, tc := range []struct{ maxParallel, batches int }{{1, 4}, {2, 2}, {3, 2}, {4, 1}} {
		h := newHarness(t)
		h.nodes(4, 0, 0)
		h.process(h.register(testJob("web", 4, withMaxParallel(tc.maxParallel))))
		h.settle("web")
		first := h.latest("web")

		h.process(h.register(testJob("web", 4, withMaxParallel(tc.maxParallel), withSpec("2"))))
		d := h.latest("web")
		if d.ID == first.ID || d.JobVersion != 1 || d.TaskGroups["web"].DesiredTotal != 4 {
			t.Fatalf("mp=%d: deployment %+v", tc.maxParallel, d)
		}
		batches := 0
		for round := 0; round < 10 && h.latest("web").Status == state.DeploymentStatusRunning; round++ {
			live := h.live("web")
			if len(live) != 4 {
				t.Fatalf("mp=%d: %d live allocs", tc.maxParallel, len(live))
			}
			fresh := countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 1 && !a.DeploymentStatus.IsHealthy() })
			if fresh > tc.maxParallel {
				t.Fatalf("mp=%d: %d replacements in flight", tc.maxParallel, fresh)
			}
			if fresh > 0 {
				batches++
			}
			h.healthy("web")
			h.run("web", state.EvalTriggerDeploymentWatcher)
		}
		if batches != tc.batches {
			t.Fatalf("mp=%d: %d batches, want %d", tc.maxParallel, batches, tc.batches)
		}
		if d := h.latest("web"); d.Status != state.DeploymentStatusSuccessful {
			t.Fatalf("mp=%d: deployment %s", tc.maxParallel, d.Status)
		}
		for _, a := range h.allocs("web") {
			if a.JobVersion == 0 && (a.DesiredStatus != state.AllocDesiredStatusStop || a.DesiredDescription != allocUpdating || a.NextAllocation == "") {
				t.Fatalf("mp=%d: old alloc %+v", tc.maxParallel, a)
			}
			if a.JobVersion == 1 && (a.PreviousAllocation == "" || a.DeploymentID != d.ID) {
				t.Fatalf("mp=%d: new alloc %+v", tc.maxParallel, a)
			}
		}
		if got := names(h.live("web")); !reflect.DeepEqual(got, []string{"web.web[0]", "web.web[1]", "web.web[2]", "web.web[3]"}) {
			t.Fatalf("mp=%d: names %v", tc.maxParallel, got)
		}
	}
}

func TestCanariesThenPromote(t *testing.T) {
	for _, auto := range []bool{false, true} {
		h := newHarness(t)
		h.nodes(3, 0, 0)
		h.process(h.register(testJob("web", 3, withCanary(1, auto))))
		h.settle("web")

		h.process(h.register(testJob("web", 3, withCanary(1, auto), withSpec("2"))))
		d := h.latest("web")
		want := state.DeploymentStatusDescriptionRunningNeedsPromotion
		if auto {
			want = state.DeploymentStatusDescriptionRunningAutoPromotion
		}
		if d.StatusDescription != want || d.TaskGroups["web"].DesiredCanaries != 1 || d.TaskGroups["web"].DesiredTotal != 3 {
			t.Fatalf("deployment %+v %+v", d, d.TaskGroups["web"])
		}
		canaries := countBy(h.live("web"), func(a *state.Allocation) bool { return a.DeploymentStatus != nil && a.DeploymentStatus.Canary })
		if live := h.live("web"); len(live) != 4 || canaries != 1 {
			t.Fatalf("%d live, %d canaries; want 4 and 1", len(live), canaries)
		}
		for _, a := range h.allocs("web") {
			if a.DeploymentStatus != nil && a.DeploymentStatus.Canary && (a.Name != "web.web[0]" || a.PreviousAllocation != "" || a.JobVersion != 1) {
				t.Fatalf("canary %+v", a)
			}
		}
		// A healthy canary is not enough: nothing else moves before promotion.
		h.healthy("web")
		plans := len(h.plans)
		h.run("web", state.EvalTriggerDeploymentWatcher)
		if len(h.plans) != plans || h.latest("web").Status != state.DeploymentStatusRunning {
			t.Fatalf("unpromoted: %d plans, deployment %s", len(h.plans)-plans, h.latest("web").Status)
		}
		h.promote(d.ID)
		h.run("web", state.EvalTriggerDeploymentWatcher)
		live := h.live("web")
		if len(live) != 3 || countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 1 }) != 2 {
			t.Fatalf("after promotion: %d live, names %v", len(live), names(live))
		}
		h.settle("web")
		if d := h.latest("web"); d.Status != state.DeploymentStatusSuccessful {
			t.Fatalf("deployment %s", d.Status)
		}
		live = h.live("web")
		if got := names(live); len(live) != 3 || countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 1 }) != 3 ||
			!reflect.DeepEqual(got, []string{"web.web[0]", "web.web[1]", "web.web[2]"}) {
			t.Fatalf("final %v", got)
		}
	}
}

// startRollout deploys v0 of a 3-alloc job, then registers a destructive v1
// and processes it: one replacement is in flight.
func startRollout(t *testing.T, opts ...jobOpt) (*harness, *state.Deployment) {
	h := newHarness(t)
	h.nodes(3, 0, 0)
	h.process(h.register(testJob("web", 3, opts...)))
	h.settle("web")
	h.process(h.register(testJob("web", 3, append(opts, withSpec("2"))...)))
	if n := countBy(h.live("web"), func(a *state.Allocation) bool { return a.JobVersion == 1 }); n != 1 {
		t.Fatalf("%d replacements in flight, want 1", n)
	}
	return h, h.latest("web")
}

func TestPausedOrFailedDeploymentPlacesNothing(t *testing.T) {
	for _, tc := range []struct{ status, desc string }{
		{state.DeploymentStatusPaused, state.DeploymentStatusDescriptionPaused},
		{state.DeploymentStatusFailed, state.DeploymentStatusDescriptionFailedByUser},
	} {
		h, d := startRollout(t)
		h.setDeployment(d.ID, tc.status, tc.desc)
		h.healthy("web")
		// A lost allocation is not replaced either: the scheduler (not the
		// FSM) only marks it lost and stops it.
		h.nodeDown(h.live("web")[0].NodeID)
		plans := len(h.plans)
		e := h.run("web", state.EvalTriggerDeploymentWatcher)
		if len(h.plans) != plans+1 || e.Status != state.EvalStatusComplete {
			t.Fatalf("%s: %d plans, eval %s", tc.status, len(h.plans)-plans, e.Status)
		}
		if p := h.plans[plans]; len(p.Placements) != 0 || len(p.Stops) != 1 || p.Stops[0].ClientStatus != state.AllocClientStatusLost {
			t.Fatalf("%s: plan %d placements, stops %+v", tc.status, len(p.Placements), p.Stops)
		}
		if tc.status == state.DeploymentStatusPaused {
			// Resumed, it carries on: the lost one is replaced and the rollout goes on.
			h.setDeployment(d.ID, state.DeploymentStatusRunning, state.DeploymentStatusDescriptionRunning)
			h.node("spare", "dc1", 0, 0)
			h.settle("web")
			if got := h.latest("web"); got.ID != d.ID || got.Status != state.DeploymentStatusSuccessful {
				t.Fatalf("after resume: %+v", got)
			}
		} else {
			// A revert registers v0's spec again as v2: its own deployment,
			// the v0 allocations updated in place, the v1 one replaced.
			h.process(h.register(testJob("web", 3)))
			nd := h.latest("web")
			if nd.ID == d.ID || nd.JobVersion != 2 || nd.Status != state.DeploymentStatusRunning {
				t.Fatalf("revert deployment %+v", nd)
			}
			h.node("spare", "dc1", 0, 0)
			h.settle("web")
			if got := h.latest("web"); got.ID != nd.ID || got.Status != state.DeploymentStatusSuccessful {
				t.Fatalf("after revert: %+v", got)
			}
		}
		live := h.live("web")
		if len(live) != 3 || countBy(live, func(a *state.Allocation) bool { return a.JobVersion == h.job("web").Version }) != 3 {
			t.Fatalf("%s: final live %v", tc.status, names(live))
		}
	}
}

func TestLostAllocReplaced(t *testing.T) {
	h := newHarness(t)
	h.nodes(3, 0, 0)
	h.process(h.register(testJob("web", 3)))
	h.settle("web")
	lost := h.live("web")[1]
	h.nodeDown(lost.NodeID)
	h.run("web", state.EvalTriggerNodeUpdate)
	live := h.live("web")
	if len(live) != 3 {
		t.Fatalf("%d live", len(live))
	}
	var repl *state.Allocation
	for _, a := range live {
		if a.PreviousAllocation == lost.ID {
			repl = a
		}
	}
	if repl == nil || repl.Name != lost.Name || repl.NodeID == lost.NodeID || repl.DeploymentID != "" {
		t.Fatalf("replacement %+v of %s", repl, lost.Name)
	}
	_, old, _ := h.store.Alloc(nil, lost.ID)
	if old.NextAllocation != repl.ID || old.ClientStatus != state.AllocClientStatusLost {
		t.Fatalf("lost alloc %+v", old)
	}
}

func TestScaleInPlace(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	h.process(h.register(testJob("web", 2)))
	h.settle("web")
	before := h.live("web")

	h.process(h.register(testJob("web", 4)))
	p := h.plans[len(h.plans)-1]
	d := h.latest("web")
	if len(p.InPlace) != 2 || len(p.Stops) != 0 || len(p.Placements) != 2 || p.Deployment == nil || d.TaskGroups["web"].DesiredTotal != 4 {
		t.Fatalf("scale-up plan: %d in place, %d stops, %d placements, deployment %v", len(p.InPlace), len(p.Stops), len(p.Placements), p.Deployment)
	}
	for _, ip := range p.InPlace {
		if ip.JobVersion != 1 || ip.DeploymentID != d.ID {
			t.Fatalf("in place %+v", ip)
		}
	}
	if got := names(p.Placements); !reflect.DeepEqual(got, []string{"web.web[2]", "web.web[3]"}) {
		t.Fatalf("placed %v", got)
	}
	h.settle("web")
	if d := h.latest("web"); d.Status != state.DeploymentStatusSuccessful {
		t.Fatalf("deployment %s", d.Status)
	}
	for _, b := range before {
		if _, a, _ := h.store.Alloc(nil, b.ID); a.TerminalStatus() || a.JobVersion != 1 {
			t.Fatalf("in-place alloc %+v", a)
		}
	}

	// Scale down: the highest indexes stop, the rest are updated in place.
	h.process(h.register(testJob("web", 1)))
	p = h.plans[len(h.plans)-1]
	var stopped []string
	for _, s := range p.Stops {
		_, a, _ := h.store.Alloc(nil, s.AllocID)
		stopped = append(stopped, a.Name)
		if s.DesiredDescription != allocNotNeeded {
			t.Fatalf("stop %+v", s)
		}
	}
	if !reflect.DeepEqual(stopped, []string{"web.web[3]", "web.web[2]", "web.web[1]"}) || len(p.InPlace) != 1 {
		t.Fatalf("scale-down stopped %v, %d in place", stopped, len(p.InPlace))
	}
}

func TestStopJob(t *testing.T) {
	for _, purge := range []bool{false, true} {
		h, d := startRollout(t)
		purgeEval := ""
		if purge {
			e := h.newEval("web", state.EvalTriggerJobDeregister)
			purgeEval = e.ID
			if err := h.store.JobPurge(h.next(), "default", "web", e); err != nil {
				t.Fatal(err)
			}
			h.process(h.eval(e.ID))
		} else {
			j := testJob("web", 3, withSpec("2"))
			j.Stop = true
			h.process(h.register(j))
		}
		if live := h.live("web"); len(live) != 0 {
			t.Fatalf("purge=%v: %d live", purge, len(live))
		}
		for _, dd := range h.deployments("web") {
			if dd.ID == d.ID && (dd.Status != state.DeploymentStatusCancelled || dd.StatusDescription != state.DeploymentStatusDescriptionStoppedJob) {
				t.Fatalf("purge=%v: deployment %s %q", purge, dd.Status, dd.StatusDescription)
			}
		}
		// A purge stops the allocations and cancels the deployment in its
		// own entry; the scheduler then has nothing left to do (a plan it
		// makes anyway is for the job that is gone: JobModifyIndex 0).
		if p := h.plans[len(h.plans)-1]; purge && p.JobModifyIndex != 0 && p.EvalID == purgeEval {
			t.Fatalf("purged job's plan has JobModifyIndex %d", p.JobModifyIndex)
		}
	}
}

func TestNewVersionCancelsOldDeployment(t *testing.T) {
	h, d := startRollout(t)
	h.process(h.register(testJob("web", 3, withSpec("3"))))
	_, old, _ := h.store.Deployment(nil, d.ID)
	if old.Status != state.DeploymentStatusCancelled || old.StatusDescription != state.DeploymentStatusDescriptionNewerJob {
		t.Fatalf("old deployment %s %q", old.Status, old.StatusDescription)
	}
	if nd := h.latest("web"); nd.JobVersion != 2 || nd.Status != state.DeploymentStatusRunning {
		t.Fatalf("new deployment %+v", nd)
	}
	h.settle("web")
	if live := h.live("web"); len(live) != 3 || countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 2 }) != 3 {
		t.Fatalf("live %v", names(live))
	}
}

func TestGroupRemovedAndNoUpdateStrategy(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	two := func(j *state.Job) {
		g := *j.TaskGroups[0]
		g.Name = "api"
		j.TaskGroups = append(j.TaskGroups, &g)
	}
	h.process(h.register(testJob("web", 2, withNoUpdate(), two)))
	if len(h.live("web")) != 4 || len(h.deployments("web")) != 0 {
		t.Fatalf("%d live, %d deployments", len(h.live("web")), len(h.deployments("web")))
	}
	// Without an update strategy a destructive change replaces everything at once.
	h.process(h.register(testJob("web", 2, withNoUpdate(), withSpec("2"))))
	live := h.live("web")
	if got := names(live); !reflect.DeepEqual(got, []string{"web.web[0]", "web.web[1]"}) ||
		countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 1 }) != 2 {
		t.Fatalf("live %v", got)
	}
}

func TestMultiregionDeploymentEndsBlocked(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	mr := func(j *state.Job) {
		j.Multiregion = &state.Multiregion{Regions: []*state.MultiregionRegion{{Name: "east"}, {Name: "west"}}}
	}
	h.process(h.register(testJob("web", 2, mr)))
	if d := h.latest("web"); !d.IsMultiregion {
		t.Fatalf("deployment %+v", d)
	}
	h.settle("web")
	d := h.latest("web")
	if d.Status != state.DeploymentStatusBlocked || d.StatusDescription != state.DeploymentStatusDescriptionBlocked {
		t.Fatalf("deployment %s %q", d.Status, d.StatusDescription)
	}
}
