package scheduler

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

func TestDatacenterAndDriverFiltering(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dcs    []string
		driver string
		want   []string // node names the allocations may land on; none: blocked
	}{
		{"exact datacenter", []string{"dc2"}, "mock_driver", []string{"dc2-mock"}},
		{"glob datacenter", []string{"east-*"}, "mock_driver", []string{"east-1-mock"}},
		{"star matches all", []string{"*"}, "mock_driver", []string{"dc1-mock", "dc2-mock", "east-1-mock"}},
		{"no datacenters means all", nil, "mock_driver", []string{"dc1-mock", "dc2-mock", "east-1-mock"}},
		{"several datacenters", []string{"dc1", "dc2"}, "mock_driver", []string{"dc1-mock", "dc2-mock"}},
		{"driver", []string{"*"}, "docker", []string{"dc1-docker"}},
		{"mock is mock_driver", []string{"dc1"}, "mock", []string{"dc1-mock"}},
		{"no such datacenter", []string{"nowhere"}, "mock_driver", nil},
		{"no such driver", []string{"*"}, "exec", nil},
		{"driver in another datacenter", []string{"dc2"}, "docker", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.node("dc1-mock", "dc1", 0, 0)
			h.node("dc2-mock", "dc2", 0, 0)
			h.node("east-1-mock", "east-1", 0, 0)
			h.node("dc1-docker", "dc1", 0, 0, "docker")
			unhealthy := h.node("dc1-broken", "dc1", 0, 0)
			unhealthy.Drivers["mock_driver"] = &state.DriverInfo{Detected: true, Healthy: false}
			unhealthy.Drivers["docker"] = &state.DriverInfo{Detected: true, Healthy: false}
			if err := h.store.NodeRegister(h.next(), unhealthy, nil); err != nil {
				t.Fatal(err)
			}
			e := h.process(h.register(testJob("web", 3, func(j *state.Job) {
				j.Datacenters = tc.dcs
				j.TaskGroups[0].Tasks[0].Driver = tc.driver
			})))
			allowed := map[string]bool{}
			for _, n := range tc.want {
				allowed[n] = true
			}
			live := h.live("web")
			for _, a := range live {
				if !allowed[a.NodeName] {
					t.Fatalf("placed on %s, allowed %v", a.NodeName, tc.want)
				}
			}
			if tc.want == nil {
				if len(live) != 0 || e.QueuedAllocations["web"] != 3 || e.BlockedEval == "" {
					t.Fatalf("%d placed, eval %+v", len(live), e)
				}
			} else if len(live) != 3 || e.QueuedAllocations["web"] != 0 || e.BlockedEval != "" {
				t.Fatalf("%d placed, eval %+v", len(live), e)
			}
		})
	}
}

func TestDatacenterChangeMovesAllocations(t *testing.T) {
	h := newHarness(t)
	h.node("a1", "dc1", 0, 0)
	h.node("a2", "dc1", 0, 0)
	h.node("b1", "dc2", 0, 0)
	h.node("b2", "dc2", 0, 0)
	h.process(h.register(testJob("web", 2)))
	h.settle("web")
	// Same group, other datacenters: not in place but a rolling replacement.
	h.process(h.register(testJob("web", 2, func(j *state.Job) { j.Datacenters = []string{"dc2", "dc1"} })))
	if p := h.plans[len(h.plans)-1]; len(p.InPlace) != 2 {
		t.Fatalf("still fits: %d in place, want 2", len(p.InPlace))
	}
	h.settle("web")
	h.process(h.register(testJob("web", 2, func(j *state.Job) { j.Datacenters = []string{"dc2"} })))
	if p := h.plans[len(h.plans)-1]; len(p.InPlace) != 0 || len(p.Placements) != 1 || len(p.Stops) != 1 {
		t.Fatalf("plan: %d in place, %d placements, %d stops", len(p.InPlace), len(p.Placements), len(p.Stops))
	}
	h.settle("web")
	for _, a := range h.live("web") {
		if a.NodeName != "b1" && a.NodeName != "b2" {
			t.Fatalf("%s still on %s", a.Name, a.NodeName)
		}
	}
}

func TestNotReadyNodesAreSkipped(t *testing.T) {
	h := newHarness(t)
	down := h.node("down", "dc1", 0, 0)
	h.nodeDown(down.ID)
	inel := h.node("ineligible", "dc1", 0, 0)
	inel.SchedulingEligibility = state.NodeSchedulingIneligible
	if err := h.store.NodeRegister(h.next(), inel, nil); err != nil {
		t.Fatal(err)
	}
	init := h.node("init", "dc1", 0, 0)
	init.Status = state.NodeStatusInit
	if err := h.store.NodeRegister(h.next(), init, nil); err != nil {
		t.Fatal(err)
	}
	h.node("ready", "dc1", 0, 0)
	h.process(h.register(testJob("web", 2)))
	for _, a := range h.live("web") {
		if a.NodeName != "ready" {
			t.Fatalf("placed on %s", a.NodeName)
		}
	}
}

func TestBinPackPrefersTightestFit(t *testing.T) {
	h := newHarness(t)
	h.node("big", "dc1", 1000, 0)
	h.node("small", "dc1", 400, 0)
	h.process(h.register(testJob("web", 5, withNoUpdate())))
	got := map[string]int{}
	for _, a := range h.live("web") {
		got[a.NodeName]++
	}
	if want := map[string]int{"small": 4, "big": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("allocs per node %v, want %v", got, want)
	}
}

// With limited placement (Nomad's stack), bin-packing puts the first
// allocation on the tighter fit; the job's anti-affinity then spreads the
// others (Nomad's scores, worked by hand: small 0.125 vs big 0.05 empty;
// a node with n of the 5 gets -(n+1)/5 averaged in).
func TestLimitedBinPackWithJobAntiAffinity(t *testing.T) {
	h := newHarness(t)
	h.limited = true
	h.node("big", "dc1", 1000, 0)
	h.node("small", "dc1", 400, 0)
	h.process(h.register(testJob("web", 5, withNoUpdate())))
	got := map[string]int{}
	for _, a := range h.live("web") {
		got[a.NodeName]++
		if a.Name == "web.web[0]" && a.NodeName != "small" {
			t.Errorf("the first allocation went to %s, want the tighter fit", a.NodeName)
		}
	}
	if want := map[string]int{"small": 3, "big": 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("allocs per node %v, want %v", got, want)
	}
}

func TestResourceExhaustionBlocksEval(t *testing.T) {
	h := newHarness(t)
	h.node("a", "dc1", 250, 1024)
	h.node("b", "dc1", 1000, 130) // memory for two only
	e := h.process(h.register(testJob("web", 5)))
	if live := h.live("web"); len(live) != 4 {
		t.Fatalf("%d placed, want 4", len(live))
	}
	if e.Status != state.EvalStatusComplete || !reflect.DeepEqual(e.QueuedAllocations, map[string]int{"web": 1}) || e.BlockedEval == "" {
		t.Fatalf("eval %+v", e)
	}
	b := h.eval(e.BlockedEval)
	if b.Status != state.EvalStatusBlocked || b.TriggeredBy != state.EvalTriggerQueuedAllocs || b.PreviousEval != e.ID ||
		b.JobID != "web" || b.Namespace != "default" || b.Type != state.JobTypeService || b.Priority != 50 {
		t.Fatalf("blocked eval %+v", b)
	}

	// Another evaluation that cannot place either reuses the blocked one.
	if e2 := h.run("web", state.EvalTriggerJobRegister); e2.BlockedEval != b.ID || len(h.created) != 1 {
		t.Fatalf("second eval %+v, %d evals created", e2, len(h.created))
	}

	// A new node: the broker marks the blocked eval pending and it places the rest.
	h.node("c", "dc1", 1000, 1024)
	b.Status = state.EvalStatusPending
	if err := h.store.EvalsUpsert(h.next(), []*state.Evaluation{b}); err != nil {
		t.Fatal(err)
	}
	b = h.process(h.eval(b.ID))
	if live := h.live("web"); len(live) != 5 || b.Status != state.EvalStatusComplete || b.BlockedEval != "" || b.QueuedAllocations["web"] != 0 {
		t.Fatalf("%d live; blocked eval after %+v", len(live), b)
	}
}

func TestStalePlanIsRecomputed(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	e := h.register(testJob("web", 2))
	// The job changes between the snapshot and the plan: refused, recomputed.
	h.beforeApply = func(h *harness) {
		h.beforeApply = nil
		h.register(testJob("web", 2, withSpec("2")))
	}
	e = h.process(e)
	if len(h.refused) != 1 || !strings.Contains(h.refused[0], "changed since the plan was computed") {
		t.Fatalf("refusals %v", h.refused)
	}
	live := h.live("web")
	if e.Status != state.EvalStatusComplete || len(live) != 2 || live[0].JobVersion != 1 || h.latest("web").JobVersion != 1 {
		t.Fatalf("eval %s, live %+v", e.Status, live)
	}

	// A node that goes away between snapshot and plan.
	h2 := newHarness(t)
	n := h2.node("only", "dc1", 0, 0)
	e = h2.register(testJob("web", 1))
	h2.beforeApply = func(h *harness) {
		h.beforeApply = nil
		h.nodeDown(n.ID)
		h.node("other", "dc1", 0, 0)
	}
	h2.process(e)
	if live := h2.live("web"); len(h2.refused) != 1 || len(live) != 1 || live[0].NodeName != "other" {
		t.Fatalf("refusals %v, live %+v", h2.refused, live)
	}
}

func TestTooManyRefusalsFailEval(t *testing.T) {
	h := newHarness(t)
	h.nodes(1, 0, 0)
	e := h.register(testJob("web", 1))
	v := 0
	h.beforeApply = func(h *harness) {
		v++
		h.register(testJob("web", 1, withSpec(strings.Repeat("x", v))))
	}
	e = h.process(e)
	if len(h.refused) != maxPlanAttempts || e.Status != state.EvalStatusFailed || e.StatusDescription != descMaxAttempts || e.BlockedEval == "" {
		t.Fatalf("%d refusals, eval %+v", len(h.refused), e)
	}
	if b := h.eval(e.BlockedEval); b.Status != state.EvalStatusBlocked || b.TriggeredBy != state.EvalTriggerMaxPlans || b.PreviousEval != e.ID {
		t.Fatalf("blocked eval %+v", b)
	}
}

func TestAllocNames(t *testing.T) {
	for name, want := range map[string]int{
		"web.web[0]": 0, "a.b.c[12]": 12, "x[y][3]": 3, "web.web": -1, "web.web[]": -1, "web.web[-1]": -1, "web.web[1": -1,
	} {
		if got := allocIndex(name); got != want {
			t.Errorf("allocIndex(%q) = %d, want %d", name, got, want)
		}
	}
	if got := allocName("j", "g", 7); got != "j.g[7]" {
		t.Fatal(got)
	}
}
