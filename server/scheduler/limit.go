package scheduler

import (
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/ctlplane/ctlplane/state"
)

// Nomad's LimitIterator: a placement without affinities or spreads scores
// only the first few nodes that fit, in an order shuffled per evaluation,
// each placement going on where the one before stopped, so that a large
// group is spread over the cluster and a placement costs O(log n), not
// O(n). Nodes scoring at most skipScoreThreshold (the job already runs
// there, or a predecessor failed there) are passed over, up to maxSkip of
// them, and considered only if the nodes run out first.
const (
	skipScoreThreshold = 0.0
	maxSkip            = 3
)

// scoreLimit is how many fitting nodes a service placement scores among n
// nodes of the job's datacenters and pool: ⌈log2 n⌉, at least 2.
func scoreLimit(n int) int {
	if n <= 4 {
		return 2
	}
	return int(math.Ceil(math.Log2(float64(n))))
}

// seedOf derives an evaluation's node order from its ID.
func seedOf(evalID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(evalID))
	return h.Sum64()
}

// limited offers the group's feasible nodes to pick in the evaluation's
// order, from where the last placement of the group stopped, until
// scoreLimit of them were scored (score ok) or all were seen.
func (g *groupStatic) limited(seed uint64, group string, score func(int) (nodeScore, []state.AllocatedPort, bool),
	pick func(nodeScore, []state.AllocatedPort)) {
	n := len(g.feasible)
	if n == 0 {
		return
	}
	if g.order == nil {
		h := fnv.New64a()
		h.Write([]byte(group))
		g.order = rand.New(rand.NewPCG(seed, h.Sum64())).Perm(n)
	}
	limit := scoreLimit(g.evaluated)
	type skippedNode struct {
		ns    nodeScore
		ports []state.AllocatedPort
	}
	var skipped []skippedNode
	seen, visited := 0, 0
	for visited < n && seen < limit {
		i := g.order[(g.next+visited)%n]
		visited++
		ns, ports, ok := score(i)
		if !ok {
			continue
		}
		if ns.norm <= skipScoreThreshold && len(skipped) < maxSkip {
			skipped = append(skipped, skippedNode{ns, ports})
			continue
		}
		seen++
		pick(ns, ports)
	}
	g.next = (g.next + visited) % n
	// Every node was seen before the limit: the passed-over ones all
	// compete (Nomad takes them only up to the limit, which on a small
	// cluster of equal empty nodes, all scoring 0, piled a group onto the
	// first two).
	if seen < limit {
		for _, s := range skipped {
			pick(s.ns, s.ports)
		}
	}
}
