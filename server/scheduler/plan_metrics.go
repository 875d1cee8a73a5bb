package scheduler

import (
	"github.com/ctlplane/ctlplane/state"
)

// PlacementMetric says why a group's allocations found no node, in the
// shape of Nomad's AllocMetric (what `nomad job plan` prints under
// "Failed to place"). Only what ctlplane's placement checks is counted:
// ready nodes in the job's datacenters, drivers, CPU and memory.
type PlacementMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesAvailable     map[string]int
	ConstraintFiltered map[string]int `json:",omitempty"`
	NodesExhausted     int
	DimensionExhausted map[string]int `json:",omitempty"`
	CoalescedFailures  int
}

// Nomad's texts for a node without the group's drivers and for the
// dimensions a node ran out of.
const (
	filterMissingDrivers = "missing drivers"
	dimensionCPU         = "cpu"
	dimensionMemory      = "memory"
)

// FailedPlacements explains, for each group of job with queued (unplaced)
// allocations, what the nodes lacked once plan's placements and stops are
// counted: what a failed placement's metrics would have said.
func FailedPlacements(snap State, job *state.Job, plan *state.Plan, queued map[string]int) (map[string]*PlacementMetric, error) {
	out := map[string]*PlacementMetric{}
	for _, tg := range job.TaskGroups {
		if queued[tg.Name] > 0 {
			out[tg.Name] = &PlacementMetric{CoalescedFailures: queued[tg.Name] - 1, NodesAvailable: map[string]int{}}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	_, nodes, err := snap.Nodes(nil)
	if err != nil {
		return nil, err
	}
	_, allocs, err := snap.Allocs(nil, state.AllNamespaces)
	if err != nil {
		return nil, err
	}
	p := newPlacer(nodes, allocs, job.Namespace, job.ID)
	stopped := map[string]bool{}
	for _, s := range plan.Stops {
		stopped[s.AllocID] = true
	}
	for _, a := range allocs {
		if stopped[a.ID] && !a.TerminalStatus() {
			p.release(a)
		}
	}
	for _, a := range plan.Placements {
		if ni := p.byID[a.NodeID]; ni != nil {
			ni.used.CPU += a.Resources.CPU
			ni.used.MemoryMB += a.Resources.MemoryMB
		}
	}
	for _, tg := range job.TaskGroups {
		m := out[tg.Name]
		if m == nil {
			continue
		}
		need := tg.Resources()
		for _, ni := range p.nodes {
			if !inDatacenters(job.Datacenters, ni.node.Datacenter) {
				continue
			}
			m.NodesEvaluated++
			m.NodesAvailable[ni.node.Datacenter]++
			if !hasDrivers(ni.node, tg) {
				m.NodesFiltered++
				addCount(&m.ConstraintFiltered, filterMissingDrivers)
				continue
			}
			if dim := exhausted(ni, need); dim != "" {
				m.NodesExhausted++
				addCount(&m.DimensionExhausted, dim)
			}
		}
	}
	return out, nil
}

// exhausted names the first dimension need does not fit in ("" if it fits).
func exhausted(ni *nodeInfo, need state.Resources) string {
	c := ni.node.Resources
	switch {
	case c.CPU > 0 && ni.used.CPU+need.CPU > c.CPU:
		return dimensionCPU
	case c.MemoryMB > 0 && ni.used.MemoryMB+need.MemoryMB > c.MemoryMB:
		return dimensionMemory
	}
	return ""
}

func addCount(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}
