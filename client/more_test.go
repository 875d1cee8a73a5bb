package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

func TestClientManualHealthNeverReported(t *testing.T) {
	e := newEnv(t)
	update := &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthManual, MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
	job := e.job(t, "manual", update, nil, nil)
	allocID, _ := e.place(t, job)
	e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusRunning })
	e.clock.Advance(2 * time.Minute)
	// Reports are cumulative: had health been decided, the stop's report would carry it.
	e.stop(t, job, allocID)
	a := e.waitAlloc(t, allocID, "complete", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusComplete })
	if a.DeploymentStatus != nil {
		t.Errorf("manual health check reported %+v", a.DeploymentStatus)
	}
}

func TestClientSiblingFailureKillsTheOthers(t *testing.T) {
	e := newEnv(t)
	job := &state.Job{
		Namespace: "default", ID: "pair", Name: "pair", Type: state.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{Name: "web", Count: 1,
			RestartPolicy: &state.RestartPolicy{Attempts: 0, Interval: time.Hour, Delay: time.Second, Mode: "fail"},
			Tasks: []*state.Task{
				{Name: "server", Driver: "mock", Config: map[string]any{}},
				{Name: "sidecar", Driver: "mock_driver", Config: map[string]any{"run_for": float64(time.Second), "exit_code": "1"}},
			}}},
	}
	if _, err := fsm.Apply(e.ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	_, stored, _ := e.ts.Server.State().Job(nil, "default", "pair")
	allocID, _ := e.place(t, stored)
	e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusRunning })
	e.clock.Advance(time.Second)
	a := e.waitAlloc(t, allocID, "failed", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusFailed })
	side, srv := a.TaskStates["sidecar"], a.TaskStates["server"]
	if !side.Failed || !sameTypes(eventTypes(side), "Received", "Task Setup", "Started", "Terminated", "Not Restarting") ||
		side.Events[4].RestartReason != "Policy allows no restarts" {
		t.Errorf("sidecar: %s", describe(a))
	}
	if srv.Failed || srv.State != state.TaskStateDead ||
		!sameTypes(eventTypes(srv), "Received", "Task Setup", "Started", "Sibling Task Failed", "Killing", "Killed") ||
		srv.Events[3].FailedSibling != "sidecar" {
		t.Errorf("server: %s", describe(a))
	}
}

func TestClientTriesTheNextServer(t *testing.T) {
	e := newEnv(t)
	// The first server refuses connections; the client moves on to the second.
	c, err := client.New(client.Config{Servers: []string{"http://127.0.0.1:1", e.api.Address()}, NodeName: "sim-2", TestDrivers: true, Resources: api.Resources{CPU: 1000, MemoryMB: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		select { // a client that ignored its cancellation fails the test rather than hanging it
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the client did not stop within 30 s of its context's cancellation")
		}
	}()
	select {
	case <-c.Registered():
	case err := <-done:
		t.Fatalf("client stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the client did not register through the second server")
	}
	if _, n, err := e.ts.Server.State().Node(nil, c.NodeID()); err != nil || n == nil || n.Name != "sim-2" || n.Status != state.NodeStatusReady {
		t.Fatalf("node: %+v %v", n, err)
	}
	if _, err := client.New(client.Config{}); err == nil {
		t.Error("a client without servers was accepted")
	}
	if _, err := client.New(client.Config{Servers: []string{"x"}, NodeID: "nope"}); err == nil {
		t.Error("a malformed node ID was accepted")
	}
}

func TestClientRestartDelayMode(t *testing.T) {
	e := newEnv(t)
	restart := &state.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: "delay"}
	job := e.job(t, "delayed", nil, restart, map[string]any{"run_for": "1s"})
	allocID, _ := e.place(t, job)
	e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == state.AllocClientStatusRunning })
	// Exit at 1s (restart within policy, 1s delay), start at 2s, exit at 3s:
	// the second attempt exceeds the policy, so the restart waits for the
	// interval that began at 1s to end (at 61s).
	e.clock.Advance(3 * time.Second)
	a := e.waitAlloc(t, allocID, "delayed", func(a *api.Allocation) bool { return task(a).Restarts == 2 })
	ts := task(a)
	last := ts.Events[len(ts.Events)-1]
	if last.Type != state.TaskRestarting || last.StartDelay != int64(58*time.Second) ||
		last.RestartReason != `Exceeded allowed attempts 1 in interval 1m0s and mode is "delay"` || ts.Failed {
		t.Fatalf("delayed restart: %s %+v", describe(a), last)
	}
	e.clock.Advance(58 * time.Second)
	a = e.waitAlloc(t, allocID, "running again", func(a *api.Allocation) bool { return task(a).State == state.TaskStateRunning })
	if !task(a).StartedAt.Equal(start.Add(61 * time.Second)) {
		t.Errorf("StartedAt %v", task(a).StartedAt)
	}
}
