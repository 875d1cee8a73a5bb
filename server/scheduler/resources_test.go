package scheduler

import (
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// TestNodeFitNeverWraps: an allocation written before the resource caps,
// whose three tasks of 2^62 MHz and MB summed to a negative number, made
// its 2,000 MHz node look empty: a job asking for 1,000,000 MHz and
// 10 TB was planned onto it. Node usage counts such an allocation as the
// most one may hold, so neither the scheduler nor the plan applier puts
// anything more on the node.
func TestNodeFitNeverWraps(t *testing.T) {
	h := newHarness(t)
	// The legacy allocation lands while the node is unlimited (capacity
	// 0), then the node registers its 2,000 MHz and 4,096 MB.
	node := h.node("n1", "dc1", 0, 0)
	legacy := testJob("legacy", 1)
	h.register(legacy)
	legacy = h.job("legacy")
	wrapped := 0
	for range 3 {
		wrapped += 1 << 62 // what the old sum did: -2^62 in the end
	}
	if wrapped >= 0 {
		t.Fatalf("the sum did not wrap: %d", wrapped)
	}
	res, err := h.store.ApplyPlan(h.next(), &state.Plan{
		Namespace: "default", JobID: "legacy", JobModifyIndex: legacy.JobModifyIndex, Now: h.now.UnixNano(),
		Placements: []*state.Allocation{{
			ID: uuid.NewString(), Namespace: "default", JobID: "legacy", TaskGroup: "web", Name: "legacy.web[0]",
			NodeID: node.ID, Resources: state.Resources{CPU: wrapped, MemoryMB: wrapped},
			DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
		}},
	})
	if err != nil || res.Refused != "" {
		t.Fatalf("legacy placement: %v %+v", err, res)
	}
	resized := *node
	resized.Resources = state.Resources{CPU: 2000, MemoryMB: 4096}
	if err := h.store.NodeRegister(h.next(), &resized, nil); err != nil {
		t.Fatal(err)
	}

	big := testJob("big", 1)
	big.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 1_000_000, MemoryMB: 10_000_000}
	e := h.process(h.register(big))
	if live := h.live("big"); len(live) != 0 {
		t.Fatalf("the big job was placed on the 2,000 MHz node: %+v", live[0].Resources)
	}
	if m := e.FailedTGAllocs["web"]; m == nil || m.NodesExhausted != 1 || m.DimensionExhausted["cpu"] != 1 {
		t.Errorf("failed placement metric: %+v", m)
	}

	// The plan applier refuses it too.
	big = h.job("big")
	res, err = h.store.ApplyPlan(h.next(), &state.Plan{
		Namespace: "default", JobID: "big", JobModifyIndex: big.JobModifyIndex, Now: h.now.UnixNano(),
		Placements: []*state.Allocation{{
			ID: uuid.NewString(), Namespace: "default", JobID: "big", TaskGroup: "web", Name: "big.web[0]",
			NodeID: node.ID, Resources: big.TaskGroups[0].Resources(),
			DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
		}},
	})
	if err != nil || !strings.Contains(res.Refused, "has no room left") {
		t.Errorf("plan onto the full node: %v %+v", err, res)
	}
}

// TestGroupResourcesSaturate: a stored group whose tasks ask for more than
// the caps sums to a large positive number, never a wrapped one.
func TestGroupResourcesSaturate(t *testing.T) {
	tg := &state.TaskGroup{}
	for range 3 {
		tg.Tasks = append(tg.Tasks, &state.Task{Resources: &state.Resources{CPU: 1 << 62, MemoryMB: -5}})
	}
	r := tg.Resources()
	if r.CPU != 3*state.MaxCountedResource || r.MemoryMB != 3*state.MaxCountedResource {
		t.Errorf("group resources %+v", r)
	}
	for _, c := range []struct{ capacity, used, want int }{
		{2000, 0, 2001}, {2000, 3 * state.MaxCountedResource, 1}, {2000, -1 << 62, 1_000_000}, {1 << 62, 1 << 62, 1 << 62},
	} {
		if _, ok := state.Room(c.capacity, c.used, c.want); ok {
			t.Errorf("Room(%d, %d, %d) fits", c.capacity, c.used, c.want)
		}
	}
	if left, ok := state.Room(2000, 500, 1000); !ok || left != 500 {
		t.Errorf("Room(2000, 500, 1000) = %d, %v", left, ok)
	}
}
