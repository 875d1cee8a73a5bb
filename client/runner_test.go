package client_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/state"
)

func TestClientRunsAllocToHealthyThenStops(t *testing.T) {
	e := newEnv(t)
	update := &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthTaskStates, MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
	job := e.job(t, "web", update, nil, map[string]any{"kill_after": "3s", "stdout_string": "hello"})
	allocID, depID := e.place(t, job)

	a := e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusRunning })
	ts := task(a)
	if ts.State != state.TaskStateRunning || ts.Failed || !ts.StartedAt.Equal(start) || !ts.FinishedAt.IsZero() ||
		!sameTypes(eventTypes(ts), "Received", "Task Setup", "Started") || a.ClientDescription != "Tasks are running" {
		t.Fatalf("running alloc: %s %+v", describe(a), ts)
	}
	if a.DeploymentStatus != nil {
		t.Fatalf("health reported before MinHealthyTime: %+v", a.DeploymentStatus)
	}

	// Healthy once the task has run for MinHealthyTime.
	e.clock.Advance(10 * time.Second)
	a = e.waitAlloc(t, allocID, "healthy", func(a *api.Allocation) bool { return a.DeploymentStatus.IsHealthy() })
	if !a.DeploymentStatus.Timestamp.Equal(start.Add(10 * time.Second)) {
		t.Errorf("health timestamp %v", a.DeploymentStatus.Timestamp)
	}
	_, d, _ := e.ts.Server.State().Deployment(nil, depID)
	if g := d.TaskGroups["web"]; g.HealthyAllocs != 1 || g.UnhealthyAllocs != 0 {
		t.Errorf("deployment counters: %+v", g)
	}

	// Stopped by the servers: Killing, then Killed after kill_after.
	e.stop(t, job, allocID)
	a = e.waitAlloc(t, allocID, "killing", func(a *api.Allocation) bool {
		ev := eventTypes(task(a))
		return len(ev) > 0 && ev[len(ev)-1] == state.TaskKilling
	})
	if a.ClientStatus != state.AllocClientStatusRunning {
		t.Errorf("killing alloc: %s", describe(a))
	}
	e.clock.Advance(3 * time.Second)
	a = e.waitAlloc(t, allocID, "complete", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusComplete })
	ts = task(a)
	if ts.State != state.TaskStateDead || ts.Failed || !ts.FinishedAt.Equal(start.Add(13*time.Second)) ||
		!sameTypes(eventTypes(ts), "Received", "Task Setup", "Started", "Killing", "Killed") {
		t.Errorf("stopped alloc: %s %+v", describe(a), ts)
	}
	if ev := ts.Events[3]; ev.KillTimeout != 5*time.Second {
		t.Errorf("Killing event: %+v", ev)
	}
}

func TestClientRestartPolicyThenFailure(t *testing.T) {
	e := newEnv(t)
	restart := &state.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 2 * time.Second, Mode: "fail"}
	job := e.job(t, "batchy", nil, restart, map[string]any{"run_for": "5s", "exit_code": 3, "exit_err_msg": "boom"})
	allocID, _ := e.place(t, job)
	e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusRunning })

	// run_for ends with exit code 3: restarted within policy after Delay.
	e.clock.Advance(5 * time.Second)
	a := e.waitAlloc(t, allocID, "restarting", func(a *api.Allocation) bool { return task(a).Restarts == 1 })
	ts := task(a)
	if ts.State != state.TaskStatePending || a.ClientStatus != state.AllocClientStatusPending ||
		!sameTypes(eventTypes(ts), "Received", "Task Setup", "Started", "Terminated", "Restarting") {
		t.Fatalf("restarting: %s", describe(a))
	}
	if term := ts.Events[3]; term.ExitCode != 3 || term.Message != "boom" {
		t.Errorf("Terminated event: %+v", term)
	}
	if r := ts.Events[4]; r.RestartReason != "Restart within policy" || r.StartDelay != int64(2*time.Second) {
		t.Errorf("Restarting event: %+v", r)
	}
	e.clock.Advance(2 * time.Second)
	a = e.waitAlloc(t, allocID, "running again", func(a *api.Allocation) bool { return task(a).State == state.TaskStateRunning })
	if !task(a).StartedAt.Equal(start.Add(7 * time.Second)) {
		t.Errorf("StartedAt after restart: %v", task(a).StartedAt)
	}

	// The second exit exceeds the policy: the task and the allocation fail.
	e.clock.Advance(5 * time.Second)
	a = e.waitAlloc(t, allocID, "failed", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusFailed })
	ts = task(a)
	want := []string{"Received", "Task Setup", "Started", "Terminated", "Restarting", "Started", "Terminated", "Not Restarting"}
	if ts.State != state.TaskStateDead || !ts.Failed || !ts.FinishedAt.Equal(start.Add(12*time.Second)) || !sameTypes(eventTypes(ts), want...) {
		t.Fatalf("failed alloc: %s", describe(a))
	}
	if nr := ts.Events[7]; !nr.FailsTask || nr.RestartReason != `Exceeded allowed attempts 1 in interval 1h0m0s and mode is "fail"` {
		t.Errorf("Not Restarting event: %+v", nr)
	}
	// The servers replace it: an alloc-failure evaluation was written with the failure.
	_, evals, _ := e.ts.Server.State().EvalsByJob(nil, "default", "batchy")
	found := false
	for _, ev := range evals {
		found = found || (ev.TriggeredBy == state.EvalTriggerRetryFailedAlloc && ev.Priority == 50)
	}
	if !found {
		t.Errorf("no alloc-failure evaluation: %+v", evals)
	}
}

func TestClientStartErrorAndHealthDeadline(t *testing.T) {
	e := newEnv(t)
	failing := e.job(t, "broken", nil, nil, map[string]any{"start_error": "no such image"})
	brokenID, _ := e.place(t, failing)
	a := e.waitAlloc(t, brokenID, "failed", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusFailed })
	ts := task(a)
	if !ts.Failed || !sameTypes(eventTypes(ts), "Received", "Task Setup", "Driver Failure") || ts.Events[2].DriverError != "no such image" {
		t.Errorf("start_error: %s", describe(a))
	}

	// A task that never starts within HealthyDeadline makes the allocation unhealthy.
	update := &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthChecks, MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
	slow := e.job(t, "slow", update, nil, map[string]any{"start_block_for": "1h"})
	slowID, depID := e.place(t, slow)
	e.waitAlloc(t, slowID, "set up", func(a *api.Allocation) bool { return len(task(a).Events) == 2 })
	e.clock.Advance(time.Minute)
	a = e.waitAlloc(t, slowID, "unhealthy", func(a *api.Allocation) bool { return a.DeploymentStatus.IsUnhealthy() })
	if a.ClientStatus != state.AllocClientStatusPending {
		t.Errorf("slow alloc: %s", describe(a))
	}
	_, d, _ := e.ts.Server.State().Deployment(nil, depID)
	if g := d.TaskGroups["web"]; g.UnhealthyAllocs != 1 {
		t.Errorf("deployment counters: %+v", g)
	}

	// Bad Config values fail validation.
	bad := e.job(t, "bad", nil, nil, map[string]any{"run_for": "soon"})
	badID, _ := e.place(t, bad)
	a = e.waitAlloc(t, badID, "failed validation", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusFailed })
	if ev := task(a).Events; len(ev) != 2 || ev[1].Type != state.TaskFailedValidation || ev[1].ValidationError != `run_for: "soon" is not a duration` {
		t.Errorf("validation: %s", describe(a))
	}
}
