package http_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// TestJobDeploysOnDevNode: through the agent as the binary builds it (jobs
// service, broker, scheduler, deployment watcher, one simulated client), a
// job registered with the official client is placed, its deployment
// succeeds and its version becomes stable; a stop stops its allocations.
func TestJobDeploysOnDevNode(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	c := nomadClient(t, ts, "")
	job := nomadJob("web", 2)
	job.Datacenters = nil // Nomad's default: every datacenter
	job.Update = &api.UpdateStrategy{HealthCheck: new("task_states"), MinHealthyTime: new(100 * time.Millisecond)}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}

	var dep *api.Deployment
	q := &api.QueryOptions{WaitIndex: reg.JobModifyIndex, WaitTime: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for dep == nil || dep.Status != "successful" {
		if time.Now().After(deadline) {
			t.Fatalf("deployment not successful: %+v", dep)
		}
		var qm *api.QueryMeta
		dep, qm, err = c.Jobs().LatestDeployment("web", q)
		if err != nil {
			t.Fatalf("LatestDeployment: %v", err)
		}
		q.WaitIndex = qm.LastIndex
	}
	if dep.JobVersion != 0 || dep.TaskGroups["web"].HealthyAllocs != 2 {
		t.Errorf("deployment: version %d, groups %+v", dep.JobVersion, dep.TaskGroups["web"])
	}
	versions, _, _, err := c.Jobs().Versions("web", false, nil)
	if err != nil || !*versions[0].Stable {
		t.Errorf("version 0 not stable: %v", err)
	}
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("allocations: %v %d", err, len(allocs))
	}

	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	for {
		allocs, _, err = c.Jobs().Allocations("web", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		stopped := 0
		for _, a := range allocs {
			if a.DesiredStatus == "stop" {
				stopped++
			}
		}
		if stopped == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("allocations not stopped: %d of %d", stopped, len(allocs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
