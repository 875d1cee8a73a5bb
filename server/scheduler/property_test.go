package scheduler

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// TestRolloutInvariantsProperty drives one job through random sequences of
// registrations, scaling, pauses, failures (with and without revert), node
// losses, allocation failures, health reports and promotions, and checks
// after every applied plan that:
//   - no more than MaxParallel destructive replacements of the current
//     deployment are in flight (placed and not yet healthy) per group;
//   - once a deployment has succeeded, a plan that stops allocations for an
//     update leaves at least Count − MaxParallel healthy-or-old allocations;
//   - a group never runs more than Count + Canary allocations;
//
// and that, once the chaos stops, the job converges: a successful
// deployment, Count allocations of the current version with unique names.
func TestRolloutInvariantsProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	// SCHED_PROPERTY_SEEDS=n runs more (or fewer) random histories.
	if n, err := strconv.Atoi(os.Getenv("SCHED_PROPERTY_SEEDS")); err == nil {
		seeds = n
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProperty(t, seed, 150, false) })
	}
	// The same histories placed by Nomad's limited stack.
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint("limited-", seed), func(t *testing.T) { runProperty(t, seed, 150, true) })
	}
}

type propJob struct {
	spec, count, maxParallel, canary int
	auto                             bool
	// mcd: the group has max_client_disconnect (nodes may disconnect).
	mcd bool
	// killTimeout changes make in-place versions.
	killTimeout time.Duration
}

func (p propJob) job() *state.Job {
	opts := []jobOpt{withMaxParallel(p.maxParallel), withCanary(p.canary, p.auto), withSpec(fmt.Sprint(p.spec)),
		func(j *state.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = p.killTimeout }}
	if p.mcd {
		opts = append(opts, withMaxClientDisconnect(time.Minute))
	}
	return testJob("web", p.count, opts...)
}

// reachable are the live allocations whose client can report (not unknown:
// their node is cut off).
func reachable(as []*state.Allocation) []*state.Allocation {
	var out []*state.Allocation
	for _, a := range as {
		if a.ClientStatus != state.AllocClientStatusUnknown {
			out = append(out, a)
		}
	}
	return out
}

// reconnect brings a disconnected node back: ready, its node-update
// evaluation, its client's report of what it still runs, the reconnect
// evaluation.
func (h *harness) reconnect(nodeID string) {
	h.nodeStatus(nodeID, state.NodeStatusReady)
	h.run("web", state.EvalTriggerNodeUpdate)
	var back []*state.Allocation
	for _, a := range h.live("web") {
		if a.NodeID == nodeID && a.ClientStatus == state.AllocClientStatusUnknown {
			back = append(back, a)
		}
	}
	if len(back) > 0 {
		h.report(back, state.AllocClientStatusRunning, nil)
		h.run("web", state.EvalTriggerReconnect)
	}
}

func runProperty(t *testing.T, seed int64, steps int, limited bool) {
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t)
	h.limited = limited
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after steps %v: %s\n%s", seed, log, fmt.Sprintf(format, args...), dump(h))
	}
	h.afterApply = func(h *harness, p *state.Plan, before *state.Store) { checkInvariants(h, p, before, fail) }
	for i := range 5 {
		h.node(fmt.Sprintf("n%d", i), "dc1", 500, 0)
	}
	pj := propJob{count: 3, maxParallel: 1 + rng.Intn(3), canary: rng.Intn(2), auto: rng.Intn(2) == 0, mcd: seed%2 == 0}
	h.process(h.register(pj.job()))
	away := map[string]bool{} // disconnected nodes

	for step := 0; step < steps; step++ {
		d := h.latest("web")
		switch k := rng.Intn(10); {
		case k == 0: // a new, destructive version, maybe with other settings
			pj.spec++
			if rng.Intn(3) == 0 {
				pj.count = 1 + rng.Intn(6)
				pj.maxParallel = 1 + rng.Intn(3)
				pj.canary = rng.Intn(3)
				pj.auto = rng.Intn(2) == 0
			}
			log = append(log, fmt.Sprintf("register spec=%d count=%d mp=%d canary=%d", pj.spec, pj.count, pj.maxParallel, pj.canary))
			h.process(h.register(pj.job()))
		case k == 1: // scale only
			pj.count = 1 + rng.Intn(6)
			log = append(log, fmt.Sprintf("scale %d", pj.count))
			h.process(h.register(pj.job()))
		case k == 2 && d != nil && d.Status == state.DeploymentStatusRunning:
			log = append(log, "pause")
			h.setDeployment(d.ID, state.DeploymentStatusPaused, state.DeploymentStatusDescriptionPaused)
		case k == 2 && d != nil && d.Status == state.DeploymentStatusPaused:
			log = append(log, "resume")
			h.setDeployment(d.ID, state.DeploymentStatusRunning, state.DeploymentStatusDescriptionRunning)
			h.run("web", state.EvalTriggerDeploymentWatcher)
		case k == 3 && d != nil && d.Active():
			// An unhealthy allocation fails the deployment; half the time
			// the stable version is registered again (auto-revert).
			for _, a := range h.live("web") {
				if a.DeploymentID == d.ID && a.DeploymentStatus == nil {
					h.report([]*state.Allocation{a}, state.AllocClientStatusRunning, no)
					break
				}
			}
			h.setDeployment(d.ID, state.DeploymentStatusFailed, state.DeploymentStatusDescriptionFailedAllocations)
			log = append(log, "fail")
			if stable, _ := h.store.LatestStableJob(nil, "default", "web"); stable != nil && rng.Intn(2) == 0 {
				log = append(log, fmt.Sprintf("revert to v%d", stable.Version))
				pj.count = stable.TaskGroups[0].Count
				pj.maxParallel = stable.TaskGroups[0].Update.MaxParallel
				h.process(h.register(stable.Copy()))
			}
		case k == 4 && rng.Intn(3) == 0: // an operator drains a node (the drainer marks what runs there); a new one joins
			live := reachable(h.live("web"))
			if len(live) == 0 {
				continue
			}
			victim := live[rng.Intn(len(live))].NodeID
			if _, n, _ := h.store.Node(nil, victim); n == nil || n.Status != state.NodeStatusReady || n.DrainStrategy != nil {
				continue
			}
			// As the drainer (Nomad's handleTaskGroup): at most healthy −
			// (Count − MaxParallel) at a time.
			healthy := 0
			for _, a := range live {
				if a.DeploymentStatus.IsHealthy() && !a.DesiredTransition.ShouldMigrate() {
					healthy++
				}
			}
			room := healthy - (pj.count - pj.maxParallel)
			var marked []*state.Allocation
			for _, a := range live {
				if a.NodeID == victim && len(marked) < room && !a.DesiredTransition.ShouldMigrate() {
					marked = append(marked, a)
				}
			}
			if len(marked) == 0 {
				continue
			}
			log = append(log, fmt.Sprintf("drain %d", len(marked)))
			h.node(fmt.Sprintf("n%d", 100+step), "dc1", 500, 0)
			h.drain(victim, marked...)
			h.run("web", state.EvalTriggerNodeDrain)
		case k == 4: // a node dies; a new one joins
			live := h.live("web")
			if len(live) == 0 {
				continue
			}
			victim := live[rng.Intn(len(live))].NodeID
			log = append(log, "node down")
			h.nodeDown(victim)
			h.node(fmt.Sprintf("n%d", 100+step), "dc1", 500, 0)
			h.run("web", state.EvalTriggerNodeUpdate)
		case k == 5 && d != nil && d.RequiresPromotion():
			lookup := func(id string) *state.Allocation { _, a, _ := h.store.Alloc(nil, id); return a }
			if len(state.PromotionErrors(d, lookup, true, nil)) == 0 {
				log = append(log, "promote")
				h.promote(d.ID)
				h.run("web", state.EvalTriggerDeploymentWatcher)
			}
		case k == 7 && pj.mcd && rng.Intn(2) == 0: // a node disconnects
			live := reachable(h.live("web"))
			if len(live) == 0 {
				continue
			}
			victim := live[rng.Intn(len(live))].NodeID
			if _, n, _ := h.store.Node(nil, victim); n == nil || n.Status != state.NodeStatusReady {
				continue
			}
			log = append(log, "node disconnected")
			away[victim] = true
			h.nodeStatus(victim, state.NodeStatusDisconnected)
			h.run("web", state.EvalTriggerNodeUpdate)
		case k == 7 && len(away) > 0: // a disconnected node comes back
			for id := range away {
				log = append(log, "node reconnected")
				delete(away, id)
				h.reconnect(id)
				break
			}
		case k == 7 && rng.Intn(2) == 0: // a new version updated in place
			pj.killTimeout += time.Second
			log = append(log, fmt.Sprintf("in-place kill_timeout=%v", pj.killTimeout))
			h.process(h.register(pj.job()))
		case k == 6: // an allocation fails on its client
			live := reachable(h.live("web"))
			if len(live) == 0 {
				continue
			}
			log = append(log, "alloc failed")
			victim := live[rng.Intn(len(live))]
			h.report([]*state.Allocation{victim}, state.AllocClientStatusFailed, nil)
			// The deployment watcher lets an active deployment (with a
			// progress deadline) reschedule it.
			if d != nil && d.Active() && victim.DeploymentID == d.ID {
				h.markReschedule(victim.ID)
			}
			h.run("web", state.EvalTriggerRetryFailedAlloc)
			h.runDue("web")
		default: // clients report health of some allocations; the watcher reacts
			var some []*state.Allocation
			for _, a := range reachable(h.live("web")) {
				if (a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil) && rng.Intn(2) == 0 {
					some = append(some, a)
				}
			}
			log = append(log, fmt.Sprintf("healthy %d", len(some)))
			h.report(some, state.AllocClientStatusRunning, yes)
			h.run("web", state.EvalTriggerDeploymentWatcher)
		}
	}
	// Half the disconnected nodes come back; the others stay away past
	// max_client_disconnect (converge runs the timeouts).
	for id := range away {
		if rng.Intn(2) == 0 {
			h.reconnect(id)
		}
	}
	converge(h, &pj, fail)
	if len(h.refused) > 0 {
		fail("plans refused without concurrent writes: %v", h.refused)
	}
}

// converge stops the chaos and plays operator and clients until the job is
// fully deployed.
func converge(h *harness, pj *propJob, fail func(string, ...any)) {
	h.node("spare", "dc1", 0, 0)
	if d := h.latest("web"); d != nil && d.Status == state.DeploymentStatusPaused {
		h.setDeployment(d.ID, state.DeploymentStatusRunning, state.DeploymentStatusDescriptionRunning)
	}
	if d := h.latest("web"); d != nil && !d.Active() && d.Status != state.DeploymentStatusSuccessful {
		pj.spec++
		h.process(h.register(pj.job()))
	}
	job := h.job("web")
	for range 60 {
		plans := len(h.plans)
		marked := h.healthy("web")
		lookup := func(id string) *state.Allocation { _, a, _ := h.store.Alloc(nil, id); return a }
		if d := h.latest("web"); d != nil && d.RequiresPromotion() && len(state.PromotionErrors(d, lookup, true, nil)) == 0 {
			h.promote(d.ID)
		}
		h.run("web", state.EvalTriggerDeploymentWatcher)
		h.runDue("web")
		if marked == 0 && len(h.plans) == plans {
			break
		}
	}
	// Names are unique; they need not be 0..Count-1 (a failed [0] beside
	// a running [1] leaves [1] when scaled down to 1, as in Nomad).
	live := h.live("web")
	seen := map[string]bool{}
	for _, a := range live {
		if seen[a.Name] {
			fail("converged to %v: duplicate name %s", names(live), a.Name)
		}
		seen[a.Name] = true
	}
	if count := job.TaskGroups[0].Count; len(live) != count {
		fail("converged to %v, want %d allocations", names(live), count)
	}
	for _, a := range live {
		if a.JobVersion != job.Version {
			fail("alloc %s at version %d, job at %d", a.Name, a.JobVersion, job.Version)
		}
	}
	if d := h.latest("web"); d != nil && d.JobVersion == job.Version && d.Status != state.DeploymentStatusSuccessful {
		fail("deployment for v%d ended %s %q", d.JobVersion, d.Status, d.StatusDescription)
	}
}

// checkInvariants checks one applied plan against the states before and after it.
func checkInvariants(h *harness, p *state.Plan, before *state.Store, fail func(string, ...any)) {
	job := h.job("web")
	if job == nil || job.Stop {
		return
	}
	succeeded := false
	_, prior, _ := before.DeploymentsByJob(nil, "default", "web")
	for _, d := range prior {
		succeeded = succeeded || d.Status == state.DeploymentStatusSuccessful
	}
	var dep *state.Deployment
	for _, d := range h.deployments("web") {
		if d.JobVersion == job.Version && d.JobCreateIndex == job.CreateIndex {
			dep = d
			break
		}
	}
	// A deployment is successful only with every group's HealthyAllocs at
	// max(DesiredTotal, DesiredCanaries) or more (Nomad's rule).
	wasSuccessful := map[string]bool{}
	for _, d := range prior {
		wasSuccessful[d.ID] = d.Status == state.DeploymentStatusSuccessful
	}
	for _, d := range h.deployments("web") {
		if d.Status != state.DeploymentStatusSuccessful || wasSuccessful[d.ID] {
			continue
		}
		for name, g := range d.TaskGroups {
			if g.HealthyAllocs < max(g.DesiredTotal, g.DesiredCanaries) {
				fail("deployment v%d successful with group %s at %d healthy, desired total %d canaries %d",
					d.JobVersion, name, g.HealthyAllocs, g.DesiredTotal, g.DesiredCanaries)
			}
		}
	}
	alloc := func(id string) *state.Allocation { _, a, _ := h.store.Alloc(nil, id); return a }
	for _, tg := range job.TaskGroups {
		var live []*state.Allocation
		for _, a := range h.live("web") {
			if a.TaskGroup == tg.Name {
				live = append(live, a)
			}
		}
		// Unknown allocations run beside their replacements (Nomad's).
		if n := len(reachable(live)); n > tg.Count+tg.Update.Canary {
			fail("group %s runs %d allocations, count %d canary %d", tg.Name, n, tg.Count, tg.Update.Canary)
		}
		if dep == nil {
			continue
		}
		mp := tg.Update.MaxParallel
		inFlight, available := 0, 0
		for _, a := range live {
			fresh := a.CreateIndex >= dep.CreateIndex && a.JobVersion == job.Version
			if a.DeploymentStatus.IsHealthy() || !fresh {
				available++
				continue
			}
			if prev := alloc(a.PreviousAllocation); a.DeploymentID == dep.ID && prev != nil && prev.DesiredDescription == allocUpdating {
				inFlight++
			}
		}
		if inFlight > mp {
			fail("group %s: %d destructive replacements in flight, max_parallel %d", tg.Name, inFlight, mp)
		}
		updating := 0
		for _, s := range p.Stops {
			if a := alloc(s.AllocID); a != nil && a.TaskGroup == tg.Name && s.DesiredDescription == allocUpdating {
				updating++
			}
		}
		if succeeded && updating > 0 && available < tg.Count-mp {
			fail("group %s: plan stopped %d for update leaving %d healthy-or-old, count %d max_parallel %d", tg.Name, updating, available, tg.Count, mp)
		}
	}
}

// dump describes the job's allocations and deployment (for failure messages).
func dump(h *harness) string {
	out := ""
	if j := h.job("web"); j != nil {
		out += fmt.Sprintf("job v%d count %d update %+v\n", j.Version, j.TaskGroups[0].Count, *j.TaskGroups[0].Update)
	}
	if d := h.latest("web"); d != nil {
		out += fmt.Sprintf("deployment v%d %s %q %+v\n", d.JobVersion, d.Status, d.StatusDescription, *d.TaskGroups["web"])
	}
	for _, a := range h.allocs("web") {
		out += fmt.Sprintf("  %s %s v%d desired=%s client=%s dep=%.8s health=%+v prev=%.8s next=%.8s node=%s\n",
			a.ID[:8], a.Name, a.JobVersion, a.DesiredStatus, a.ClientStatus, a.DeploymentID, a.DeploymentStatus, a.PreviousAllocation, a.NextAllocation, a.NodeName)
	}
	return out
}
