package scheduler

// Rules of the scheduler that single-line mutations of the code used to
// survive (issue 32, part 7): each test here fails on its mutant.

import (
	"math"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// Reschedule attempts count only within Interval (Nomad's
// RescheduleTracker.RescheduleEligible counts the events whose time is
// within Interval of the failure), and a replacement's tracker carries
// over only the events within Interval of its reschedule (Nomad's
// updateRescheduleTracker). With Attempts 1 per 10 minutes: the first
// failure is replaced; a second failure within the 10 minutes finds the
// attempt spent; one after them is replaced again, its tracker holding the
// new reschedule only.
func TestRuleRescheduleAttemptsCountWithinInterval(t *testing.T) {
	policy := state.ReschedulePolicy{Attempts: 1, Interval: 10 * time.Minute, Delay: 5 * time.Second, DelayFunction: "constant"}
	for _, c := range []struct {
		name string
		// ranFor is how long the first replacement runs before it fails.
		ranFor   time.Duration
		replaced bool
	}{
		{"second failure within Interval: the attempt is spent", 5 * time.Minute, false},
		{"second failure after Interval: the first attempt no longer counts", 20 * time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, first := settledFailure(t, withReschedule(policy))
			h.run("web", state.EvalTriggerRetryFailedAlloc)
			h.runDue("web")
			first = h.alloc(first.ID)
			if first.NextAllocation == "" {
				t.Fatalf("first failure not replaced: %+v", first)
			}
			second := h.alloc(first.NextAllocation)
			if tr := second.RescheduleTracker; tr == nil || len(tr.Events) != 1 {
				t.Fatalf("first replacement's tracker %+v, want one event", tr)
			}
			rescheduledAt := time.Unix(0, second.RescheduleTracker.Events[0].RescheduleTime)

			h.report([]*state.Allocation{second}, state.AllocClientStatusRunning, nil)
			h.now = h.now.Add(c.ranFor)
			h.report([]*state.Allocation{second}, state.AllocClientStatusFailed, nil)
			h.run("web", state.EvalTriggerRetryFailedAlloc)
			h.runDue("web")

			second = h.alloc(second.ID)
			if !c.replaced {
				if second.NextAllocation != "" || second.FollowupEvalID != "" || second.DesiredStatus != state.AllocDesiredStatusRun {
					t.Fatalf("replaced with its one attempt spent %v ago: next %q followup %q desired %s",
						second.LastEventTime().Sub(rescheduledAt), second.NextAllocation, second.FollowupEvalID, second.DesiredStatus)
				}
				if job := h.job("web"); job.Status != state.JobStatusDead {
					t.Errorf("job status %q with its attempts spent, want dead", job.Status)
				}
				return
			}
			if second.NextAllocation == "" {
				t.Fatalf("not replaced although its one reschedule was %v before the failure (Interval %v)",
					second.LastEventTime().Sub(rescheduledAt), policy.Interval)
			}
			third := h.alloc(second.NextAllocation)
			tr := third.RescheduleTracker
			if tr == nil || len(tr.Events) != 1 || tr.Events[0].PrevAllocID != second.ID {
				t.Fatalf("second replacement's tracker %+v, want only the reschedule of %s (the first is outside Interval)", tr, second.ID)
			}
			if third.PreviousAllocation != second.ID || third.ClientStatus == state.AllocClientStatusFailed {
				t.Fatalf("second replacement: previous %s, client %s", third.PreviousAllocation, third.ClientStatus)
			}
		})
	}
}

// rackFleet registers one node per datacenter and rack: dc1/r1, dc1/r2,
// dc2/r1, dc2/r2. It answers each node's "dc/rack" by ID.
func rackFleet(h *harness) map[string]string {
	where := map[string]string{}
	for _, dc := range []string{"dc1", "dc2"} {
		for _, rack := range []string{"r1", "r2"} {
			n := h.fleetNode(dc+"-"+rack, dc, "", "", map[string]string{"kernel.name": "linux"}, map[string]string{"rack": rack})
			where[n.ID] = dc + "/" + rack
		}
	}
	return where
}

// Spread weights are relative to the sum of all the group's spreads'
// weights (Nomad's spreadWeight = weight / sumSpreadWeights), job-level
// spreads included: each spread's boost, (desired - used) / desired, is
// scaled by its share of the total, so the score of several spreads stays
// within the range of one. Checked on the "allocation-spread" score of the
// first placement, where nothing is placed yet (used counts the placement).
func TestRuleSpreadWeightsNormalisedAcrossSpreads(t *testing.T) {
	dcSpread := func(w int8) *state.Spread {
		return &state.Spread{Attribute: "${node.datacenter}", Weight: w, SpreadTarget: []*state.SpreadTarget{
			{Value: "dc1", Percent: 75}, {Value: "dc2", Percent: 25},
		}}
	}
	rackSpread := func(w int8) *state.Spread {
		return &state.Spread{Attribute: "${meta.rack}", Weight: w, SpreadTarget: []*state.SpreadTarget{
			{Value: "r1", Percent: 50}, {Value: "r2", Percent: 50},
		}}
	}
	// Count 4: dc1 desires 3 (boost 2/3), dc2 1 (boost 0), each rack 2
	// (boost 1/2).
	for _, c := range []struct {
		name       string
		group, job []*state.Spread
		dcW, rackW float64 // the weights' shares
	}{
		{"two group spreads, 60 and 20", []*state.Spread{dcSpread(60), rackSpread(20)}, nil, 60.0 / 80, 20.0 / 80},
		{"equal weights of 100", []*state.Spread{dcSpread(100), rackSpread(100)}, nil, 0.5, 0.5},
		{"a group spread and a job spread, 30 and 90", []*state.Spread{dcSpread(30)}, []*state.Spread{rackSpread(90)}, 30.0 / 120, 90.0 / 120},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			where := rackFleet(h)
			j := testJob("web", 4, withMaxParallel(4))
			j.Datacenters = []string{"dc1", "dc2"}
			j.TaskGroups[0].Spreads = c.group
			j.Spreads = c.job
			h.process(h.register(j))
			live := h.live("web")
			if len(live) != 4 {
				t.Fatalf("%d placed, want 4", len(live))
			}
			want := map[string]float64{
				"dc1/r1": 2.0/3*c.dcW + 0.5*c.rackW, "dc1/r2": 2.0/3*c.dcW + 0.5*c.rackW,
				"dc2/r1": 0.5 * c.rackW, "dc2/r2": 0.5 * c.rackW,
			}
			first := live[0]
			for _, a := range live {
				if a.CreateIndex < first.CreateIndex || (a.CreateIndex == first.CreateIndex && a.Name < first.Name) {
					first = a
				}
			}
			if first.Name != "web.web[0]" {
				t.Fatalf("first placement %s", first.Name)
			}
			seen := 0
			for _, s := range first.Metrics.ScoreMetaData {
				got, ok := s.Scores["allocation-spread"]
				if !ok {
					t.Errorf("node %s: no allocation-spread score in %v", where[s.NodeID], s.Scores)
					continue
				}
				seen++
				if w := want[where[s.NodeID]]; math.Abs(got-w) > 1e-9 {
					t.Errorf("node %s: allocation-spread %v, want %v", where[s.NodeID], got, w)
				}
			}
			if seen != 4 {
				t.Errorf("%d nodes scored, want all 4: %+v", seen, first.Metrics.ScoreMetaData)
			}
		})
	}
}

// A failed allocation that its reschedule policy keeps (no attempts) has
// nothing running to update: a new job version whose change could be
// applied in place (here the kill timeout) stops and replaces it, and
// updates the running allocation beside it in place. A plan updating the
// failed one in place is refused by the plan applier ("is gone or
// stopped"), so that evaluation fails and the job stays at its old
// version. (Nomad's genericAllocUpdateFn never updates a terminal
// allocation in place either: it leaves it as it is.)
func TestRuleFailedAllocationReplacedNotUpdatedInPlace(t *testing.T) {
	noReschedule := withReschedule(state.ReschedulePolicy{Attempts: 0, Unlimited: false})
	h := newHarness(t)
	h.nodes(2, 0, 0)
	h.process(h.register(testJob("web", 2, noReschedule, withMaxParallel(2))))
	h.settle("web")
	live := h.live("web")
	if len(live) != 2 {
		t.Fatalf("%d live, want 2", len(live))
	}
	running, failed := live[0], live[1]
	h.report([]*state.Allocation{failed}, state.AllocClientStatusFailed, nil)
	h.run("web", state.EvalTriggerRetryFailedAlloc)
	if a := h.alloc(failed.ID); a.NextAllocation != "" || a.FollowupEvalID != "" || a.DesiredStatus != state.AllocDesiredStatusRun {
		t.Fatalf("failure without reschedule attempts was acted on: next %q followup %q desired %s", a.NextAllocation, a.FollowupEvalID, a.DesiredStatus)
	}

	v2 := testJob("web", 2, noReschedule, withMaxParallel(2), func(j *state.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute })
	plans := len(h.plans)
	e := h.process(h.register(v2))
	if e.Status != state.EvalStatusComplete || len(h.refused) != 0 || len(h.plans) != plans+1 {
		t.Fatalf("evaluation of the new version: %s %q, %d plans applied, refused %q", e.Status, e.StatusDescription, len(h.plans)-plans, h.refused)
	}
	version := h.job("web").Version
	for _, ip := range h.plans[plans].InPlace {
		if ip.AllocID == failed.ID {
			t.Fatalf("the failed allocation was updated in place to version %d", ip.JobVersion)
		}
	}
	if got := h.alloc(running.ID); got.JobVersion != version || got.DesiredStatus != state.AllocDesiredStatusRun {
		t.Errorf("running allocation: version %d desired %s, want updated in place to %d", got.JobVersion, got.DesiredStatus, version)
	}
	old := h.alloc(failed.ID)
	if old.JobVersion == version || old.DesiredStatus != state.AllocDesiredStatusStop {
		t.Fatalf("failed allocation: version %d desired %s, want stopped at its version %d", old.JobVersion, old.DesiredStatus, failed.JobVersion)
	}
	var repl *state.Allocation
	for _, a := range h.live("web") {
		if a.Name == failed.Name {
			repl = a
		}
	}
	if repl == nil || repl.ID == failed.ID || repl.JobVersion != version {
		t.Fatalf("no replacement of %s at version %d: %+v", failed.Name, version, repl)
	}
	h.settle("web")
	if n := countBy(h.live("web"), func(a *state.Allocation) bool {
		return a.JobVersion == version && a.ClientStatus == state.AllocClientStatusRunning
	}); n != 2 {
		t.Errorf("%d running allocations of version %d, want 2", n, version)
	}
}
