package http_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	nomad "github.com/hashicorp/nomad/api"
)

// The unmodified Nomad Go client works against the deployments API: it
// reads X-Nomad-* headers, sends X-Nomad-Token, and writes with PUT.
func TestNomadClientDeployments(t *testing.T) {
	const root = "0b7c3e1a-2f4d-4e5a-9b6c-7d8e9f0a1b2c"
	f := deploytest.Start(t, servertest.ACL(root))
	canary := newWorldOn(t, f, deploytest.Group{Name: "web", Count: 2, Canary: 1, ProgressDeadline: 10 * time.Minute})
	manualJob := f.RegisterJob(deploytest.Job("default", "manual", "v0", deploytest.Group{Name: "m", Count: 2, HealthCheck: "manual"}))
	manual, manualAllocs := f.Deploy(manualJob)
	plain := newWorldOn(t, f, deploytest.Group{Name: "p", Count: 1})

	client, err := nomad.NewClient(&nomad.Config{Address: f.URL, SecretID: root})
	if err != nil {
		t.Fatal(err)
	}
	deps := client.Deployments()

	list, meta, err := deps.List(nil)
	if err != nil || len(list) != 3 {
		t.Fatalf("List: %d %v", len(list), err)
	}
	if meta.LastIndex != deploymentsIndex(f) || !meta.KnownLeader {
		t.Errorf("List meta: %+v", meta)
	}
	// Paging: the client reads X-Nomad-NextToken.
	page, meta, err := deps.List(&nomad.QueryOptions{PerPage: 2})
	if err != nil || len(page) != 2 || meta.NextToken == "" {
		t.Fatalf("List page 1: %d %+v %v", len(page), meta, err)
	}
	rest, meta, err := deps.List(&nomad.QueryOptions{PerPage: 2, NextToken: meta.NextToken})
	if err != nil || len(rest) != 1 || meta.NextToken != "" {
		t.Fatalf("List page 2: %d %+v %v", len(rest), meta, err)
	}

	info, meta, err := deps.Info(canary.d.ID, nil)
	if err != nil || info.ID != canary.d.ID || info.JobID != "web" || info.Status != "running" ||
		info.TaskGroups["web"].DesiredCanaries != 1 || info.TaskGroups["web"].DesiredTotal != 2 || meta.LastIndex == 0 {
		t.Fatalf("Info: %+v %+v %v", info, meta, err)
	}
	if _, _, err := deps.Info(otherID, nil); err == nil || err.Error() != "Unexpected response code: 404 (deployment not found)" {
		t.Errorf("Info of unknown: %v", err)
	}

	allocs, _, err := deps.Allocations(canary.d.ID, nil)
	if err != nil || len(allocs) != 1 || allocs[0].ID != canary.allocs[0].ID || allocs[0].DeploymentStatus == nil || !allocs[0].DeploymentStatus.Canary {
		t.Fatalf("Allocations: %+v %v", allocs, err)
	}

	// Promote before the canary is healthy: the precondition's 409.
	if _, _, err := deps.PromoteAll(canary.d.ID, nil); err == nil || err.Error() != `Unexpected response code: 409 (Task group "web" has 0/1 healthy allocations)` {
		t.Errorf("PromoteAll before healthy: %v", err)
	}
	f.Health(true, canary.allocs[0].ID)
	up, wm, err := deps.PromoteAll(canary.d.ID, nil)
	if err != nil || up.EvalID == "" || up.EvalCreateIndex != up.DeploymentModifyIndex || wm.LastIndex != up.DeploymentModifyIndex {
		t.Fatalf("PromoteAll: %+v %+v %v", up, wm, err)
	}

	up, _, err = deps.SetAllocHealth(manual.ID, []string{manualAllocs[0].ID}, nil, nil)
	if err != nil || up.EvalID == "" || up.RevertedJobVersion != nil {
		t.Fatalf("SetAllocHealth: %+v %v", up, err)
	}
	up, _, err = deps.Pause(manual.ID, true, nil)
	if err != nil || up.EvalID != "" || up.EvalCreateIndex != 0 || up.DeploymentModifyIndex == 0 {
		t.Fatalf("Pause: %+v %v", up, err)
	}
	if d := f.Deployment(manual.ID); d.Status != state.DeploymentStatusPaused {
		t.Errorf("after Pause: %s", d.Status)
	}
	if _, _, err := deps.Pause(manual.ID, false, nil); err != nil {
		t.Fatalf("resume: %v", err)
	}
	up, wm, err = deps.Fail(manual.ID, nil)
	if err != nil || up.EvalID == "" || wm.LastIndex != up.DeploymentModifyIndex {
		t.Fatalf("Fail: %+v %v", up, err)
	}
	if d := f.Deployment(manual.ID); d.Status != state.DeploymentStatusFailed || d.StatusDescription != "Deployment marked as failed" {
		t.Errorf("after Fail: %s %q", d.Status, d.StatusDescription)
	}
	if _, _, err := deps.Unblock(plain.d.ID, nil); err == nil || err.Error() != "Unexpected response code: 409 (deployment is not blocked)" {
		t.Errorf("Unblock: %v", err)
	}

	// Without a token, the client is denied.
	anon, _ := nomad.NewClient(&nomad.Config{Address: f.URL})
	if _, _, err := anon.Deployments().List(nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Errorf("anonymous List: %v", err)
	}
}
