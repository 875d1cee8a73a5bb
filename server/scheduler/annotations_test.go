package scheduler

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

func ids(as []*state.Allocation) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	sort.Strings(out)
	return out
}

// settledJob is a three-allocation job whose first deployment succeeded.
func settledJob(t *testing.T, opts ...jobOpt) *harness {
	h := newHarness(t)
	h.nodes(3, 0, 0)
	h.process(h.register(testJob("web", 3, opts...)))
	h.settle("web")
	if d := h.latest("web"); d.Status != state.DeploymentStatusSuccessful {
		t.Fatalf("first deployment %s", d.Status)
	}
	return h
}

func lastDesired(t *testing.T, h *harness) state.DesiredUpdates {
	t.Helper()
	p := h.plans[len(h.plans)-1]
	if p.Annotations == nil || p.Annotations.DesiredTGUpdates["web"] == nil {
		t.Fatalf("plan without annotations: %+v", p)
	}
	return *p.Annotations.DesiredTGUpdates["web"]
}

// Nomad updates in place what a running task can take on: the same
// allocation IDs move to the new version, InPlaceUpdate counts them, and a
// new deployment still tracks the version (Nomad creates one for in-place
// updates too); a destructive change replaces them MaxParallel at a time.
func TestInPlaceVersusDestructiveUpdates(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      jobOpt
		destructive bool
	}{
		{"update block only (MaxParallel, MinHealthyTime): in place, Nomad never compares it", func(j *state.Job) {
			j.TaskGroups[0].Update.MaxParallel, j.TaskGroups[0].Update.MinHealthyTime = 2, 3*time.Second
		}, false},
		{"restart policy only: in place, the client restarts by the new one", func(j *state.Job) {
			j.TaskGroups[0].RestartPolicy = &state.RestartPolicy{Attempts: 5, Interval: time.Minute, Delay: time.Second, Mode: "delay"}
		}, false},
		{"task KillTimeout only: in place, Nomad never compares it", func(j *state.Job) {
			j.TaskGroups[0].Tasks[0].KillTimeout = 45 * time.Second
		}, false},
		{"task Env: destructive (tasksUpdated task env)", func(j *state.Job) {
			j.TaskGroups[0].Tasks[0].Env = map[string]string{"MODE": "blue"}
		}, true},
		{"group Meta: destructive (tasksUpdated task meta, combined)", func(j *state.Job) {
			j.TaskGroups[0].Meta = map[string]string{"tier": "front"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := settledJob(t)
			first := h.latest("web")
			before := ids(h.live("web"))

			h.process(h.register(testJob("web", 3, tc.change)))
			if h.job("web").Version != 1 {
				t.Fatalf("job version %d, want 1", h.job("web").Version)
			}
			d := h.latest("web")
			if d.ID == first.ID || d.JobVersion != 1 || d.Status != state.DeploymentStatusRunning || d.TaskGroups["web"].DesiredTotal != 3 {
				t.Fatalf("no new deployment for version 1: %+v", d)
			}
			p := h.plans[len(h.plans)-1]
			got := lastDesired(t, h)
			if !tc.destructive {
				if want := (state.DesiredUpdates{InPlaceUpdate: 3}); got != want {
					t.Fatalf("annotations %+v, want %+v", got, want)
				}
				if len(p.InPlace) != 3 || len(p.Placements) != 0 || len(p.Stops) != 0 {
					t.Fatalf("plan: %d in place, %d placed, %d stopped", len(p.InPlace), len(p.Placements), len(p.Stops))
				}
				live := h.live("web")
				if !reflect.DeepEqual(ids(live), before) {
					t.Fatalf("allocation IDs changed: %v, were %v", ids(live), before)
				}
				for _, a := range live {
					if a.JobVersion != 1 || a.DeploymentID != d.ID || a.DeploymentStatus != nil {
						t.Fatalf("in-place alloc not moved to version 1 and the new deployment: %+v", a)
					}
				}
				if g := h.latest("web").TaskGroups["web"]; g.PlacedAllocs != 3 {
					t.Fatalf("PlacedAllocs %d, want 3 (in-place allocations join the deployment)", g.PlacedAllocs)
				}
			} else {
				if want := (state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}); got != want {
					t.Fatalf("annotations %+v, want %+v (MaxParallel 1)", got, want)
				}
				if len(p.InPlace) != 0 || len(p.Placements) != 1 || len(p.Stops) != 1 || p.Stops[0].DesiredDescription != allocUpdating {
					t.Fatalf("plan: %d in place, %d placed, stops %+v", len(p.InPlace), len(p.Placements), p.Stops)
				}
			}
			h.settle("web")
			if d := h.latest("web"); d.Status != state.DeploymentStatusSuccessful {
				t.Fatalf("deployment %s %q", d.Status, d.StatusDescription)
			}
			after := ids(h.live("web"))
			kept := 0
			for _, id := range after {
				for _, b := range before {
					if id == b {
						kept++
					}
				}
			}
			if want := map[bool]int{false: 3, true: 0}[tc.destructive]; kept != want || len(after) != 3 {
				t.Fatalf("%d of %d allocation IDs kept, want %d", kept, len(after), want)
			}
			for _, a := range h.live("web") {
				if a.JobVersion != 1 {
					t.Fatalf("alloc %s at version %d", a.ID, a.JobVersion)
				}
			}
		})
	}
}

// Annotations count what the plan does per group, as Nomad's
// DesiredTGUpdates: Place for new allocations, InPlaceUpdate for the kept
// ones of a scale-up, Canary, Stop for scale-down, Ignore for the rest.
func TestPlanAnnotations(t *testing.T) {
	t.Run("scale up with the same tasks: 3 in-place updates and 2 placements", func(t *testing.T) {
		h := settledJob(t)
		h.process(h.register(testJob("web", 5)))
		if got, want := lastDesired(t, h), (state.DesiredUpdates{Place: 2, InPlaceUpdate: 3}); got != want {
			t.Fatalf("annotations %+v, want %+v", got, want)
		}
	})
	t.Run("scale down: highest indexes stopped, the rest updated in place", func(t *testing.T) {
		h := settledJob(t)
		h.process(h.register(testJob("web", 1)))
		if got, want := lastDesired(t, h), (state.DesiredUpdates{Stop: 2, InPlaceUpdate: 1}); got != want {
			t.Fatalf("annotations %+v, want %+v", got, want)
		}
	})
	t.Run("destructive with canaries: Canary placed, the old ones ignored until promotion", func(t *testing.T) {
		h := settledJob(t, withCanary(1, false))
		h.process(h.register(testJob("web", 3, withCanary(1, false), withSpec("2"))))
		if got, want := lastDesired(t, h), (state.DesiredUpdates{Canary: 1, Ignore: 3}); got != want {
			t.Fatalf("annotations %+v, want %+v", got, want)
		}
	})
	t.Run("first registration: Place count", func(t *testing.T) {
		h := newHarness(t)
		h.nodes(2, 0, 0)
		h.process(h.register(testJob("web", 3)))
		if got, want := lastDesired(t, h), (state.DesiredUpdates{Place: 3}); got != want {
			t.Fatalf("annotations %+v, want %+v", got, want)
		}
	})
	t.Run("stopped job: every live allocation a Stop", func(t *testing.T) {
		h := settledJob(t)
		j := testJob("web", 3)
		j.Stop = true
		h.process(h.register(j))
		if got, want := lastDesired(t, h), (state.DesiredUpdates{Stop: 3}); got != want {
			t.Fatalf("annotations %+v, want %+v", got, want)
		}
	})
}

// DryRun returns the plan and its annotations and writes nothing; a
// settled job's dry run ignores everything.
func TestDryRunWritesNothing(t *testing.T) {
	h := settledJob(t)
	e := h.evalFor("web", state.EvalTriggerJobRegister)
	p, queued, err := DryRun(h.store.PointInTime(), e, nil, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsNoOp() || *p.Annotations.DesiredTGUpdates["web"] != (state.DesiredUpdates{Ignore: 3}) || queued["web"] != 0 {
		t.Fatalf("settled dry run: noop=%v %+v queued %v", p.IsNoOp(), p.Annotations.DesiredTGUpdates["web"], queued)
	}

	j := testJob("web", 3, withSpec("2"))
	if _, err := h.store.JobRegister(h.next(), j, nil); err != nil {
		t.Fatal(err)
	}
	idx, plans := h.store.AllocsIndex(), len(h.plans)
	p, _, err = DryRun(h.store.PointInTime(), e, h, h.now)
	if err != nil {
		t.Fatal(err)
	}
	if *p.Annotations.DesiredTGUpdates["web"] != (state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}) || len(p.Placements) != 1 {
		t.Fatalf("dry run of a destructive change: %+v, %d placements", p.Annotations.DesiredTGUpdates["web"], len(p.Placements))
	}
	if h.store.AllocsIndex() != idx || len(h.plans) != plans || h.latest("web").JobVersion != 0 {
		t.Fatal("the dry run wrote something")
	}
}
