package scheduler

import (
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// drain starts a drain of the node (it becomes ineligible) and marks the
// given allocations DesiredTransition.Migrate, as the drainer does.
func (h *harness) drain(nodeID string, marked ...*state.Allocation) {
	h.t.Helper()
	u := &state.NodeDrainUpdate{NodeID: nodeID, DrainStrategy: &state.DrainStrategy{StartedAt: h.now}, UpdatedAt: h.now.UnixNano()}
	if err := h.store.NodeUpdateDrain(h.next(), u); err != nil {
		h.t.Fatal(err)
	}
	h.markMigrate(marked...)
}

func (h *harness) markMigrate(marked ...*state.Allocation) {
	h.t.Helper()
	tr := map[string]state.DesiredTransition{}
	for _, a := range marked {
		tr[a.ID] = state.DesiredTransition{Migrate: ptr(true)}
	}
	if err := h.store.AllocsDesiredTransition(h.next(), tr, nil); err != nil {
		h.t.Fatal(err)
	}
}

// byNode groups the job's live allocations by node; busiest is the node
// with the most.
func busiest(as []*state.Allocation) (string, []*state.Allocation) {
	by := map[string][]*state.Allocation{}
	best := ""
	for _, a := range as {
		by[a.NodeID] = append(by[a.NodeID], a)
		if best == "" || len(by[a.NodeID]) > len(by[best]) || (len(by[a.NodeID]) == len(by[best]) && a.NodeID < best) {
			best = a.NodeID
		}
	}
	return best, by[best]
}

// Nomad's computeMigrations: every allocation marked Migrate is stopped
// with "alloc is being migrated" in the plan that places its replacement
// under the same name on another (eligible) node, all at once whatever
// the update block's MaxParallel, outside the finished deployment, and
// no new deployment is created.
func TestMigrateMarkedAllocsAreStoppedAndReplacedElsewhere(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 250, 0) // two allocations fit on each node
	h.process(h.register(testJob("web", 4)))
	h.settle("web")
	deps := len(h.deployments("web"))
	node, marked := busiest(h.live("web"))
	if len(marked) != 2 {
		t.Fatalf("want 2 allocations on the busiest node, got %d\n%s", len(marked), dump(h))
	}
	h.nodes(1, 0, 0) // room elsewhere: a third node
	h.drain(node, marked...)
	plans := len(h.plans)
	e := h.run("web", state.EvalTriggerNodeDrain)
	if e.Status != state.EvalStatusComplete || len(h.plans) != plans+1 {
		t.Fatalf("eval %s, %d plans\n%s", e.Status, len(h.plans)-plans, dump(h))
	}
	for _, old := range marked {
		got := h.alloc(old.ID)
		if got.DesiredStatus != state.AllocDesiredStatusStop || got.DesiredDescription != "alloc is being migrated" {
			t.Errorf("migrated alloc: %s %q", got.DesiredStatus, got.DesiredDescription)
		}
	}
	live := h.live("web")
	if len(live) != 4 {
		t.Fatalf("%d live allocations, want 4\n%s", len(live), dump(h))
	}
	for _, old := range marked {
		var repl *state.Allocation
		for _, a := range live {
			if a.PreviousAllocation == old.ID {
				repl = a
			}
		}
		if repl == nil || repl.Name != old.Name || repl.NodeID == node || repl.DeploymentID != "" || repl.JobVersion != old.JobVersion {
			t.Fatalf("replacement of %s: %+v", old.Name, repl)
		}
	}
	// The plan's annotations count migrations as Nomad's DesiredTGUpdates do.
	if u := h.plans[len(h.plans)-1].Annotations.DesiredTGUpdates["web"]; u == nil || u.Migrate != 2 || u.Stop != 0 || u.Place != 0 || u.Ignore != 2 {
		t.Fatalf("annotations: %+v", u)
	}
	if n := len(h.deployments("web")); n != deps {
		t.Fatalf("a migration created a deployment: %d, was %d", n, deps)
	}
	// Once placed, nothing more happens.
	plans = len(h.plans)
	h.run("web", state.EvalTriggerNodeDrain)
	if len(h.plans) != plans {
		t.Fatalf("a second evaluation planned again\n%s", dump(h))
	}
}

// Without an eligible node the marked allocation keeps running and the
// evaluation is blocked (Nomad pops the stop of a placement that failed);
// a new node lets the migration happen.
func TestMigrateWithoutRoomKeepsTheAllocationRunning(t *testing.T) {
	h := newHarness(t)
	n := h.nodes(1, 0, 0)[0]
	h.process(h.register(testJob("web", 1)))
	h.settle("web")
	a := h.live("web")[0]
	h.drain(n.ID, a)
	e := h.run("web", state.EvalTriggerNodeDrain)
	if got := h.alloc(a.ID); got.DesiredStatus != state.AllocDesiredStatusRun {
		t.Fatalf("stopped without a replacement: %+v", got)
	}
	if e.Status != state.EvalStatusComplete || e.QueuedAllocations["web"] != 1 || e.BlockedEval == "" {
		t.Fatalf("eval: %s queued %v blocked %q", e.Status, e.QueuedAllocations, e.BlockedEval)
	}
	other := h.node("spare", "dc1", 0, 0)
	h.process(h.eval(e.BlockedEval))
	live := h.live("web")
	if len(live) != 1 || live[0].NodeID != other.ID || live[0].PreviousAllocation != a.ID {
		t.Fatalf("after a node joined:\n%s", dump(h))
	}
	if got := h.alloc(a.ID); got.DesiredDescription != "alloc is being migrated" {
		t.Fatalf("old allocation: %+v", got)
	}
}

// A paused deployment does not block a drain (Nomad's computeMigrations):
// the replacement joins it (a paused deployment is active, as in Nomad, so
// the replacement counts against the rollout's limit once it resumes); the
// rolling update stays paused. A marked allocation on a node that is not
// draining moves as well.
func TestMigrateIgnoresAPausedDeployment(t *testing.T) {
	h := newHarness(t)
	h.nodes(3, 0, 0)
	h.process(h.register(testJob("web", 2)))
	h.settle("web")
	h.process(h.register(testJob("web", 2, withSpec("v2"))))
	d := h.latest("web")
	h.setDeployment(d.ID, state.DeploymentStatusPaused, state.DeploymentStatusDescriptionPaused)
	var old *state.Allocation
	for _, a := range h.live("web") {
		if a.JobVersion == 0 {
			old = a
		}
	}
	h.markMigrate(old) // its node is not draining
	h.run("web", state.EvalTriggerNodeDrain)
	if got := h.alloc(old.ID); got.DesiredDescription != "alloc is being migrated" {
		t.Fatalf("marked allocation under a paused deployment: %+v", got)
	}
	var repl *state.Allocation
	for _, a := range h.live("web") {
		if a.PreviousAllocation == old.ID {
			repl = a
		}
	}
	if repl == nil || repl.DeploymentID != d.ID || repl.Name != old.Name {
		t.Fatalf("replacement: %+v\n%s", repl, dump(h))
	}
	if got := h.latest("web"); got.ID != d.ID || got.Status != state.DeploymentStatusPaused {
		t.Fatalf("deployment: %s %s", got.ID, got.Status)
	}
}
