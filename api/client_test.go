package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// Every read and write of the Go client against a real agent with one
// simulated node: a minimal job (server defaults for the rest) deploys,
// is read back through each endpoint, marked stable, reverted and purged.
func TestClientEndpoints(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	ac, err := api.NewClient(api.Config{Address: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	job := &api.Job{ID: "web", Datacenters: []string{"dc1"}, Update: &api.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 1},
		TaskGroups: []*api.TaskGroup{{Name: "app", Count: 2, Tasks: []*api.Task{{Name: "srv", Driver: "mock_driver",
			Config: map[string]any{"run_for": "1h"}}}}}}
	reg, err := ac.RegisterJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if reg.EvalID == "" || reg.JobModifyIndex == 0 {
		t.Fatalf("register: %+v", reg)
	}
	// The deployment, followed with blocking queries.
	var d *api.Deployment
	var index uint64
	for d == nil || d.Status != api.DeploymentStatusSuccessful {
		var meta *api.QueryMeta
		d, meta, err = ac.JobLatestDeployment(ctx, "web", &api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatalf("latest deployment: %v", err)
		}
		index = meta.LastIndex
	}
	got, _, err := ac.Job(ctx, "web", nil)
	if err != nil || got.Priority != 50 || got.Update == nil || got.Update.Stagger != 30*time.Second || got.TaskGroups[0].Count != 2 {
		t.Fatalf("job: %+v %v", got, err)
	}
	if list, _, err := ac.Jobs(ctx, nil); err != nil || len(list) != 1 || list[0].ID != "web" {
		t.Errorf("jobs: %+v %v", list, err)
	}
	if deps, _, err := ac.Deployments(ctx, nil); err != nil || len(deps) != 1 || deps[0].ID != d.ID {
		t.Errorf("deployments: %+v %v", deps, err)
	}
	if one, _, err := ac.Deployment(ctx, d.ID, nil); err != nil || one.TaskGroups["app"].HealthyAllocs != 2 {
		t.Errorf("deployment: %+v %v", one, err)
	}
	if hist, _, err := ac.DeploymentHistory(ctx, d.ID, nil); err != nil || len(hist) == 0 || hist[len(hist)-1].NewStatus != api.DeploymentStatusSuccessful {
		t.Errorf("history: %+v %v", hist, err)
	}
	allocs, _, err := ac.DeploymentAllocations(ctx, d.ID, nil)
	if err != nil || len(allocs) != 2 || !allocs[0].DeploymentStatus.IsHealthy() {
		t.Fatalf("deployment allocations: %+v %v", allocs, err)
	}
	a, _, err := ac.Allocation(ctx, allocs[0].ID, nil)
	if err != nil || a.ClientStatus != api.AllocClientStatusRunning || a.TaskStates["srv"].State != api.TaskStateRunning {
		t.Errorf("allocation: %+v %v", a, err)
	}
	if list, _, err := ac.Allocations(ctx, &api.QueryOptions{Params: map[string]string{"prefix": allocs[0].ID[:4]}}); err != nil || len(list) == 0 {
		t.Errorf("allocations by prefix: %+v %v", list, err)
	}
	if list, _, err := ac.JobAllocations(ctx, "web", nil); err != nil || len(list) != 2 {
		t.Errorf("job allocations: %d %v", len(list), err)
	}
	evals, _, err := ac.JobEvaluations(ctx, "web", nil)
	if err != nil || len(evals) == 0 {
		t.Fatalf("job evaluations: %+v %v", evals, err)
	}
	if e, _, err := ac.Evaluation(ctx, reg.EvalID, nil); err != nil || e.JobID != "web" {
		t.Errorf("evaluation: %+v %v", e, err)
	}
	// The placements are in one of the job's evaluations (the first may
	// have run before the node registered, and been blocked).
	placed := 0
	for _, e := range evals {
		list, _, err := ac.EvaluationAllocations(ctx, e.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		placed += len(list)
	}
	if placed != 2 {
		t.Errorf("evaluation allocations: %d", placed)
	}
	if list, _, err := ac.Evaluations(ctx, nil); err != nil || len(list) == 0 {
		t.Errorf("evaluations: %d %v", len(list), err)
	}
	nodes, _, err := ac.Nodes(ctx, nil)
	if err != nil || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
		t.Fatalf("nodes: %+v %v", nodes, err)
	}
	if n, _, err := ac.Node(ctx, nodes[0].ID, nil); err != nil || n.Drivers["mock_driver"] == nil {
		t.Errorf("node: %+v %v", n, err)
	}
	if list, _, err := ac.NodeAllocs(ctx, nodes[0].ID, nil); err != nil || len(list) != 2 {
		t.Errorf("node allocations: %d %v", len(list), err)
	}

	// Writes: a terminal deployment refuses a pause with a typed error.
	if _, err := ac.PauseDeployment(ctx, d.ID, true); err == nil {
		t.Error("pausing a successful deployment worked")
	} else if e, ok := err.(*api.Error); !ok || e.StatusCode != 409 {
		t.Errorf("pause error: %#v", err)
	}
	if _, err := ac.FailDeployment(ctx, "not-a-uuid"); err == nil || err.(*api.Error).StatusCode != 400 {
		t.Errorf("fail with a malformed ID: %v", err)
	}
	job.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"}
	if _, err := ac.RegisterJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	if res, err := ac.SetJobStable(ctx, "web", 1, true); err != nil || res.Index == 0 {
		t.Errorf("stable: %+v %v", res, err)
	}
	if res, err := ac.RevertJob(ctx, "web", 0, nil); err != nil || res.EvalID == "" {
		t.Errorf("revert: %+v %v", res, err)
	}
	versions, _, err := ac.JobVersions(ctx, "web", nil)
	if err != nil || len(versions) != 3 || versions[0].Version != 2 {
		t.Errorf("versions: %d %v", len(versions), err)
	}
	if _, err := ac.DeregisterJob(ctx, "web", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ac.Job(ctx, "web", nil); !api.IsNotFound(err) {
		t.Errorf("job after a purge: %v", err)
	}
}
