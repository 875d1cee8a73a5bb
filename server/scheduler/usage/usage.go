// Package usage keeps, per node, the resources the live allocations use,
// up to date incrementally: the view the scheduler places against in
// production (the broker's) and in its test harness alike.
package usage

import (
	"sync"

	"github.com/ctlplane/ctlplane/state"
)

// Source is what the view reads from a point-in-time state.
type Source interface {
	// AbandonCh identifies the store (a snapshot restore makes a new one).
	AbandonCh() <-chan struct{}
	AllocsIndex() uint64
	AllocsModifiedSince(index uint64) ([]*state.Allocation, error)
}

// View sums, per node, the resources of the live allocations, kept up
// to date by reading only the allocations written since the last refresh
// (by ModifyIndex). Schedulers get it through the planner (the scheduler's
// UsageSource) instead of walking every allocation of the cluster on every
// evaluation. Workers share it; a view a little ahead of a worker's
// snapshot costs at most a refused plan (the applier checks room again).
type View struct {
	mu      sync.Mutex
	abandon <-chan struct{} // identifies the store the view was built from
	last    uint64
	allocs  map[string]contribution
	nodes   map[string]state.Resources
	// resetAt, when set, makes the view start over at its first refresh
	// from a state whose allocations index has reached it: allocations
	// were deleted (garbage collection) at that index, and a deleted
	// allocation never shows up as changed, so a contribution the view
	// still holds for it would never go.
	resetAt uint64
	// nodeList: the ready nodes, shared by evaluations (NodeList).
	nodeList Nodes
}

// ResetFrom asks for a rebuild once a state at allocations index idx (or
// later) is read.
func (v *View) ResetFrom(idx uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.resetAt = max(v.resetAt, max(idx, 1))
}

type contribution struct {
	node string
	res  state.Resources
}

// NodeUsage refreshes the view from snap and returns a copy of it.
func (v *View) NodeUsage(snap Source) (map[string]state.Resources, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if snap.AbandonCh() != v.abandon || (v.resetAt != 0 && snap.AllocsIndex() >= v.resetAt) {
		v.resetAt = 0
		// A new store (first use, or a snapshot restore): start over.
		v.abandon, v.last = snap.AbandonCh(), 0
		v.allocs = map[string]contribution{}
		v.nodes = map[string]state.Resources{}
	}
	changed, err := snap.AllocsModifiedSince(v.last)
	if err != nil {
		return nil, err
	}
	for _, a := range changed {
		if old, ok := v.allocs[a.ID]; ok {
			v.add(old.node, old.res, -1)
			delete(v.allocs, a.ID)
		}
		if !a.TerminalStatus() {
			v.allocs[a.ID] = contribution{node: a.NodeID, res: a.Resources}
			v.add(a.NodeID, a.Resources, 1)
		}
		v.last = max(v.last, a.ModifyIndex)
	}
	out := make(map[string]state.Resources, len(v.nodes))
	for id, r := range v.nodes {
		out[id] = r
	}
	return out, nil
}

func (v *View) add(node string, r state.Resources, sign int) {
	u := v.nodes[node]
	u = u.Plus(r, sign)
	if u == (state.Resources{}) {
		delete(v.nodes, node)
		return
	}
	v.nodes[node] = u
}
