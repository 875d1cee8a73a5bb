package scheduler

import (
	"math"
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// TestAffinities: affinities rank the nodes that pass the constraints
// without ruling any out: a positive weight draws the allocation to the
// nodes that match, a negative one pushes it away, several are weighed
// against each other; ScoreMetaData shows "node-affinity" beside
// "binpack".
func TestAffinities(t *testing.T) {
	aff := func(l, op, r string, w int8) *state.Affinity {
		return &state.Affinity{LTarget: l, Operand: op, RTarget: r, Weight: w}
	}
	cases := []struct {
		name   string
		level  string
		as     []*state.Affinity
		want   string
		scores map[string]float64 // node-affinity per node name
	}{
		{"a positive weight draws to the matching node", "", []*state.Affinity{aff("${node.class}", "=", "linux-big", 50)}, "n2",
			map[string]float64{"n1": 0, "n2": 1, "n3": 0}},
		{"a negative weight pushes away from the matching nodes", "", []*state.Affinity{aff("${attr.kernel.name}", "=", "linux", -100)}, "n3",
			map[string]float64{"n1": -1, "n2": -1, "n3": 0}},
		{"weights are weighed against each other", "", []*state.Affinity{
			aff("${meta.rack}", "=", "r1", 20), aff("${attr.cpu.arch}", "=", "amd64", 20), aff("${node.datacenter}", "=", "dc2", -60),
		}, "n1", map[string]float64{"n1": 0.4, "n2": 0, "n3": -0.2}},
		{"set_contains_any as an affinity", "", []*state.Affinity{aff("${attr.features}", "set_contains_any", "avx2", 100)}, "n1",
			map[string]float64{"n1": 1, "n2": 0, "n3": 0}},
		{"a job affinity", "job", []*state.Affinity{aff("${node.pool}", "=", "gpu", 70)}, "n3", map[string]float64{"n3": 1}},
		{"a task affinity", "task", []*state.Affinity{aff("${attr.kernel.version}", "version", "~> 6.0", 10)}, "n2", map[string]float64{"n2": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			nodes := h.fleet()
			names := map[string]string{}
			for name, n := range nodes {
				names[n.ID] = name
			}
			j := testJob("web", 1)
			j.Datacenters = []string{"dc1", "dc2"}
			switch tc.level {
			case "job":
				j.Affinities = tc.as
			case "task":
				j.TaskGroups[0].Tasks[0].Affinities = tc.as
			default:
				j.TaskGroups[0].Affinities = tc.as
			}
			h.process(h.register(j))
			live := h.live("web")
			if len(live) != 1 || names[live[0].NodeID] != tc.want {
				t.Fatalf("placed on %v, want %s", placedOn(h, "web", names), tc.want)
			}
			m := live[0].Metrics
			if len(m.ScoreMetaData) != 3 || m.ScoreMetaData[0].NodeID != live[0].NodeID || m.NodesFiltered != 0 {
				t.Fatalf("metric %+v", m)
			}
			for _, s := range m.ScoreMetaData {
				want, ok := tc.scores[names[s.NodeID]]
				if !ok {
					continue
				}
				if got := s.Scores["node-affinity"]; math.Abs(got-want) > 1e-9 {
					t.Errorf("%s: node-affinity %v, want %v (scores %v)", names[s.NodeID], got, want, s.Scores)
				}
			}
		})
	}
}

// TestAffinityChangeIsDestructive: a new affinity replaces the running
// allocation (Nomad's affinitiesUpdated), and the replacement goes where
// the affinity draws it.
func TestAffinityChangeIsDestructive(t *testing.T) {
	h := newHarness(t)
	nodes := h.fleet()
	j := testJob("web", 1)
	j.Datacenters = []string{"dc1", "dc2"}
	j.TaskGroups[0].Affinities = []*state.Affinity{{LTarget: "${node.unique.name}", Operand: "=", RTarget: "n1", Weight: 100}}
	h.process(h.register(j))
	h.settle("web")
	first := h.live("web")
	if len(first) != 1 || first[0].NodeID != nodes["n1"].ID {
		t.Fatalf("live %v", names(first))
	}
	v2 := h.job("web").Copy()
	tg := *v2.TaskGroups[0]
	tg.Affinities = []*state.Affinity{{LTarget: "${node.unique.name}", Operand: "=", RTarget: "n3", Weight: 100}}
	v2.TaskGroups = []*state.TaskGroup{&tg}
	h.process(h.register(v2))
	live := h.live("web")
	got := []string{}
	for _, a := range live {
		got = append(got, a.NodeID)
	}
	if len(live) != 1 || live[0].ID == first[0].ID || !reflect.DeepEqual(got, []string{nodes["n3"].ID}) {
		t.Fatalf("live %v: want a replacement on n3", names(live))
	}
}
