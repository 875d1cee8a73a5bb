package http_test

import (
	"testing"
	"time"
)

// TestAllocInfoNomadClient: Allocations().Info carries what `nomad alloc
// status` dereferences: the job at the allocation's version (not the
// current one), task and allocated resources, metrics; the list keeps
// stubs.
func TestAllocInfoNomadClient(t *testing.T) {
	ts := startJobs(t)
	c := nomadClient(t, ts, "")
	job := nomadJob("web", 1)
	job.Update = nil
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	nodeID := cliNode(t, ts, "n1")
	_, v0, err := ts.Server.State().Job(nil, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	allocs, _ := ntPlace(t, ts, v0, nodeID, "n1", 1, time.Now())
	// A new version after the placement: the allocation keeps version 0.
	job.TaskGroups[0].Tasks[0].Env["PORT"] = "9090"
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}

	a, qm, err := c.Allocations().Info(allocs[0].ID, nil)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if a.Job == nil || *a.Job.Version != 0 || *a.Job.ID != "web" || a.Job.TaskGroups[0].Tasks[0].Env["PORT"] != "8080" || qm.LastIndex == 0 {
		t.Fatalf("Info's job: %+v", a.Job)
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || len(tg.Tasks) != 1 || tg.Tasks[0].Name != "app" {
		t.Fatalf("LookupTaskGroup: %+v", tg)
	}
	if r := a.TaskResources["app"]; r == nil || *r.CPU != 100 || *r.MemoryMB != 300 {
		t.Fatalf("TaskResources: %+v", a.TaskResources)
	}
	if a.Resources == nil || a.Resources.DiskMB == nil || *a.Resources.CPU != 100 {
		t.Fatalf("Resources: %+v", a.Resources)
	}
	if a.AllocatedResources == nil || a.AllocatedResources.Tasks["app"].Cpu.CpuShares != 100 || a.AllocatedResources.Tasks["app"].Memory.MemoryMB != 300 ||
		len(a.AllocatedResources.Shared.Networks) != 0 {
		t.Fatalf("AllocatedResources: %+v", a.AllocatedResources)
	}
	if a.Metrics == nil || a.Metrics.NodesAvailable == nil {
		t.Fatalf("Metrics: %+v", a.Metrics)
	}
	if a.JobID != "web" || a.NodeID != nodeID || a.ClientStatus != "pending" || a.DesiredStatus != "run" {
		t.Fatalf("Info: %+v", a)
	}
	// The list's stubs keep their shape (no job).
	stubs, _, err := c.Allocations().List(nil)
	if err != nil || len(stubs) != 1 || stubs[0].JobVersion != 0 || stubs[0].ID != a.ID {
		t.Fatalf("List: %v %+v", err, stubs)
	}
	if _, _, err := c.Allocations().Info("6d1b6e5e-0f0e-4a52-9e1f-3c2b1a0f9e8d", nil); err == nil || err.Error() != "Unexpected response code: 404 (alloc not found)" {
		t.Fatalf("Info of unknown: %v", err)
	}
}
