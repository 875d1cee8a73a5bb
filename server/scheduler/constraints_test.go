package scheduler

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// fleetNode registers a ready mock_driver node with a class, pool,
// attributes and meta.
func (h *harness) fleetNode(name, dc, class, pool string, attrs, meta map[string]string) *state.Node {
	h.t.Helper()
	n := &state.Node{
		ID: uuid.NewString(), Name: name, Datacenter: dc, NodeClass: class, NodePool: pool,
		Drivers:    map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Resources:  state.Resources{CPU: 4000, MemoryMB: 4096},
		Attributes: attrs, Meta: meta,
		Status: state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible,
	}
	if err := h.store.NodeRegister(h.next(), n, nil); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// fleet is three unlike nodes: two Linux machines of different classes in
// dc1 and a Windows one in dc2's "gpu" pool.
func (h *harness) fleet() map[string]*state.Node {
	return map[string]*state.Node{
		"n1": h.fleetNode("n1", "dc1", "linux-small", "default", map[string]string{
			"kernel.name": "linux", "kernel.version": "5.15.0", "cpu.arch": "amd64", "os.version": "22.04",
			"nomad.version": "1.6.5", "cpu.numcores": "4", "features": "sse4, avx2",
		}, map[string]string{"rack": "r1", "zone": "a"}),
		"n2": h.fleetNode("n2", "dc1", "linux-big", "default", map[string]string{
			"kernel.name": "linux", "kernel.version": "6.1.0", "cpu.arch": "arm64",
			"nomad.version": "1.7.0-beta.1", "cpu.numcores": "16", "features": "sse4",
		}, map[string]string{"rack": "r2"}),
		"n3": h.fleetNode("n3", "dc2", "windows", "gpu", map[string]string{
			"kernel.name": "windows", "kernel.version": "10.0", "cpu.arch": "amd64",
			"nomad.version": "1.5.0", "cpu.numcores": "8",
		}, map[string]string{"rack": "r1"}),
	}
}

func con(l, op, r string) *state.Constraint {
	return &state.Constraint{LTarget: l, Operand: op, RTarget: r}
}

// placedOn names the nodes of the job's live allocations, sorted.
func placedOn(h *harness, jobID string, byID map[string]string) []string {
	out := []string{}
	for _, a := range h.live(jobID) {
		out = append(out, byID[a.NodeID])
	}
	sort.Strings(out)
	return out
}

// TestConstraintOperands places a job with one constraint on a fleet of
// three unlike nodes: with count one more than the nodes that qualify and
// distinct_hosts, exactly those nodes get one allocation each and the
// rest stays queued. The first placement's metric counts the other nodes
// under the constraint's text (Nomad's ConstraintFiltered).
func TestConstraintOperands(t *testing.T) {
	cases := []struct {
		name  string
		level string // job, group (default) or task
		c     func(nodes map[string]*state.Node) *state.Constraint
		want  []string
	}{
		{"= matches the attribute exactly", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.name}", "=", "linux") }, []string{"n1", "n2"}},
		{"== is =", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.name}", "==", "linux") }, []string{"n1", "n2"}},
		{"is is =", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.name}", "is", "windows") }, []string{"n3"}},
		{"!= excludes the value", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.name}", "!=", "linux") }, []string{"n3"}},
		{"not is !=", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.cpu.arch}", "not", "amd64") }, []string{"n2"}},
		{"!= holds where the attribute is unset", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.features}", "!=", "sse4") }, []string{"n1", "n3"}},
		{"> compares integers as numbers (16 > 4)", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.cpu.numcores}", ">", "4") }, []string{"n2", "n3"}},
		{">= compares integers as numbers", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.cpu.numcores}", ">=", "8") }, []string{"n2", "n3"}},
		{"< compares other strings lexically, floats as numbers", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.version}", "<", "6") }, []string{"n1"}},
		{"<= fails where the attribute is unset", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.os.version}", "<=", "22.04") }, []string{"n1"}},
		{"regexp matches anywhere in the value", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.version}", "regexp", `^6\.`) }, []string{"n2"}},
		{"version: go-version constraints, pre-releases excluded", "", func(map[string]*state.Node) *state.Constraint {
			return con("${attr.nomad.version}", "version", ">= 1.6, < 2.0")
		}, []string{"n1"}},
		{"version: pessimistic operator", "", func(map[string]*state.Node) *state.Constraint {
			return con("${attr.nomad.version}", "version", "~> 1.5.0")
		}, []string{"n3"}},
		{"semver: pre-releases order as Semantic Versioning says", "", func(map[string]*state.Node) *state.Constraint {
			return con("${attr.nomad.version}", "semver", ">= 1.6.0")
		}, []string{"n1", "n2"}},
		{"set_contains: every value, trimmed", "", func(map[string]*state.Node) *state.Constraint {
			return con("${attr.features}", "set_contains", "avx2,sse4")
		}, []string{"n1"}},
		{"set_contains_all is set_contains", "", func(map[string]*state.Node) *state.Constraint {
			return con("${attr.features}", "set_contains_all", "sse4")
		}, []string{"n1", "n2"}},
		{"set_contains_any: one value is enough", "", func(map[string]*state.Node) *state.Constraint {
			return con("${attr.features}", "set_contains_any", "avx512, avx2")
		}, []string{"n1"}},
		{"is_set", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.features}", "is_set", "") }, []string{"n1", "n2"}},
		{"is_not_set", "", func(map[string]*state.Node) *state.Constraint { return con("${attr.features}", "is_not_set", "") }, []string{"n3"}},
		{"an unknown interpolation never matches", "", func(map[string]*state.Node) *state.Constraint { return con("${node.bogus}", "=", "x") }, []string{}},

		// Interpolations.
		{"${node.unique.id}", "", func(n map[string]*state.Node) *state.Constraint { return con("${node.unique.id}", "=", n["n2"].ID) }, []string{"n2"}},
		{"${node.unique.name}", "", func(map[string]*state.Node) *state.Constraint { return con("${node.unique.name}", "=", "n1") }, []string{"n1"}},
		{"${node.datacenter}", "", func(map[string]*state.Node) *state.Constraint { return con("${node.datacenter}", "=", "dc2") }, []string{"n3"}},
		{"${node.class}", "", func(map[string]*state.Node) *state.Constraint { return con("${node.class}", "regexp", "^linux-") }, []string{"n1", "n2"}},
		{"${node.pool}", "", func(map[string]*state.Node) *state.Constraint { return con("${node.pool}", "=", "gpu") }, []string{"n3"}},
		{"${meta.*}", "", func(map[string]*state.Node) *state.Constraint { return con("${meta.rack}", "=", "r1") }, []string{"n1", "n3"}},
		{"an interpolated RTarget", "", func(map[string]*state.Node) *state.Constraint { return con("r2", "=", "${meta.rack}") }, []string{"n2"}},
		{"both targets interpolated", "", func(map[string]*state.Node) *state.Constraint { return con("${meta.zone}", "=", "${meta.zone}") }, []string{"n1"}},

		// Levels: the job's and a task's constraints apply to the group.
		{"a job constraint", "job", func(map[string]*state.Node) *state.Constraint { return con("${attr.kernel.name}", "=", "windows") }, []string{"n3"}},
		{"a task constraint", "task", func(map[string]*state.Node) *state.Constraint { return con("${attr.cpu.arch}", "=", "arm64") }, []string{"n2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			nodes := h.fleet()
			byID := map[string]string{}
			for name, n := range nodes {
				byID[n.ID] = name
			}
			c := tc.c(nodes)
			j := testJob("web", len(tc.want)+1, withMaxParallel(10))
			j.Datacenters = []string{"dc1", "dc2"}
			tg := j.TaskGroups[0]
			tg.Constraints = []*state.Constraint{{Operand: ConstraintDistinctHosts}}
			switch tc.level {
			case "job":
				j.Constraints = []*state.Constraint{c}
			case "task":
				tg.Tasks[0].Constraints = []*state.Constraint{c}
			default:
				tg.Constraints = append(tg.Constraints, c)
			}
			e := h.process(h.register(j))
			if got := placedOn(h, "web", byID); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("placed on %v, want %v", got, tc.want)
			}
			if e.QueuedAllocations["web"] != 1 || e.BlockedEval == "" || e.FailedTGAllocs["web"] == nil {
				t.Fatalf("eval: queued %v, blocked %q, failed %v", e.QueuedAllocations, e.BlockedEval, e.FailedTGAllocs)
			}
			// The first placement (or the failure, when nothing qualifies)
			// saw every node once.
			m := e.FailedTGAllocs["web"]
			if live := h.live("web"); len(live) > 0 {
				m = live[0].Metrics
			}
			if m.NodesEvaluated != 3 || m.NodesInPool != 3 || !reflect.DeepEqual(m.NodesAvailable, map[string]int{"dc1": 2, "dc2": 1}) {
				t.Fatalf("metric %+v", m)
			}
			if filtered := 3 - len(tc.want); m.NodesFiltered != filtered || m.ConstraintFiltered[c.String()] != filtered {
				t.Fatalf("filtered %d, ConstraintFiltered %v, want %d under %q", m.NodesFiltered, m.ConstraintFiltered, filtered, c.String())
			}
		})
	}
}

// TestConstraintFailureMetrics: what an evaluation that cannot place says
// in FailedTGAllocs, one case per kind of failure, in Nomad's terms.
func TestConstraintFailureMetrics(t *testing.T) {
	t.Run("missing drivers counts each node's class", func(t *testing.T) {
		h := newHarness(t)
		h.fleet()
		j := testJob("web", 1)
		j.Datacenters = []string{"dc1", "dc2"}
		j.TaskGroups[0].Tasks[0].Driver = "docker"
		m := h.process(h.register(j)).FailedTGAllocs["web"]
		if m == nil || m.NodesFiltered != 3 || !reflect.DeepEqual(m.ConstraintFiltered, map[string]int{"missing drivers": 3}) ||
			!reflect.DeepEqual(m.ClassFiltered, map[string]int{"linux-small": 1, "linux-big": 1, "windows": 1}) {
			t.Fatalf("metric %+v", m)
		}
	})
	t.Run("computed class ineligible: a class that failed is not checked again", func(t *testing.T) {
		h := newHarness(t)
		for _, name := range []string{"w1", "w2"} {
			h.fleetNode(name, "dc1", "win", "", map[string]string{"kernel.name": "windows"}, nil)
		}
		j := testJob("web", 2)
		j.Constraints = []*state.Constraint{con("${attr.kernel.name}", "=", "linux")}
		e := h.process(h.register(j))
		m := e.FailedTGAllocs["web"]
		want := map[string]int{"${attr.kernel.name} = linux": 1, filterClassInelig: 1}
		if m == nil || !reflect.DeepEqual(m.ConstraintFiltered, want) || m.ClassFiltered["win"] != 2 || m.CoalescedFailures != 1 {
			t.Fatalf("metric %+v, want ConstraintFiltered %v", m, want)
		}
		if e.QueuedAllocations["web"] != 2 {
			t.Fatalf("queued %v", e.QueuedAllocations)
		}
	})
	t.Run("a constraint on a unique value escapes the class cache", func(t *testing.T) {
		h := newHarness(t)
		for _, name := range []string{"w1", "w2"} {
			h.fleetNode(name, "dc1", "win", "", map[string]string{"kernel.name": "windows"}, nil)
		}
		j := testJob("web", 1)
		j.TaskGroups[0].Constraints = []*state.Constraint{con("${node.unique.name}", "=", "nowhere")}
		m := h.process(h.register(j)).FailedTGAllocs["web"]
		if m == nil || !reflect.DeepEqual(m.ConstraintFiltered, map[string]int{"${node.unique.name} = nowhere": 2}) {
			t.Fatalf("metric %+v", m)
		}
	})
	t.Run("exhausted dimensions and classes", func(t *testing.T) {
		h := newHarness(t)
		small := h.fleetNode("small", "dc1", "tiny", "", nil, nil)
		_ = small
		j := testJob("web", 1)
		j.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 100, MemoryMB: 8192}
		m := h.process(h.register(j)).FailedTGAllocs["web"]
		if m == nil || m.NodesExhausted != 1 || !reflect.DeepEqual(m.DimensionExhausted, map[string]int{"memory": 1}) ||
			!reflect.DeepEqual(m.ClassExhausted, map[string]int{"tiny": 1}) || m.NodesFiltered != 0 {
			t.Fatalf("metric %+v", m)
		}
	})
	t.Run("no node in the job's datacenters", func(t *testing.T) {
		h := newHarness(t)
		h.fleet()
		j := testJob("web", 1)
		j.Datacenters = []string{"dc9"}
		m := h.process(h.register(j)).FailedTGAllocs["web"]
		if m == nil || m.NodesEvaluated != 0 || len(m.NodesAvailable) != 0 || m.NodesInPool != 3 {
			t.Fatalf("metric %+v", m)
		}
	})
}

// TestDistinctHostsAndProperty: distinct_hosts at job and group level and
// distinct_property with and without a count, with Nomad's filter texts.
func TestDistinctHostsAndProperty(t *testing.T) {
	setup := func(t *testing.T) (*harness, map[string]string) {
		h := newHarness(t)
		byID := map[string]string{}
		for name, n := range h.fleet() {
			byID[n.ID] = name
		}
		return h, byID
	}
	t.Run("distinct_hosts on the job: one allocation per node", func(t *testing.T) {
		h, byID := setup(t)
		j := testJob("web", 4, withMaxParallel(10))
		j.Datacenters = []string{"dc1", "dc2"}
		j.Constraints = []*state.Constraint{{Operand: ConstraintDistinctHosts}}
		e := h.process(h.register(j))
		if got := placedOn(h, "web", byID); !reflect.DeepEqual(got, []string{"n1", "n2", "n3"}) {
			t.Fatalf("placed on %v", got)
		}
		if m := e.FailedTGAllocs["web"]; m == nil || !reflect.DeepEqual(m.ConstraintFiltered, map[string]int{ConstraintDistinctHosts: 3}) {
			t.Fatalf("failed %+v", e.FailedTGAllocs)
		}
	})
	t.Run("without distinct_hosts the allocations pack", func(t *testing.T) {
		h, byID := setup(t)
		j := testJob("web", 4, withMaxParallel(10))
		j.Datacenters = []string{"dc1", "dc2"}
		h.process(h.register(j))
		if got := placedOn(h, "web", byID); len(got) != 4 {
			t.Fatalf("placed on %v", got)
		}
	})
	t.Run("distinct_property: one allocation per value", func(t *testing.T) {
		h, byID := setup(t)
		j := testJob("web", 3, withMaxParallel(10))
		j.Datacenters = []string{"dc1", "dc2"}
		j.TaskGroups[0].Constraints = []*state.Constraint{con("${meta.rack}", ConstraintDistinctProperty, "")}
		e := h.process(h.register(j))
		got := placedOn(h, "web", byID)
		if len(got) != 2 || (got[0] != "n2" && got[1] != "n2") || reflect.DeepEqual(got, []string{"n1", "n3"}) {
			t.Fatalf("placed on %v, want one of r1 and n2 (r2)", got)
		}
		m := e.FailedTGAllocs["web"]
		want := map[string]int{"distinct_property: ${meta.rack}=r1 used by 1 allocs": 2, "distinct_property: ${meta.rack}=r2 used by 1 allocs": 1}
		if m == nil || !reflect.DeepEqual(m.ConstraintFiltered, want) {
			t.Fatalf("failed %+v, want %v", m, want)
		}
	})
	t.Run("distinct_property with a count", func(t *testing.T) {
		h, byID := setup(t)
		j := testJob("web", 4, withMaxParallel(10))
		j.Datacenters = []string{"dc1", "dc2"}
		j.Constraints = []*state.Constraint{con("${meta.rack}", ConstraintDistinctProperty, "2")}
		e := h.process(h.register(j))
		got := placedOn(h, "web", byID)
		racks := map[string]int{}
		for _, n := range got {
			racks[map[string]string{"n1": "r1", "n2": "r2", "n3": "r1"}[n]]++
		}
		if len(got) != 4 || racks["r1"] != 2 || racks["r2"] != 2 || e.FailedTGAllocs != nil {
			t.Fatalf("placed on %v (racks %v), failed %v", got, racks, e.FailedTGAllocs)
		}
	})
	t.Run("distinct_property on a node without the property", func(t *testing.T) {
		h, _ := setup(t)
		j := testJob("web", 1)
		j.Datacenters = []string{"dc1", "dc2"}
		j.TaskGroups[0].Constraints = []*state.Constraint{con("${meta.zone}", ConstraintDistinctProperty, "")}
		h.process(h.register(j))
		live := h.live("web")
		if len(live) != 1 || live[0].Metrics.ConstraintFiltered[`missing property "${meta.zone}"`] != 2 {
			t.Fatalf("live %d, metric %+v", len(live), live[0].Metrics)
		}
	})
}

// TestConstraintChangeInPlace: a constraint change is applied in place
// while the allocation's node still meets it, and replaces the
// allocation when it does not (Nomad re-checks the node).
func TestConstraintChangeInPlace(t *testing.T) {
	h := newHarness(t)
	nodes := h.fleet()
	j := testJob("web", 1)
	j.Datacenters = []string{"dc1", "dc2"}
	j.Constraints = []*state.Constraint{con("${node.unique.name}", "=", "n1")}
	h.process(h.register(j))
	h.settle("web")
	first := h.live("web")
	if len(first) != 1 || first[0].NodeID != nodes["n1"].ID {
		t.Fatalf("live %v", first)
	}

	v2 := h.job("web").Copy()
	v2.Constraints = []*state.Constraint{con("${meta.rack}", "=", "r1")} // n1 still qualifies
	p := h.process(h.register(v2))
	if live := h.live("web"); len(live) != 1 || live[0].ID != first[0].ID || p.Status != state.EvalStatusComplete {
		t.Fatalf("still on a qualifying node: live %v, want %s kept in place", names(live), first[0].ID)
	}
	h.settle("web")

	v3 := h.job("web").Copy()
	v3.Constraints = []*state.Constraint{con("${node.unique.name}", "=", "n3")} // n1 no longer does
	h.process(h.register(v3))
	live := h.live("web")
	if len(live) != 1 || live[0].ID == first[0].ID || live[0].NodeID != nodes["n3"].ID {
		t.Fatalf("live %v: want a replacement on n3", names(live))
	}
	if got := fmt.Sprint(live[0].Metrics.ConstraintFiltered); got != "map[${node.unique.name} = n3:2]" {
		t.Fatalf("replacement metric %s", got)
	}
}

// TestPlacedAllocationMetrics: a placed allocation keeps its metric, with
// the scored nodes best first (the chosen node on top) and its time; with
// limited placement, 2 of the 3 nodes are scored (Nomad's limit: ⌈log2 n⌉,
// at least 2).
func TestPlacedAllocationMetrics(t *testing.T) {
	h := newHarness(t)
	nodes := h.fleet()
	j := testJob("web", 1)
	j.Datacenters = []string{"dc1", "dc2"}
	e := h.process(h.register(j))
	live := h.live("web")
	if len(live) != 1 || e.FailedTGAllocs != nil {
		t.Fatalf("live %d, failed %v", len(live), e.FailedTGAllocs)
	}
	m := live[0].Metrics
	if m == nil || m.NodesEvaluated != 3 || m.NodesFiltered != 0 || m.NodesExhausted != 0 || m.AllocationTime <= 0 {
		t.Fatalf("metric %+v", m)
	}
	if len(m.ScoreMetaData) != 3 || m.ScoreMetaData[0].NodeID != live[0].NodeID {
		t.Fatalf("scores %+v, placed on %s", m.ScoreMetaData, live[0].NodeID)
	}
	for _, s := range m.ScoreMetaData {
		if _, ok := s.Scores["binpack"]; !ok || s.NormScore <= 0 || s.NormScore > 1 {
			t.Fatalf("score %+v", s)
		}
	}
	_ = nodes

	lh := newHarness(t)
	lh.limited = true
	lh.fleet()
	lh.process(lh.register(j))
	if live := lh.live("web"); len(live) != 1 || live[0].Metrics == nil || len(live[0].Metrics.ScoreMetaData) != 2 ||
		live[0].Metrics.ScoreMetaData[0].NodeID != live[0].NodeID || live[0].Metrics.NodesEvaluated != 3 {
		t.Fatalf("limited placement: %+v", live)
	}
}
