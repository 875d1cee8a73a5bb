package scheduler

import (
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// TestNodePoolPlacement: a job places only on the nodes of its node pool
// ("all": any node; "" : "default"), and a placement that fails counts
// only the pool's nodes (NodesInPool, NodesEvaluated).
func TestNodePoolPlacement(t *testing.T) {
	cases := []struct {
		pool  string
		count int
		want  []string
	}{
		{"default", 3, []string{"n1", "n2"}},
		{"", 3, []string{"n1", "n2"}},
		{"gpu", 2, []string{"n3"}},
		{"all", 4, []string{"n1", "n2", "n3"}},
	}
	for _, tc := range cases {
		t.Run("pool "+tc.pool, func(t *testing.T) {
			h := newHarness(t)
			nodes := h.fleet() // n1, n2: default in dc1; n3: gpu in dc2
			byID := map[string]string{}
			for name, n := range nodes {
				byID[n.ID] = name
			}
			j := testJob("web", tc.count)
			j.NodePool = tc.pool
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*state.Constraint{con("", "distinct_hosts", "")}
			e := h.process(h.register(j))
			if got := placedOn(h, "web", byID); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("placed on %v, want %v", got, tc.want)
			}
			m := e.FailedTGAllocs["web"]
			if m == nil || m.NodesInPool != len(tc.want) || m.NodesEvaluated != len(tc.want) {
				t.Fatalf("failed placement metric %+v: want %d nodes in the pool", m, len(tc.want))
			}
			if e.QueuedAllocations["web"] != tc.count-len(tc.want) {
				t.Errorf("queued %v", e.QueuedAllocations)
			}
		})
	}
}

// TestNodePoolChange: moving a job to another pool replaces its
// allocations on the new pool's nodes.
func TestNodePoolChange(t *testing.T) {
	h := newHarness(t)
	nodes := h.fleet()
	byID := map[string]string{}
	for name, n := range nodes {
		byID[n.ID] = name
	}
	j := testJob("web", 1, withNoUpdate())
	j.NodePool = "gpu"
	j.Datacenters = []string{"dc1", "dc2"}
	h.process(h.register(j))
	if got := placedOn(h, "web", byID); !reflect.DeepEqual(got, []string{"n3"}) {
		t.Fatalf("placed on %v", got)
	}
	j2 := testJob("web", 1, withNoUpdate())
	j2.NodePool = "default"
	j2.Datacenters = []string{"dc1", "dc2"}
	h.process(h.register(j2))
	got := placedOn(h, "web", byID)
	if len(got) != 1 || got[0] == "n3" {
		t.Fatalf("after moving to default: live on %v", got)
	}
}
