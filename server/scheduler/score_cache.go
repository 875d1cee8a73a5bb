package scheduler

import "github.com/ctlplane/ctlplane/state"

// scoredNode is what one placement's check and score gave for a feasible
// node at the node's version.
type scoredNode struct {
	version uint64 // the node's version when computed (0: never)
	outcome string // "" when it fits, else the dimension it is exhausted in
	score   float64
	ports   []state.AllocatedPort
	ns      nodeScore
}

// scoresFor is the group's cache of node scores for tg (one per feasible
// node), or nil when the placement depends on more than the node's own
// info and the group: ranked placements (affinities, spreads), distinct
// hosts or properties, nodes to avoid. Between two placements of a group
// only the nodes whose version moved (the one that took the last, one a
// stop released) are checked and scored again: a plan of 1,000
// placements on 1,000 nodes scored a million nodes. The group's first
// placement scores without it: a group placed once (a one-allocation job)
// has nothing to reuse, and making the cache was a fifth of what such an
// evaluation allocated.
func (g *groupStatic) scoresFor(tg *state.TaskGroup, off bool) []scoredNode {
	if off {
		return nil
	}
	if g.asked++; g.asked == 1 {
		return nil
	}
	if g.scoredFor != tg {
		// Another job version's group of the same name: its own scores.
		g.scoredFor = tg
		if g.scores == nil {
			g.scores = make([]scoredNode, len(g.feasible))
		} else {
			clear(g.scores)
		}
	}
	return g.scores
}
