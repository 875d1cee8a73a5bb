package scheduler

import (
	"fmt"
	"math"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// spreadFleet registers three nodes in each of dc1, dc2 and dc3.
func spreadFleet(h *harness) map[string]string {
	dcOf := map[string]string{}
	for _, dc := range []string{"dc1", "dc2", "dc3"} {
		for i := range 3 {
			n := h.fleetNode(fmt.Sprintf("%s-%d", dc, i), dc, "", "", map[string]string{"kernel.name": "linux"}, nil)
			dcOf[n.ID] = dc
		}
	}
	return dcOf
}

// TestSpreadTargetsProperty: for every count from 1 to 30, a spread over
// three datacenters with targets 50/30/20 places each datacenter's share
// within one allocation of its target, and every allocation's metric
// scores "allocation-spread".
func TestSpreadTargetsProperty(t *testing.T) {
	for count := 1; count <= 30; count++ {
		h := newHarness(t)
		dcOf := spreadFleet(h)
		j := testJob("web", count, withMaxParallel(count))
		j.Datacenters = []string{"dc1", "dc2", "dc3"}
		j.TaskGroups[0].Spreads = []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100, SpreadTarget: []*state.SpreadTarget{
			{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 30}, {Value: "dc3", Percent: 20},
		}}}
		h.process(h.register(j))
		got := map[string]int{}
		live := h.live("web")
		for _, a := range live {
			got[dcOf[a.NodeID]]++
		}
		if len(live) != count {
			t.Fatalf("count %d: %d placed", count, len(live))
		}
		for dc, pct := range map[string]float64{"dc1": 50, "dc2": 30, "dc3": 20} {
			if want := pct / 100 * float64(count); math.Abs(float64(got[dc])-want) > 1 {
				t.Fatalf("count %d: %v, %s wants %.1f", count, got, dc, want)
			}
		}
		if count > 1 {
			scored := false
			for _, s := range live[len(live)-1].Metrics.ScoreMetaData {
				_, ok := s.Scores["allocation-spread"]
				scored = scored || ok
			}
			if !scored {
				t.Fatalf("count %d: no allocation-spread score in %+v", count, live[len(live)-1].Metrics.ScoreMetaData)
			}
		}
	}
}

// TestSpreadEvenAndImplicit: without targets the allocations spread evenly
// over the attribute's values; targets short of 100% leave the rest to
// the other values (Nomad's implicit "*" target); a job-level spread
// applies to the group.
func TestSpreadEvenAndImplicit(t *testing.T) {
	run := func(t *testing.T, count int, jobLevel bool, targets ...*state.SpreadTarget) map[string]int {
		h := newHarness(t)
		dcOf := spreadFleet(h)
		j := testJob("web", count, withMaxParallel(count))
		j.Datacenters = []string{"dc1", "dc2", "dc3"}
		sp := []*state.Spread{{Attribute: "${node.datacenter}", Weight: 50, SpreadTarget: targets}}
		if jobLevel {
			j.Spreads = sp
		} else {
			j.TaskGroups[0].Spreads = sp
		}
		h.process(h.register(j))
		got := map[string]int{}
		for _, a := range h.live("web") {
			got[dcOf[a.NodeID]]++
		}
		return got
	}
	if got := run(t, 9, false); got["dc1"] != 3 || got["dc2"] != 3 || got["dc3"] != 3 {
		t.Fatalf("even spread of 9: %v", got)
	}
	if got := run(t, 6, true); got["dc1"] != 2 || got["dc2"] != 2 || got["dc3"] != 2 {
		t.Fatalf("job-level even spread of 6: %v", got)
	}
	// Targets short of 100%: every other value may take the remaining
	// count ("*": 10 - 6 = 4 each, as Nomad counts it); targets adding up
	// to 100% give other values the maximum penalty.
	node := func(dc string) *state.Node { return &state.Node{Datacenter: dc} }
	p := &placer{}
	j := testJob("web", 10)
	j.TaskGroups[0].Spreads = []*state.Spread{{Attribute: "${node.datacenter}", Weight: 50, SpreadTarget: []*state.SpreadTarget{{Value: "dc1", Percent: 60}}}}
	sp := p.groupSpreads(j, j.TaskGroups[0])
	if got := sp[0].desired; got["dc1"] != 6 || got[implicitTarget] != 4 {
		t.Fatalf("desired %v", got)
	}
	if s1, s2 := spreadScore(sp, node("dc1")), spreadScore(sp, node("dc2")); math.Abs(s1-5.0/6) > 1e-9 || math.Abs(s2-3.0/4) > 1e-9 {
		t.Fatalf("scores dc1 %v, dc2 %v", s1, s2)
	}
	j.TaskGroups[0].Spreads[0].SpreadTarget = append(j.TaskGroups[0].Spreads[0].SpreadTarget, &state.SpreadTarget{Value: "dc2", Percent: 40})
	sp = p.groupSpreads(j, j.TaskGroups[0])
	if got := spreadScore(sp, node("dc3")); got != -1 {
		t.Fatalf("a value without a target when the targets cover 100%%: %v, want -1", got)
	}
	// An even spread over an attribute a node lacks: the maximum penalty
	// once something is placed.
	if got := evenSpreadBoost(map[string]uint64{"r1": 1}, "", false); got != -1 {
		t.Fatalf("unset attribute: %v", got)
	}
}
