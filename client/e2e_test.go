package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// TestClientEndToEnd runs a pool of clients against a full agent (broker,
// scheduler, deployment watcher): a job's deployment places four
// allocations, the clients run them and report health, and the deployment
// succeeds.
func TestClientEndToEnd(t *testing.T) {
	ts := servertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := client.StartPool(ctx, 3, client.Config{Servers: []string{ts.URL}, TestDrivers: true, Resources: api.Resources{CPU: 4000, MemoryMB: 8000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		<-c.Registered()
	}
	now := time.Now()
	job := &state.Job{Namespace: "default", ID: "e2e", Name: "e2e", Type: "service", Priority: 50, Datacenters: []string{"dc1"},
		Update:     &state.UpdateStrategy{MaxParallel: 2, HealthCheck: "task_states", MinHealthyTime: 100 * time.Millisecond, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute},
		TaskGroups: []*state.TaskGroup{{Name: "web", Count: 4, Tasks: []*state.Task{{Name: "t", Driver: "mock_driver", Config: map[string]any{}, Resources: &state.Resources{CPU: 100, MemoryMB: 100}}}}}}
	ev := &state.Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "e2e", Type: "service", Priority: 50, TriggeredBy: "job-register", Status: "pending", CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	if _, err := fsm.Apply(ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job, Eval: ev}); err != nil {
		t.Fatal(err)
	}
	ac, _ := api.NewClient(api.Config{Address: ts.URL})
	var idx uint64
	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		allocs, meta, err := ac.Allocations(ctx, &api.QueryOptions{WaitIndex: idx, WaitTime: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		idx = meta.LastIndex
		healthy := 0
		for _, a := range allocs {
			if a.DeploymentStatus.IsHealthy() && a.ClientStatus == "running" {
				healthy++
			}
		}
		_, ds, _ := ts.Server.State().DeploymentsByJob(nil, "default", "e2e")
		st := ""
		for _, d := range ds {
			st += d.Status + " "
		}
		last = fmt.Sprintf("%d allocations, %d healthy and running; deployments: %s", len(allocs), healthy, st)
		if healthy == 4 && st == "successful " {
			return
		}
	}
	t.Fatalf("the deployment did not succeed: %s", last)
}
