package scheduler

import (
	"sort"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// runDue plays the broker's timer: it moves the clock to each pending
// evaluation of the job that waits (WaitUntil), earliest first, and
// processes it. It answers how many it ran.
func (h *harness) runDue(jobID string) int {
	h.t.Helper()
	ran := 0
	for range 20 {
		_, evals, err := h.store.EvalsByJob(nil, "default", jobID)
		if err != nil {
			h.t.Fatal(err)
		}
		var due []*state.Evaluation
		for _, e := range evals {
			if e.Status == state.EvalStatusPending && e.WaitUntil > 0 {
				due = append(due, e)
			}
		}
		if len(due) == 0 {
			return ran
		}
		sort.Slice(due, func(i, j int) bool { return due[i].WaitUntil < due[j].WaitUntil })
		if at := time.Unix(0, due[0].WaitUntil); at.After(h.now) {
			h.now = at
		}
		h.process(due[0])
		ran++
	}
	h.t.Fatalf("job %s: follow-up evaluations keep coming\n%s", jobID, dump(h))
	return ran
}

// markReschedule sets DesiredTransition.Reschedule, as the deployment
// watcher does for an unhealthy allocation of a group with a progress deadline.
func (h *harness) markReschedule(ids ...string) {
	h.t.Helper()
	tr := map[string]state.DesiredTransition{}
	for _, id := range ids {
		tr[id] = state.DesiredTransition{Reschedule: ptr(true)}
	}
	if err := h.store.AllocsDesiredTransition(h.next(), tr, nil); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) alloc(id string) *state.Allocation {
	h.t.Helper()
	_, a, err := h.store.Alloc(nil, id)
	if err != nil || a == nil {
		h.t.Fatalf("alloc %s: %v %v", id, a, err)
	}
	return a
}

func withReschedule(p state.ReschedulePolicy) jobOpt {
	return func(j *state.Job) { j.TaskGroups[0].ReschedulePolicy = &p }
}

// settledFailure is a job of one allocation on two nodes whose deployment
// succeeded, and whose allocation then failed on its client.
func settledFailure(t *testing.T, opts ...jobOpt) (*harness, *state.Allocation) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	h.process(h.register(testJob("web", 1, opts...)))
	h.settle("web")
	failed := h.live("web")[0]
	h.report([]*state.Allocation{failed}, state.AllocClientStatusFailed, nil)
	return h, h.alloc(failed.ID)
}

// Nomad's default policy (Delay 30s, exponential, unlimited): the failure
// gets a follow-up evaluation due 30 s after it failed, triggered by
// alloc-failure, and nothing is placed before then.
func TestRescheduleDefaultPolicyWaitsForDelay(t *testing.T) {
	h, failed := settledFailure(t)
	failTime := failed.LastEventTime()
	// The follow-up carries the job's ModifyIndex as the scheduler read it
	// (Nomad's createLostLaterEvals), which its status changes moved past
	// its JobModifyIndex: past that, before the plan that wrote it.
	before := h.job("web")
	if before.ModifyIndex == before.JobModifyIndex {
		t.Fatalf("job modify index %d: the status changes should have moved ModifyIndex", before.ModifyIndex)
	}
	e := h.run("web", state.EvalTriggerRetryFailedAlloc)
	if e.Status != state.EvalStatusComplete {
		t.Fatalf("eval %s %q", e.Status, e.StatusDescription)
	}
	a := h.alloc(failed.ID)
	if a.DesiredStatus != state.AllocDesiredStatusRun || a.NextAllocation != "" || a.FollowupEvalID == "" {
		t.Fatalf("failed alloc after the first evaluation: desired %s next %q followup %q", a.DesiredStatus, a.NextAllocation, a.FollowupEvalID)
	}
	f := h.eval(a.FollowupEvalID)
	if f.Status != state.EvalStatusPending || f.TriggeredBy != state.EvalTriggerRetryFailedAlloc ||
		f.StatusDescription != "created for delayed rescheduling" || f.PreviousEval != e.ID ||
		f.JobModifyIndex < before.ModifyIndex || f.JobModifyIndex >= f.CreateIndex ||
		time.Unix(0, f.WaitUntil).Sub(failTime) != 30*time.Second {
		t.Fatalf("follow-up %+v (failed at %v)", f, failTime)
	}
	if all := h.allocs("web"); len(all) != 1 || all[0].ID != failed.ID {
		t.Fatalf("placed before the delay: %v", names(all))
	}
	// A second evaluation before the delay creates no second follow-up.
	h.run("web", state.EvalTriggerNodeUpdate)
	if got := h.alloc(failed.ID).FollowupEvalID; got != f.ID {
		t.Fatalf("follow-up changed to %s", got)
	}
	if job := h.job("web"); job.Status != state.JobStatusPending {
		t.Errorf("job status %q while its only allocation failed and a follow-up waits, want pending", job.Status)
	}
	// The broker runs it when due: the replacement names its predecessor,
	// carries a tracker, and avoids the node it failed on.
	if n := h.runDue("web"); n != 1 {
		t.Fatalf("ran %d follow-ups", n)
	}
	old := h.alloc(failed.ID)
	if old.DesiredStatus != state.AllocDesiredStatusStop || old.DesiredDescription != allocRescheduled || old.NextAllocation == "" {
		t.Fatalf("failed alloc after its follow-up: %+v", old)
	}
	repl := h.alloc(old.NextAllocation)
	if repl.Name != failed.Name || repl.PreviousAllocation != failed.ID || repl.NodeID == failed.NodeID {
		t.Fatalf("replacement %s prev %s on node %s (failed on %s)", repl.Name, repl.PreviousAllocation, repl.NodeName, failed.NodeName)
	}
	tr := repl.RescheduleTracker
	if tr == nil || len(tr.Events) != 1 || tr.Events[0].PrevAllocID != failed.ID || tr.Events[0].PrevNodeID != failed.NodeID || tr.Events[0].Delay != 30*time.Second {
		t.Fatalf("tracker %+v", tr)
	}
	if job := h.job("web"); job.Status != state.JobStatusRunning {
		t.Errorf("job status %q, want running", job.Status)
	}
}

// Attempts within Interval: three allocations fail in turn; the third has
// a tracker of two events and is not replaced; the job is dead.
func TestRescheduleAttemptsExhausted(t *testing.T) {
	policy := state.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	h, first := settledFailure(t, withReschedule(policy))
	chain := []*state.Allocation{first}
	for i := 0; i < 3; i++ {
		h.run("web", state.EvalTriggerRetryFailedAlloc)
		h.runDue("web")
		cur := h.alloc(chain[len(chain)-1].ID)
		if cur.NextAllocation == "" {
			break
		}
		next := h.alloc(cur.NextAllocation)
		h.report([]*state.Allocation{next}, state.AllocClientStatusRunning, nil)
		h.report([]*state.Allocation{next}, state.AllocClientStatusFailed, nil)
		chain = append(chain, h.alloc(next.ID))
	}
	if len(chain) != 3 {
		t.Fatalf("%d allocations in the chain, want 3", len(chain))
	}
	for i, a := range chain {
		a = h.alloc(a.ID)
		events := 0
		if a.RescheduleTracker != nil {
			events = len(a.RescheduleTracker.Events)
		}
		if events != i || a.ClientStatus != state.AllocClientStatusFailed {
			t.Errorf("allocation %d: %d tracker events, client %s", i, events, a.ClientStatus)
		}
		if i == 2 && (a.NextAllocation != "" || a.FollowupEvalID != "") {
			t.Errorf("the last allocation was replaced after the attempts were spent: next %q followup %q", a.NextAllocation, a.FollowupEvalID)
		}
		if i > 0 && (a.PreviousAllocation != chain[i-1].ID || a.RescheduleTracker.Events[i-1].Delay != 5*time.Second) {
			t.Errorf("allocation %d: previous %s, tracker %+v", i, a.PreviousAllocation, a.RescheduleTracker.Events)
		}
	}
	if job := h.job("web"); job.Status != state.JobStatusDead {
		t.Errorf("job status %q with its attempts spent, want dead", job.Status)
	}
}

// The delay functions, as Nomad's NextDelay computes them from the tracker.
func TestRescheduleNextDelay(t *testing.T) {
	events := func(delays ...time.Duration) *state.RescheduleTracker {
		tr := &state.RescheduleTracker{}
		for _, d := range delays {
			tr.Events = append(tr.Events, &state.RescheduleEvent{RescheduleTime: time.Unix(1000, 0).UnixNano(), Delay: d})
		}
		return tr
	}
	s := time.Second
	for _, c := range []struct {
		name    string
		policy  state.ReschedulePolicy
		tracker *state.RescheduleTracker
		want    time.Duration
	}{
		{"first reschedule takes Delay", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "exponential", MaxDelay: time.Minute}, nil, 5 * s},
		{"constant stays", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "constant"}, events(5*s, 5*s), 5 * s},
		{"exponential doubles the last", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "exponential", MaxDelay: time.Minute}, events(5*s, 10*s), 20 * s},
		{"exponential capped by MaxDelay", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "exponential", MaxDelay: 30 * s}, events(20 * s), 30 * s},
		{"fibonacci adds the last two", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "fibonacci", MaxDelay: time.Minute}, events(5*s, 5*s, 10*s), 15 * s},
		{"fibonacci with one event is Delay", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "fibonacci", MaxDelay: time.Minute}, events(5 * s), 5 * s},
		{"fibonacci starts over after a ceiling reset", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "fibonacci", MaxDelay: time.Minute}, events(time.Minute, 5*s), 5 * s},
	} {
		a := &state.Allocation{RescheduleTracker: c.tracker, ModifyTime: time.Unix(1010, 0).UnixNano()}
		if got := nextDelay(a, &c.policy); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Past MaxDelay, a failure long after the last reschedule resets to Delay.
	a := &state.Allocation{RescheduleTracker: events(30 * s), ModifyTime: time.Unix(5000, 0).UnixNano()}
	if got := nextDelay(a, &state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "exponential", MaxDelay: 30 * s}); got != 5*s {
		t.Errorf("reset after a long quiet: %v", got)
	}
}

// Inside an active deployment a failed allocation waits for the deployment
// watcher's mark (the progress deadline decides); once marked it is
// rescheduled as its policy says, within the deployment.
func TestRescheduleInsideActiveDeploymentNeedsMark(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	h.process(h.register(testJob("web", 2, withReschedule(state.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}))))
	d := h.latest("web")
	live := h.live("web")
	h.report(live[:1], state.AllocClientStatusFailed, no)
	h.run("web", state.EvalTriggerRetryFailedAlloc)
	a := h.alloc(live[0].ID)
	if a.NextAllocation != "" || a.FollowupEvalID != "" || a.DesiredStatus != state.AllocDesiredStatusRun {
		t.Fatalf("unmarked failure in an active deployment was acted on: next %q followup %q desired %s", a.NextAllocation, a.FollowupEvalID, a.DesiredStatus)
	}
	h.markReschedule(a.ID)
	h.run("web", state.EvalTriggerDeploymentWatcher)
	h.runDue("web")
	a = h.alloc(a.ID)
	if a.NextAllocation == "" {
		t.Fatalf("marked failure not rescheduled: %+v", a)
	}
	repl := h.alloc(a.NextAllocation)
	if repl.DeploymentID != d.ID || repl.RescheduleTracker == nil || len(repl.RescheduleTracker.Events) != 1 {
		t.Fatalf("replacement deployment %s (want %s), tracker %+v", repl.DeploymentID, d.ID, repl.RescheduleTracker)
	}
}

// Failures due within five seconds of each other share one follow-up.
func TestRescheduleFollowupsBatched(t *testing.T) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	h.process(h.register(testJob("web", 3)))
	h.settle("web")
	live := h.live("web")
	h.report(live, state.AllocClientStatusFailed, nil) // three reports, one second apart
	h.run("web", state.EvalTriggerRetryFailedAlloc)
	ids := map[string]bool{}
	for _, a := range live {
		ids[h.alloc(a.ID).FollowupEvalID] = true
	}
	if len(ids) != 1 || ids[""] {
		t.Fatalf("follow-ups %v, want one shared", ids)
	}
	h.runDue("web")
	if n := len(h.live("web")); n != 3 {
		t.Fatalf("%d live after the follow-up, want 3", n)
	}
}
