package scheduler

import (
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// twoGroups adds a group "api" (count 2) beside "web"; apiSpec changes its
// task config (a destructive update of api only); apiCanary gives api canaries.
func twoGroups(apiSpec string, apiCanary int, auto bool) jobOpt {
	return func(j *state.Job) {
		api := *j.TaskGroups[0]
		api.Name, api.Count = "api", 2
		u := *api.Update
		u.Canary, u.AutoPromote = apiCanary, auto
		api.Update = &u
		task := *api.Tasks[0]
		task.Config = map[string]any{"api": apiSpec}
		api.Tasks = []*state.Task{&task}
		j.TaskGroups = append(j.TaskGroups, &api)
	}
}

func TestOneDeploymentCoversEveryGroup(t *testing.T) {
	for _, tc := range []struct {
		name        string
		auto        bool
		description string
	}{
		{"manual promotion", false, state.DeploymentStatusDescriptionRunningNeedsPromotion},
		{"auto promotion", true, state.DeploymentStatusDescriptionRunningAutoPromotion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.nodes(3, 0, 0)
			h.process(h.register(testJob("web", 2, twoGroups("1", 1, tc.auto))))
			first := h.latest("web")
			if len(first.TaskGroups) != 2 || first.TaskGroups["api"].DesiredTotal != 2 || first.TaskGroups["api"].DesiredCanaries != 0 {
				t.Fatalf("first deployment groups %+v", first.TaskGroups)
			}
			h.settle("web")

			// Only api changes: web is updated in place, api gets a canary.
			h.process(h.register(testJob("web", 2, twoGroups("2", 1, tc.auto))))
			p := h.plans[len(h.plans)-1]
			d := h.latest("web")
			if d.StatusDescription != tc.description || len(d.TaskGroups) != 2 ||
				d.TaskGroups["api"].DesiredCanaries != 1 || d.TaskGroups["web"].DesiredCanaries != 0 {
				t.Fatalf("deployment %q %+v %+v", d.StatusDescription, d.TaskGroups["api"], d.TaskGroups["web"])
			}
			if len(p.InPlace) != 2 || len(p.Placements) != 1 || p.Placements[0].TaskGroup != "api" || len(p.Stops) != 0 {
				t.Fatalf("plan: %d in place, %d placements, %d stops", len(p.InPlace), len(p.Placements), len(p.Stops))
			}
			h.healthy("web")
			h.run("web", state.EvalTriggerDeploymentWatcher)
			if h.latest("web").Status != state.DeploymentStatusRunning {
				t.Fatal("finished before promotion")
			}
			h.promote(d.ID)
			h.settle("web")
			if got := h.latest("web"); got.ID != d.ID || got.Status != state.DeploymentStatusSuccessful {
				t.Fatalf("deployment %s %q", got.Status, got.StatusDescription)
			}
			live := h.live("web")
			if len(live) != 4 || countBy(live, func(a *state.Allocation) bool { return a.JobVersion == 1 && a.DeploymentID == d.ID }) != 4 {
				t.Fatalf("live %v", names(live))
			}
		})
	}
}

func TestLossDuringRollout(t *testing.T) {
	t.Run("old allocation lost: replaced within the deployment", func(t *testing.T) {
		h, d := startRollout(t, withMaxParallel(1))
		var old *state.Allocation
		for _, a := range h.live("web") {
			if a.JobVersion == 0 {
				old = a
				break
			}
		}
		h.nodeDown(old.NodeID)
		h.node("spare", "dc1", 0, 0)
		h.run("web", state.EvalTriggerNodeUpdate)
		for _, a := range h.live("web") {
			if a.PreviousAllocation == old.ID && (a.DeploymentID != d.ID || a.JobVersion != 1 || a.Name != old.Name) {
				t.Fatalf("replacement %+v", a)
			}
		}
		h.settle("web")
		if got := h.latest("web"); got.Status != state.DeploymentStatusSuccessful || len(h.live("web")) != 3 {
			t.Fatalf("deployment %s, %d live", got.Status, len(h.live("web")))
		}
	})
	t.Run("canary lost: replaced by a canary", func(t *testing.T) {
		h := newHarness(t)
		h.nodes(3, 0, 0)
		h.process(h.register(testJob("web", 3, withCanary(1, false))))
		h.settle("web")
		h.process(h.register(testJob("web", 3, withCanary(1, false), withSpec("2"))))
		d := h.latest("web")
		canary := h.plans[len(h.plans)-1].Placements[0]
		h.nodeDown(canary.NodeID)
		h.node("spare", "dc1", 0, 0)
		h.run("web", state.EvalTriggerNodeUpdate)
		var repl *state.Allocation
		for _, a := range h.live("web") {
			if a.PreviousAllocation == canary.ID {
				repl = a
			}
		}
		if repl == nil || repl.DeploymentStatus == nil || !repl.DeploymentStatus.Canary || repl.Name != canary.Name {
			t.Fatalf("canary replacement %+v", repl)
		}
		h.healthy("web")
		h.promote(d.ID)
		h.settle("web")
		if got := h.latest("web"); got.Status != state.DeploymentStatusSuccessful {
			t.Fatalf("deployment %s", got.Status)
		}
	})
}
