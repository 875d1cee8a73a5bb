package http_test

import (
	"context"
	"testing"
	"time"

	ctlapi "github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
)

// TestBlockedEvalUnblocksByClass: a job constrained to a class no node has
// leaves a blocked evaluation that records the classes it saw as
// ineligible. A new node of such a class does not run it again; a node of
// the wanted class does, and the allocation is placed there.
func TestBlockedEvalUnblocksByClass(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodeGroup(server.DevNodeGroup{Name: "web", Count: 1, NodeClass: "web"}))
	c := nomadClient(t, ts, "")
	deadline := time.Now().Add(30 * time.Second)
	for {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) == 1 && nodes[0].Status == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev node not ready: %+v", nodes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	job := nomadJob("train", 1)
	job.Update = nil
	job.Constraints = []*api.Constraint{api.NewConstraint("${node.class}", "=", "gpu")}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ev *api.Evaluation
	for ev == nil || ev.Status != "complete" {
		if time.Now().After(deadline) {
			t.Fatalf("evaluation %+v", ev)
		}
		if ev, _, err = c.Evaluations().Info(reg.EvalID, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	blocked, _, err := c.Evaluations().Info(ev.BlockedEval, nil)
	if err != nil || blocked.Status != "blocked" || len(blocked.ClassEligibility) != 1 || blocked.EscapedComputedClass {
		t.Fatalf("blocked evaluation %+v: %v", blocked, err)
	}
	for _, ok := range blocked.ClassEligibility {
		if ok {
			t.Fatalf("the web class is eligible: %v", blocked.ClassEligibility)
		}
	}

	cc, err := ctlapi.NewClient(ctlapi.Config{Address: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	register := func(name, class string) {
		t.Helper()
		// Alike the dev node but for its name: the same computed class
		// when class is "web".
		var attrs map[string]string
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		dev, _, err := c.Nodes().Info(nodes[0].ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		attrs = dev.Attributes
		drivers := map[string]*ctlapi.DriverInfo{}
		for d, info := range dev.Drivers {
			drivers[d] = &ctlapi.DriverInfo{Detected: info.Detected, Healthy: info.Healthy}
		}
		reg := &ctlapi.NodeRegistration{ID: uuid.NewString(), Name: name, Datacenter: "dc1", NodeClass: class, Attributes: attrs,
			Drivers: drivers, Resources: ctlapi.Resources{CPU: 4000, MemoryMB: 8192}}
		if _, err := cc.RegisterNode(context.Background(), reg); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}

	// Another web node: the blocked evaluation stays as it was.
	register("web-2", "web")
	time.Sleep(500 * time.Millisecond)
	again, _, err := c.Evaluations().Info(blocked.ID, nil)
	if err != nil || again.Status != "blocked" || again.ModifyIndex != blocked.ModifyIndex {
		t.Fatalf("after a web node joined: %+v (%v), want untouched at %d", again, err, blocked.ModifyIndex)
	}

	// A gpu node: the evaluation runs and places the allocation there.
	register("gpu-1", "gpu")
	for {
		allocs, _, err := c.Jobs().Allocations("train", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(allocs) == 1 {
			if allocs[0].NodeName != "gpu-1" {
				t.Fatalf("placed on %s", allocs[0].NodeName)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gpu node did not unblock the evaluation")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if done, _, err := c.Evaluations().Info(blocked.ID, nil); err != nil || done.Status != "complete" {
		t.Fatalf("blocked evaluation after the gpu node: %+v %v", done, err)
	}
}
