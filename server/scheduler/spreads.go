package scheduler

import (
	"github.com/ctlplane/ctlplane/state"
)

// implicitTarget is the value that takes a spread's remaining share when
// its targets add up to less than 100% (Nomad's "*").
const implicitTarget = "*"

// spreadUse is one spread of a group as one placement sees it: the
// desired count per value (none: spread evenly), the relative weight, and
// the group's allocations per value of the attribute.
type spreadUse struct {
	attribute string
	weight    float64
	desired   map[string]float64
	used      map[string]uint64
}

// groupSpreads prepares the group's and the job's spreads for one
// placement (nil without spreads), as Nomad's computeSpreadInfo.
func (p *placer) groupSpreads(job *state.Job, tg *state.TaskGroup) []*spreadUse {
	all := append(append([]*state.Spread(nil), tg.Spreads...), job.Spreads...)
	if len(all) == 0 {
		return nil
	}
	var sumWeights float64
	for _, s := range all {
		sumWeights += float64(s.Weight)
	}
	out := make([]*spreadUse, 0, len(all))
	for _, s := range all {
		u := &spreadUse{attribute: s.Attribute, weight: float64(s.Weight) / sumWeights, desired: map[string]float64{}, used: map[string]uint64{}}
		var sum float64
		for _, t := range s.SpreadTarget {
			d := float64(t.Percent) / 100 * float64(tg.Count)
			u.desired[t.Value] = d
			sum += d
		}
		if sum > 0 && sum < float64(tg.Count) {
			u.desired[implicitTarget] = float64(tg.Count) - sum
		}
		for _, ni := range p.nodes {
			if n := ni.groupAllocs[tg.Name]; n > 0 {
				if v, ok := resolveTarget(s.Attribute, ni.node); ok {
					u.used[v] += uint64(n)
				}
			}
		}
		out = append(out, u)
	}
	return out
}

// spreadScore is Nomad's "allocation-spread" score of placing one more
// allocation on n.
func spreadScore(spreads []*spreadUse, n *state.Node) float64 {
	var total float64
	for _, u := range spreads {
		value, ok := resolveTarget(u.attribute, n)
		if len(u.desired) == 0 {
			total += evenSpreadBoost(u.used, value, ok)
			continue
		}
		if !ok {
			total--
			continue
		}
		desired, found := u.desired[value]
		if !found {
			if desired, found = u.desired[implicitTarget]; !found {
				total--
				continue
			}
		}
		used := float64(u.used[value] + 1) // counting this placement
		total += (desired - used) / desired * u.weight
	}
	return total
}

// evenSpreadBoost is Nomad's evenSpreadScoreBoost: the fewer allocations a
// value has compared with the others, the higher.
func evenSpreadBoost(used map[string]uint64, value string, ok bool) float64 {
	if len(used) == 0 {
		return 0
	}
	if !ok {
		return -1
	}
	current := used[value]
	var minCount, maxCount uint64
	for _, c := range used {
		if minCount == 0 || c < minCount {
			minCount = c
		}
		if maxCount == 0 || c > maxCount {
			maxCount = c
		}
	}
	switch {
	case current != minCount:
		if minCount == 0 {
			return -1
		}
		return float64(int64(minCount)-int64(current)) / float64(minCount)
	case minCount == maxCount:
		return -1
	case minCount == 0:
		return 1
	}
	return float64(maxCount-minCount) / float64(minCount)
}
