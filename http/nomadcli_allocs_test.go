package http_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
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

// TestAllocStopNomadClient: on a dev agent, Allocations().Stop as `nomad
// alloc stop` calls it marks the allocation to migrate with an alloc-stop
// evaluation in one Raft entry; the scheduler stops it and places a
// replacement that runs, linked to it (NextAllocation/PreviousAllocation);
// the job's summary follows (Complete 1, Running 1).
func TestAllocStopNomadClient(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	c := nomadClient(t, ts, "")
	job := nomadJob("web", 1)
	job.Datacenters, job.Update = nil, nil
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	running := func() []*api.AllocationListStub {
		t.Helper()
		var out []*api.AllocationListStub
		stubs, _, err := c.Jobs().Allocations("web", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stubs {
			if s.ClientStatus == "running" && s.DesiredStatus == "run" {
				out = append(out, s)
			}
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	var first *api.AllocationListStub
	waitFor("one running allocation", func() bool {
		r := running()
		if len(r) == 1 {
			first = r[0]
		}
		return first != nil
	})
	alloc, _, err := c.Allocations().Info(first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Allocations().Stop(alloc, nil)
	if err != nil || resp.EvalID == "" || resp.LastIndex == 0 {
		t.Fatalf("Stop: %v %+v", err, resp)
	}
	eval, _, err := c.Evaluations().Info(resp.EvalID, nil)
	if err != nil || eval.TriggeredBy != "alloc-stop" || eval.JobID != "web" || eval.CreateIndex != resp.LastIndex {
		t.Fatalf("evaluation: %v %+v", err, eval)
	}
	var next *api.AllocationListStub
	waitFor("a replacement running", func() bool {
		r := running()
		if len(r) == 1 && r[0].ID != first.ID {
			next = r[0]
		}
		return next != nil
	})
	// The scheduler stopped it as migrated in the plan that placed its
	// replacement, and linked the two (Nomad's migration).
	stopped, _, err := c.Allocations().Info(first.ID, nil)
	if err != nil || stopped.DesiredStatus != "stop" || stopped.DesiredDescription != "alloc is being migrated" ||
		stopped.DesiredTransition.Migrate == nil || !*stopped.DesiredTransition.Migrate || stopped.NextAllocation != next.ID {
		t.Fatalf("stopped allocation: %v %+v", err, stopped)
	}
	replacement, _, err := c.Allocations().Info(next.ID, nil)
	if err != nil || replacement.PreviousAllocation != first.ID || replacement.NextAllocation != "" || replacement.Name != stopped.Name ||
		replacement.EvalID != resp.EvalID {
		t.Fatalf("replacement: %v %+v", err, replacement)
	}
	waitFor("summary Running 1, Complete 1", func() bool {
		s, _, err := c.Jobs().Summary("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		return s.Summary["web"] == api.TaskGroupSummary{Running: 1, Complete: 1}
	})

	if _, err := c.Allocations().Stop(&api.Allocation{ID: "6d1b6e5e-0f0e-4a52-9e1f-3c2b1a0f9e8d"}, nil); err == nil ||
		err.Error() != `Unexpected response code: 404 (Unknown allocation "6d1b6e5e-0f0e-4a52-9e1f-3c2b1a0f9e8d")` {
		t.Fatalf("Stop of unknown: %v", err)
	}
}

// TestAllocStopACL: stopping needs alloc-lifecycle in the allocation's
// namespace; read-job is not enough.
func TestAllocStopACL(t *testing.T) {
	const mgmt = "8a1b2c3d-4e5f-4a6b-9c7d-0e1f2a3b4c5d"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	c := nomadClient(t, ts, mgmt)
	job := nomadJob("web", 1)
	job.Update = nil
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	_, stored, err := ts.Server.State().Job(nil, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	allocs, _ := ntPlace(t, ts, stored, cliNode(t, ts, "n1"), "n1", 1, time.Now())
	reader := nomadClient(t, ts, s.tokenWithRules(t, "reader", `namespace "default" { policy = "read" }`, "").SecretID)
	lifecycle := nomadClient(t, ts, s.tokenWithRules(t, "lc", `namespace "default" { capabilities = ["alloc-lifecycle"] }`, "").SecretID)
	a := &api.Allocation{ID: allocs[0].ID}
	if _, err := reader.Allocations().Stop(a, nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Fatalf("Stop with read: %v", err)
	}
	if _, a, _ := ts.Server.State().Alloc(nil, allocs[0].ID); a.DesiredStatus != "run" || a.DesiredTransition.Migrate != nil {
		t.Fatalf("a refused stop changed the allocation: %+v", a)
	}
	if resp, err := lifecycle.Allocations().Stop(a, nil); err != nil || resp.EvalID == "" {
		t.Fatalf("Stop with alloc-lifecycle: %v", err)
	}
	// Marked to migrate (the scheduler stops it when it places the
	// replacement).
	if _, a, _ := ts.Server.State().Alloc(nil, allocs[0].ID); !a.DesiredTransition.ShouldMigrate() {
		t.Fatalf("allocation not marked to migrate: %+v", a)
	}
}
