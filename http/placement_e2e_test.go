package http_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// TestPlacementConstraintsOnDevFleet: a dev agent with simulated nodes of
// two classes. The official client reads the nodes' fingerprints; a job
// constrained to one class lands only there, with the placement's metrics
// on its allocations; an impossible constraint leaves a blocked
// evaluation whose FailedTGAllocs say which constraint filtered the
// nodes, and job plan says the same.
func TestPlacementConstraintsOnDevFleet(t *testing.T) {
	ts := servertest.Start(t,
		servertest.DevNodeGroup(server.DevNodeGroup{Name: "web", Count: 2, NodeClass: "web", Meta: map[string]string{"tier": "front"}}),
		servertest.DevNodeGroup(server.DevNodeGroup{Name: "gpu", Count: 1, NodeClass: "gpu", NodePool: "default", Attributes: map[string]string{"gpu.count": "1"}}),
	)
	c := nomadClient(t, ts, "")
	var stubs []*api.NodeListStub
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		stubs, _, err = c.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, n := range stubs {
			if n.Status == "ready" {
				ready++
			}
		}
		if ready == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes not ready: %+v", stubs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	classOf := map[string]string{}
	for _, s := range stubs {
		n, _, err := c.Nodes().Info(s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		classOf[n.ID] = n.NodeClass
		a := n.Attributes
		if a["kernel.name"] != "linux" || a["cpu.arch"] != "amd64" || a["driver.mock_driver"] != "1" || a["nomad.version"] == "" ||
			a["unique.hostname"] != n.Name || a["memory.totalbytes"] == "" || a["cpu.totalcompute"] == "" || n.NodePool != "default" {
			t.Fatalf("node %s: pool %q, attributes %v", n.Name, n.NodePool, a)
		}
		if n.NodeResources == nil || n.NodeResources.Cpu.CpuShares != 64000 || n.NodeResources.Memory.MemoryMB != 256<<10 || n.ReservedResources == nil {
			t.Fatalf("node %s resources %+v", n.Name, n.NodeResources)
		}
		switch n.NodeClass {
		case "web":
			if n.Meta["tier"] != "front" || a["gpu.count"] != "" {
				t.Fatalf("web node %s: meta %v", n.Name, n.Meta)
			}
		case "gpu":
			if a["gpu.count"] != "1" {
				t.Fatalf("gpu node %s: attributes %v", n.Name, a)
			}
		default:
			t.Fatalf("node %s: class %q", n.Name, n.NodeClass)
		}
	}

	var err error
	// Constrained to the web class, one per node.
	job := nomadJob("front", 2)
	job.Update = nil
	job.Constraints = []*api.Constraint{api.NewConstraint("${node.class}", "=", "web")}
	job.TaskGroups[0].Constraints = []*api.Constraint{{Operand: "distinct_hosts"}}
	if _, _, err = c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var allocs []*api.AllocationListStub
	for len(allocs) < 2 {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("allocations: %d", len(allocs))
		}
		if allocs, _, err = c.Jobs().Allocations("front", false, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nodes := map[string]bool{}
	for _, s := range allocs {
		nodes[s.NodeID] = true
		if classOf[s.NodeID] != "web" {
			t.Fatalf("allocation %s on a %q node", s.Name, classOf[s.NodeID])
		}
		a, _, err := c.Allocations().Info(s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := a.Metrics
		if m == nil || m.NodesEvaluated != 3 || m.ConstraintFiltered["${node.class} = web"]+m.ConstraintFiltered["computed class ineligible"] < 1 ||
			m.ClassFiltered["gpu"] != 1 || len(m.ScoreMetaData) == 0 || m.NodesAvailable["dc1"] != 3 {
			t.Fatalf("allocation %s metrics %+v", s.Name, m)
		}
	}
	if len(nodes) != 2 {
		t.Fatalf("distinct_hosts: allocations on %d nodes", len(nodes))
	}

	// An affinity draws the allocation to the gpu node without ruling
	// the others out; a spread over the class scores each placement.
	pref := nomadJob("pref", 1)
	pref.Update = nil
	pref.Affinities = []*api.Affinity{api.NewAffinity("${node.class}", "=", "gpu", 100)}
	pref.TaskGroups[0].Spreads = []*api.Spread{api.NewSpread("${node.class}", 50, nil)}
	if _, _, err := c.Jobs().Register(pref, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var prefAllocs []*api.AllocationListStub
	for len(prefAllocs) < 1 {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatal("no allocation of pref")
		}
		if prefAllocs, _, err = c.Jobs().Allocations("pref", false, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if classOf[prefAllocs[0].NodeID] != "gpu" {
		t.Fatalf("affinity: placed on a %q node", classOf[prefAllocs[0].NodeID])
	}
	pa, _, err := c.Allocations().Info(prefAllocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if top := pa.Metrics.ScoreMetaData; len(top) != 3 || top[0].NodeID != pa.NodeID || top[0].Scores["node-affinity"] != 1 || pa.Metrics.NodesFiltered != 0 {
		t.Fatalf("affinity metrics %+v", pa.Metrics)
	}
	if job, _, err := c.Jobs().Info("pref", nil); err != nil || len(job.Affinities) != 1 || *job.Affinities[0].Weight != 100 ||
		len(job.TaskGroups[0].Spreads) != 1 || *job.TaskGroups[0].Spreads[0].Weight != 50 {
		t.Fatalf("job read back: %v %+v", err, job)
	}

	// No node qualifies: a blocked evaluation explains why.
	bad := nomadJob("nowhere", 1)
	bad.Update = nil
	bad.Constraints = []*api.Constraint{api.NewConstraint("${attr.kernel.name}", "=", "windows")}
	plan, _, err := c.Jobs().Plan(bad, false, nil)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if m := plan.FailedTGAllocs["web"]; m == nil || m.NodesFiltered != 3 || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 2 || m.ConstraintFiltered["computed class ineligible"] != 1 {
		t.Fatalf("plan FailedTGAllocs %+v", plan.FailedTGAllocs)
	}
	reg, _, err := c.Jobs().Register(bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ev *api.Evaluation
	for ev == nil || ev.Status != "complete" {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("evaluation %+v", ev)
		}
		if ev, _, err = c.Evaluations().Info(reg.EvalID, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := ev.FailedTGAllocs["web"]
	if m == nil || m.NodesEvaluated != 3 || m.NodesFiltered != 3 || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 2 ||
		m.ClassFiltered["web"] != 2 || m.ClassFiltered["gpu"] != 1 || ev.QueuedAllocations["web"] != 1 || ev.BlockedEval == "" {
		t.Fatalf("evaluation: blocked %q, queued %v, failed %+v", ev.BlockedEval, ev.QueuedAllocations, m)
	}
	blocked, _, err := c.Evaluations().Info(ev.BlockedEval, nil)
	if err != nil || blocked.Status != "blocked" || blocked.PreviousEval != ev.ID {
		t.Fatalf("blocked evaluation %+v: %v", blocked, err)
	}
}
