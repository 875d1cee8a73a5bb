package http_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// TestBlockedEvalUnblocksWhenCapacityFrees: a job that does not fit on the
// only node waits in a blocked evaluation (CPU exhausted); when another
// job stops and its allocation ends, the blocked evaluation runs again
// and places it.
func TestBlockedEvalUnblocksWhenCapacityFrees(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodeGroup(server.DevNodeGroup{Name: "small", Count: 1, CPU: 600, MemoryMB: 1024}))
	c := nomadClient(t, ts, "")
	deadline := time.Now().Add(30 * time.Second)
	waitAllocs := func(job string, n int) []*api.AllocationListStub {
		t.Helper()
		for {
			allocs, _, err := c.Jobs().Allocations(job, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			live := allocs[:0]
			for _, a := range allocs {
				if a.DesiredStatus == "run" {
					live = append(live, a)
				}
			}
			if len(live) == n {
				return live
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d running allocations, want %d", job, len(live), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) == 1 && nodes[0].Status == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	big := func(id string) *api.Job {
		j := nomadJob(id, 1)
		j.Update = nil
		j.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: new(500), MemoryMB: new(64)}
		return j
	}
	if _, _, err := c.Jobs().Register(big("first"), nil); err != nil {
		t.Fatal(err)
	}
	waitAllocs("first", 1)
	reg, _, err := c.Jobs().Register(big("second"), nil)
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
	if m := ev.FailedTGAllocs["web"]; m == nil || m.DimensionExhausted["cpu"] != 1 || ev.BlockedEval == "" {
		t.Fatalf("second: blocked %q, failed %+v", ev.BlockedEval, ev.FailedTGAllocs)
	}
	if _, _, err := c.Jobs().Deregister("first", false, nil); err != nil {
		t.Fatal(err)
	}
	waitAllocs("second", 1)
	if b, _, err := c.Evaluations().Info(ev.BlockedEval, nil); err != nil || b.Status != "complete" {
		t.Fatalf("blocked evaluation %+v: %v", b, err)
	}
}
