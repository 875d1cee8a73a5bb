package agent_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// noRestart fails an allocation at its task's first exit (no in-place restarts).
var noRestart = map[string]any{"Attempts": 0, "Interval": int64(time.Minute), "Delay": int64(time.Second), "Mode": "fail"}

func reschedule(attempts int, unlimited bool, delay time.Duration) map[string]any {
	p := map[string]any{"Attempts": attempts, "Unlimited": unlimited, "Delay": int64(delay), "DelayFunction": "constant"}
	if attempts > 0 {
		p["Interval"] = int64(time.Hour)
	}
	return p
}

// waitAllocs polls the job's allocations until cond holds.
func waitAllocs(t *testing.T, ts *servertest.TestServer, what string, timeout time.Duration, cond func([]*state.Allocation) bool) []*state.Allocation {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var all []*state.Allocation
	for time.Now().Before(deadline) {
		if all = allocs(t, ts); cond(all) {
			return all
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; allocations: %+v", what, all)
	return nil
}

func jobEvals(t *testing.T, ts *servertest.TestServer) []*api.Evaluation {
	t.Helper()
	var evals []*api.Evaluation
	ts.Do(t, http.MethodGet, "/v1/job/web/evaluations", "").JSON(t, &evals)
	return evals
}

// A task that fails before it is healthy, under a 20 s progress deadline:
// the watcher lets it be rescheduled (a replacement naming its predecessor,
// with a tracker), and the deployment fails only at the deadline, with
// Nomad's text.
func TestE2ERescheduleUntilProgressDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 1,
		update: update(map[string]any{"ProgressDeadline": int64(20 * time.Second), "HealthyDeadline": int64(10 * time.Second)}),
		config: map[string]any{"start_error": "no such image"},
		group:  map[string]any{"RestartPolicy": noRestart, "ReschedulePolicy": reschedule(0, true, 5*time.Second)}})
	start := time.Now()
	all := waitAllocs(t, ts, "a rescheduled replacement", 15*time.Second, func(all []*state.Allocation) bool {
		for _, a := range all {
			if a.PreviousAllocation != "" {
				return true
			}
		}
		return false
	})
	d, _ := latest(t, ts, 0)
	if d.Status != state.DeploymentStatusRunning {
		t.Fatalf("deployment %s %q after %v, want running until the deadline", d.Status, d.StatusDescription, time.Since(start))
	}
	byID := map[string]*state.Allocation{}
	for _, a := range all {
		byID[a.ID] = a
	}
	for _, a := range all {
		if a.PreviousAllocation == "" {
			continue
		}
		prev := byID[a.PreviousAllocation]
		var full state.Allocation
		ts.Do(t, http.MethodGet, "/v1/allocation/"+a.ID, "").JSON(t, &full)
		tr := full.RescheduleTracker
		if prev == nil || prev.NextAllocation != a.ID || tr == nil || len(tr.Events) == 0 ||
			tr.Events[len(tr.Events)-1].PrevAllocID != prev.ID || tr.Events[len(tr.Events)-1].Delay != 5*time.Second || full.DeploymentID != d.ID {
			t.Errorf("replacement %s: previous %+v, tracker %+v, deployment %s", a.ID, prev, tr, full.DeploymentID)
		}
	}
	d = waitDeployment(t, ts, 0, "failed at the deadline", status(state.DeploymentStatusFailed))
	if d.StatusDescription != state.DeploymentStatusDescriptionProgressDeadline {
		t.Errorf("description %q, want %q", d.StatusDescription, state.DeploymentStatusDescriptionProgressDeadline)
	}
}

// Attempts 1 within an hour under a 10-minute progress deadline: the task
// that fails before it is healthy is marked and replaced once; when the
// replacement fails too, no attempt is left and the deployment fails at
// once with "Failed due to unhealthy allocations", long before its
// deadline (Nomad's shouldFailEarly), and nothing more is placed.
func TestE2ERescheduleSpentFailsDeploymentEarly(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 1,
		update: update(map[string]any{"ProgressDeadline": int64(10 * time.Minute), "HealthyDeadline": int64(10 * time.Second)}),
		config: map[string]any{"start_error": "no such image"},
		group:  map[string]any{"RestartPolicy": noRestart, "ReschedulePolicy": reschedule(1, false, 5*time.Second)}})
	d := waitDeployment(t, ts, 0, "failed on the replacement's failure", status(state.DeploymentStatusFailed))
	if d.StatusDescription != state.DeploymentStatusDescriptionFailedAllocations {
		t.Errorf("description %q, want %q", d.StatusDescription, state.DeploymentStatusDescriptionFailedAllocations)
	}
	settle(t, ts)
	all := allocs(t, ts)
	if len(all) != 2 {
		t.Fatalf("%d allocations, want the first and its one replacement", len(all))
	}
	for _, a := range all {
		var full state.Allocation
		ts.Do(t, http.MethodGet, "/v1/allocation/"+a.ID, "").JSON(t, &full)
		events, wantEvents := 0, 0
		if full.RescheduleTracker != nil {
			events = len(full.RescheduleTracker.Events)
		}
		if full.PreviousAllocation != "" {
			wantEvents = 1 // the replacement
		}
		if full.DeploymentID != d.ID || full.DeploymentStatus == nil || !full.DeploymentStatus.IsUnhealthy() || events != wantEvents {
			t.Errorf("allocation %s: deployment %s, status %+v, previous %q, %d reschedule events",
				a.ID, full.DeploymentID, full.DeploymentStatus, full.PreviousAllocation, events)
		}
	}
}

// Attempts 2 within an hour: a task that becomes healthy (its deployment
// succeeds) and then fails is replaced twice; three allocations failed in
// turn, with trackers of 0, 1 and 2 events, and the job is dead. (A failed
// allocation of a failed deployment is never rescheduled, as in Nomad.)
func TestE2ERescheduleAttemptsExhausted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t)
	// The task runs past the watcher's batch of health reports (Nomad's 1 s,
	// deployments.PerJobEvalBatch), whose evaluation marks the deployment
	// successful before the task fails.
	register(t, ts, jobSpec{count: 1, update: update(nil),
		config: map[string]any{"run_for": (deployments.PerJobEvalBatch + 2*time.Second).String(), "exit_code": 1},
		group:  map[string]any{"RestartPolicy": noRestart, "ReschedulePolicy": reschedule(2, false, 5*time.Second)}})
	all := waitAllocs(t, ts, "three failed allocations", 45*time.Second, func(all []*state.Allocation) bool {
		failed := 0
		for _, a := range all {
			if a.ClientStatus == state.AllocClientStatusFailed {
				failed++
			}
		}
		return failed == 3
	})
	settle(t, ts)
	all = allocs(t, ts)
	if len(all) != 3 {
		t.Fatalf("%d allocations, want 3", len(all))
	}
	events := map[int]bool{}
	for _, a := range all {
		n := 0
		if a.RescheduleTracker != nil {
			n = len(a.RescheduleTracker.Events)
		}
		events[n] = true
		if n == 2 && (a.NextAllocation != "" || a.FollowupEvalID != "") {
			t.Errorf("the last allocation has a follow-up: next %q eval %q", a.NextAllocation, a.FollowupEvalID)
		}
	}
	if !events[0] || !events[1] || !events[2] {
		t.Errorf("tracker sizes %v, want 0, 1 and 2", events)
	}
	var job state.Job
	ts.Do(t, http.MethodGet, "/v1/job/web", "").JSON(t, &job)
	if job.Status != state.JobStatusDead {
		t.Errorf("job status %q, want dead", job.Status)
	}
}

// Nomad's default policy (30 s, exponential): a healthy allocation that
// later fails leaves a delayed alloc-failure evaluation and no immediate
// replacement.
func TestE2ERescheduleDefaultPolicyDelays(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 1, update: update(nil),
		config: map[string]any{"run_for": "1500ms", "exit_code": 1},
		group:  map[string]any{"RestartPolicy": noRestart}})
	all := waitAllocs(t, ts, "the failure", 20*time.Second, func(all []*state.Allocation) bool {
		return len(all) == 1 && all[0].ClientStatus == state.AllocClientStatusFailed && all[0].FollowupEvalID != ""
	})
	failed := all[0]
	var followup *api.Evaluation
	for _, e := range jobEvals(t, ts) {
		if e.ID == failed.FollowupEvalID {
			followup = e
		}
	}
	if followup == nil || followup.Status != state.EvalStatusPending || followup.TriggeredBy != state.EvalTriggerRetryFailedAlloc ||
		followup.StatusDescription != "created for delayed rescheduling" {
		t.Fatalf("follow-up evaluation %+v", followup)
	}
	if wait := time.Until(followup.WaitUntil); wait < 25*time.Second || wait > 31*time.Second {
		t.Errorf("follow-up due in %v, want about 30s", wait)
	}
	time.Sleep(time.Second)
	if n := len(allocs(t, ts)); n != 1 {
		t.Errorf("%d allocations a second after the failure, want no replacement yet", n)
	}
	var job state.Job
	ts.Do(t, http.MethodGet, "/v1/job/web", "").JSON(t, &job)
	if job.Status != state.JobStatusPending {
		t.Errorf("job status %q while the follow-up waits, want pending", job.Status)
	}
}
