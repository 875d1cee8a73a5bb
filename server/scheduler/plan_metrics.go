package scheduler

import (
	"github.com/ctlplane/ctlplane/state"
)

// PlacementMetric is Nomad's AllocMetric: what the scheduler saw placing an
// allocation, or failing to (what `nomad job plan` prints under "Failed to
// place" and an evaluation keeps in FailedTGAllocs).
type PlacementMetric = state.AllocMetric

// Nomad's dimension names for a node that ran out of room.
const (
	dimensionCPU    = "cpu"
	dimensionMemory = "memory"
)

// exhausted names the first dimension need does not fit in ("" if it fits).
func exhausted(ni *nodeInfo, need state.Resources) string {
	c := ni.node.Resources
	if _, ok := state.Room(c.CPU, ni.used.CPU, need.CPU); !ok {
		return dimensionCPU
	}
	if _, ok := state.Room(c.MemoryMB, ni.used.MemoryMB, need.MemoryMB); !ok {
		return dimensionMemory
	}
	return ""
}

// recordFailure keeps the first failed placement's metric per group and
// counts the later ones as coalesced (Nomad's failedTGAllocs).
func (res *result) recordFailure(group string, m *state.AllocMetric, p *placer) {
	res.placer = p // its class eligibility goes on the blocked evaluation
	if res.failed == nil {
		res.failed = map[string]*state.AllocMetric{}
	}
	if prev := res.failed[group]; prev != nil {
		prev.CoalescedFailures++
		return
	}
	res.failed[group] = m
}
