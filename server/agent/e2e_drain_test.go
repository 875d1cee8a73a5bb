package agent_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	nomad "github.com/hashicorp/nomad/api"
)

func nomadAPI(t *testing.T, ts *servertest.TestServer) *nomad.Client {
	t.Helper()
	cfg := nomad.DefaultConfig()
	cfg.Address = ts.URL
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drainedNode reads a node, failing the test on anything but 200.
func drainedNode(t *testing.T, ts *servertest.TestServer, id string) *state.Node {
	t.Helper()
	var n state.Node
	resp := ts.Do(t, http.MethodGet, "/v1/node/"+id, "")
	if resp.Status != http.StatusOK {
		t.Fatalf("node %s: %s", id, resp)
	}
	resp.JSON(t, &n)
	return &n
}

// runningOn counts the job's allocations meant to run and running, and
// those of them on node.
func runningOn(all []*state.Allocation, node string) (running, onNode int) {
	for _, a := range all {
		if a.DesiredStatus == state.AllocDesiredStatusRun && a.ClientStatus == state.AllocClientStatusRunning {
			running++
			if a.NodeID == node {
				onNode++
			}
		}
	}
	return running, onNode
}

// A drain of a node running part of a count-6 group (migrate MaxParallel
// 1) on a dev agent of three nodes (two on each: the job's anti-affinity
// spreads them): its allocations move one at a time (each replacement in
// a plan of its own), the group never has fewer than Count - MaxParallel
// = 5 allocations running, and the drain completes
// (LastDrain complete, Drain false, the node still ineligible until made
// eligible again).
func TestE2EDrainMovesAllocationsMaxParallelAtATime(t *testing.T) {
	ts := devAgent(t, servertest.DevNodes(3))
	const count = 6
	register(t, ts, jobSpec{count: count, update: update(nil),
		group: map[string]any{"Migrate": map[string]any{"MaxParallel": 1, "HealthCheck": "task_states", "MinHealthyTime": int64(50 * time.Millisecond)}}})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	before := allocs(t, ts)
	node := before[0].NodeID
	var old []*state.Allocation
	for _, a := range before {
		if a.NodeID == node && !a.TerminalStatus() {
			old = append(old, a)
		}
	}
	if len(old) < 2 {
		t.Fatalf("want at least 2 allocations on one node to drain, got %d", len(old))
	}

	resp, err := nomadAPI(t, ts).Nodes().UpdateDrain(node, &nomad.DrainSpec{Deadline: time.Hour}, false, nil)
	if err != nil || resp.NodeModifyIndex == 0 {
		t.Fatalf("drain: %+v %v", resp, err)
	}
	// Nomad's CLI follows the drain with this monitor.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	monitor := nomadAPI(t, ts).Nodes().MonitorDrain(ctx, node, resp.NodeModifyIndex, false)
	floor := count - 1
	deadline := time.Now().Add(60 * time.Second)
	for {
		all := allocs(t, ts)
		running, onNode := runningOn(all, node)
		if running < floor {
			t.Fatalf("only %d allocations running during the drain, want at least %d: %+v", running, floor, all)
		}
		n := drainedNode(t, ts, node)
		if onNode == 0 && n.LastDrain != nil && n.LastDrain.Status == state.DrainStatusComplete && running == count {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("drain did not complete: node %+v last %+v, %d running, %d on the node", n, n.LastDrain, running, onNode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n := drainedNode(t, ts, node)
	if n.Drain || n.DrainStrategy != nil || n.SchedulingEligibility != state.NodeSchedulingIneligible || n.LastDrain.Status != state.DrainStatusComplete {
		t.Fatalf("drained node: %+v", n)
	}
	var msgs []string
	for m := range monitor {
		if m.Level == nomad.MonitorMsgLevelError {
			t.Fatalf("drain monitor: %s", m)
		}
		msgs = append(msgs, m.String())
	}
	if ctx.Err() != nil || !slices.Contains(msgs, "Drain complete for node "+node) {
		t.Fatalf("drain monitor ended with %v: %q", ctx.Err(), msgs)
	}
	// Every old allocation was migrated, each replacement in its own plan.
	created := map[uint64]bool{}
	for _, o := range old {
		var repl *state.Allocation
		for _, a := range allocs(t, ts) {
			if a.PreviousAllocation == o.ID {
				repl = a
			}
		}
		if repl == nil || repl.NodeID == node || repl.Name != o.Name {
			t.Fatalf("replacement of %s: %+v", o.Name, repl)
		}
		created[repl.CreateIndex] = true
		for _, a := range allocs(t, ts) {
			if a.ID == o.ID && (a.DesiredDescription != "alloc is being migrated" || !a.DesiredTransition.ShouldMigrate()) {
				t.Fatalf("migrated allocation: %q %+v", a.DesiredDescription, a.DesiredTransition)
			}
		}
	}
	if len(created) != len(old) {
		t.Fatalf("%d allocations moved in %d plans: more than MaxParallel at once", len(old), len(created))
	}
	drains := 0
	for _, e := range jobEvals(t, ts) {
		if e.TriggeredBy == state.EvalTriggerNodeDrain {
			drains++
		}
	}
	if drains != len(old) {
		t.Errorf("%d node-drain evaluations, want one per migration (%d)", drains, len(old))
	}

	// Eligibility toggles back.
	if _, err := nomadAPI(t, ts).Nodes().ToggleEligibility(node, true, nil); err != nil {
		t.Fatal(err)
	}
	if n := drainedNode(t, ts, node); n.SchedulingEligibility != state.NodeSchedulingEligible || n.LastDrain.Status != state.DrainStatusComplete {
		t.Fatalf("eligible again: %+v", n)
	}
}

// A drain with a deadline, of a group that never moves on its own
// (migrate MaxParallel 0): nothing moves before the deadline; at it,
// everything left is migrated and the drain is complete.
func TestE2EDrainDeadlineStopsWhatIsLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t, servertest.DevNodes(2))
	register(t, ts, jobSpec{count: 2, update: update(nil),
		group: map[string]any{"Migrate": map[string]any{"MaxParallel": 0, "HealthCheck": "task_states"}}})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	node := allocs(t, ts)[0].NodeID
	_, onNode := runningOn(allocs(t, ts), node)
	if onNode == 0 {
		t.Fatal("nothing runs on the node")
	}
	start := time.Now()
	if _, err := nomadAPI(t, ts).Nodes().UpdateDrain(node, &nomad.DrainSpec{Deadline: 2 * time.Second}, false, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, still := runningOn(allocs(t, ts), node); still != onNode {
		t.Fatalf("%d of %d allocations left the node before the deadline", onNode-still, onNode)
	}
	if n := drainedNode(t, ts, node); n.DrainStrategy == nil || n.LastDrain.Status != state.DrainStatusDraining {
		t.Fatalf("before the deadline: %+v", n)
	}
	all := waitAllocs(t, ts, "everything to leave the node", 20*time.Second, func(all []*state.Allocation) bool {
		running, on := runningOn(all, node)
		return on == 0 && running == 2
	})
	if time.Since(start) < 2*time.Second {
		t.Fatalf("moved before the deadline (%v)", time.Since(start))
	}
	for _, a := range all {
		if a.NodeID == node && a.DesiredDescription != "alloc is being migrated" {
			t.Errorf("allocation left on the node: %q", a.DesiredDescription)
		}
	}
	n := drainedNode(t, ts, node)
	if n.DrainStrategy != nil || n.LastDrain.Status != state.DrainStatusComplete || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Fatalf("after the deadline: %+v %+v", n, n.LastDrain)
	}
}
