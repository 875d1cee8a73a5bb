package scheduler

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/server/scheduler/usage"
	"github.com/ctlplane/ctlplane/state"
)

// TestStaticByClassMatchesByNode checks random fleets and jobs both ways:
// the static checks once per computed class (staticByClass) and node by
// node (staticByNode, the uncached reference) find the same feasible
// nodes, counts, filter tallies of the first and later placements,
// affinity scores and class eligibility, group after group.
func TestStaticByClassMatchesByNode(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		list := usage.NewNodeList(1, randomFleet(rng))
		job := randomStaticJob(rng)
		byClass := newPlacer(list, nil, "", "")
		byNode := newPlacer(list, nil, "", "")
		byNode.uncached = true
		for _, tg := range job.TaskGroups {
			a, b := byClass.staticFor(job, tg), byNode.staticFor(job, tg)
			if x, y := staticShape(a), staticShape(b); x != y {
				t.Fatalf("seed %d, group %s:\nby class %s\nby node  %s", seed, tg.Name, x, y)
			}
			if !reflect.DeepEqual(a.affinities, b.affinities) {
				t.Fatalf("seed %d, group %s: affinities by class %v, by node %v", seed, tg.Name, a.affinities, b.affinities)
			}
		}
		ea, xa := byClass.classEligibility()
		eb, xb := byNode.classEligibility()
		if !reflect.DeepEqual(ea, eb) || xa != xb {
			t.Fatalf("seed %d: class eligibility by class %v (escaped %v), by node %v (escaped %v)", seed, ea, xa, eb, xb)
		}
		byClass.releaseNodes()
		byNode.releaseNodes()
	}
}

// staticShape is what a group's static checks found, as text.
func staticShape(g *groupStatic) string {
	var ids []string
	for _, ni := range g.feasible {
		ids = append(ids, ni.node.Name+"/"+ni.class)
	}
	return fmt.Sprintf("feasible %v evaluated %d inPool %d available %v first %+v later %+v",
		ids, g.evaluated, g.inPool, g.available, g.first, g.later)
}

func randomFleet(rng *rand.Rand) []*state.Node {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	var nodes []*state.Node
	for i := range 5 + rng.Intn(40) {
		drivers := map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: rng.Intn(8) != 0}}
		if rng.Intn(2) == 0 {
			drivers["exec"] = &state.DriverInfo{Detected: true, Healthy: true}
		}
		n := &state.Node{
			ID: fmt.Sprintf("%08d-node", rng.Intn(1e8)), Name: fmt.Sprint("n", i),
			Datacenter: pick("dc1", "dc1", "dc2", "eu-1"), NodeClass: pick("", "small", "big"), NodePool: pick("", "default", "gpu"),
			Drivers: drivers, Resources: state.Resources{CPU: 4000, MemoryMB: 4096},
			Attributes: map[string]string{"kernel.name": pick("linux", "linux", "windows"), "cpu.arch": pick("amd64", "arm64"),
				"unique.hostname": fmt.Sprint("host-", i)},
			Meta:   map[string]string{"rack": pick("r1", "r2", "r3")},
			Status: state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible,
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func randomStaticJob(rng *rand.Rand) *state.Job {
	constraints := []*state.Constraint{
		con("${attr.kernel.name}", "=", "linux"),
		con("${attr.cpu.arch}", "!=", "arm64"),
		con("${meta.rack}", "regexp", "r[12]"),
		con("${node.class}", "=", "big"),
		con("${node.datacenter}", "=", "dc1"),
		con("${attr.unique.hostname}", "!=", "host-3"), // escapes the classes
		con("${meta.zone}", "is_set", ""),
		con("${attr.kernel.name}", "set_contains_any", "linux,windows"),
	}
	some := func(max int) []*state.Constraint {
		var out []*state.Constraint
		for range rng.Intn(max + 1) {
			out = append(out, constraints[rng.Intn(len(constraints))])
		}
		return out
	}
	pools := []string{"", "default", "gpu", state.NodePoolAll}
	dcs := [][]string{{"dc1"}, {"dc*"}, {"dc1", "eu-1"}, {"*"}}
	job := &state.Job{ID: "j", NodePool: pools[rng.Intn(len(pools))], Datacenters: dcs[rng.Intn(len(dcs))], Constraints: some(2)}
	for g := range 1 + rng.Intn(3) {
		driver := "mock_driver"
		if rng.Intn(4) == 0 {
			driver = "exec"
		}
		tg := &state.TaskGroup{Name: fmt.Sprint("g", g), Count: 1, Constraints: some(2),
			Tasks: []*state.Task{{Name: "t", Driver: driver, Constraints: some(1), Resources: &state.Resources{CPU: 10, MemoryMB: 10}}}}
		if rng.Intn(3) == 0 {
			tg.Affinities = []*state.Affinity{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1", Weight: 50}}
		}
		job.TaskGroups = append(job.TaskGroups, tg)
	}
	return job
}
