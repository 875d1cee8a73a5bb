package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/state"
)

// Nomad's filter reasons that are not a constraint's text.
const (
	filterMissingDrivers = "missing drivers"
	filterClassInelig    = "computed class ineligible"
)

// eligibility is Nomad's EvalEligibility: per computed node class, whether
// the job's and each group's static checks passed. A class found
// ineligible is not checked again in the same evaluation (its nodes are
// filtered as "computed class ineligible"); constraints on unique values
// escape the cache.
type eligibility struct {
	job    map[string]bool
	groups map[string]map[string]bool
}

func newEligibility() eligibility {
	return eligibility{job: map[string]bool{}, groups: map[string]map[string]bool{}}
}

// newMetric starts a placement's metric: the ready nodes of the pool and,
// per datacenter of the job, those available.
func (p *placer) newMetric(job *state.Job) *state.AllocMetric {
	m := &state.AllocMetric{NodesAvailable: map[string]int{}, NodesInPool: len(p.nodes)}
	for _, ni := range p.nodes {
		if inDatacenters(job.Datacenters, ni.node.Datacenter) {
			m.NodesAvailable[ni.node.Datacenter]++
		}
	}
	return m
}

// feasible runs Nomad's feasibility chain on one node for tg: the job's
// constraints, the group's drivers, the group's and tasks' constraints,
// then distinct_hosts and distinct_property. A node that fails is counted
// in m with the reason.
func (p *placer) feasible(m *state.AllocMetric, job *state.Job, tg *state.TaskGroup, ni *nodeInfo) bool {
	n := ni.node
	class := computedClass(n)
	jobEscaped := escapes(job.Constraints)
	if ok, known := p.elig.job[class]; known && !ok && !jobEscaped {
		m.FilterNode(n, filterClassInelig)
		return false
	}
	for _, c := range job.Constraints {
		if !meetsConstraint(c, n) {
			m.FilterNode(n, c.String())
			if !jobEscaped {
				p.elig.job[class] = false
			}
			return false
		}
	}
	if !jobEscaped {
		p.elig.job[class] = true
	}
	tgCons := append(append([]*state.Constraint(nil), tg.Constraints...), taskConstraints(tg)...)
	tgEscaped := escapes(tgCons)
	groupElig := p.elig.groups[tg.Name]
	if groupElig == nil {
		groupElig = map[string]bool{}
		p.elig.groups[tg.Name] = groupElig
	}
	ok, known := groupElig[class]
	switch {
	case known && !ok && !tgEscaped:
		m.FilterNode(n, filterClassInelig)
		return false
	case known && ok && !tgEscaped:
	default:
		if !hasDrivers(n, tg) {
			m.FilterNode(n, filterMissingDrivers)
			if !tgEscaped {
				groupElig[class] = false
			}
			return false
		}
		for _, c := range tgCons {
			if !meetsConstraint(c, n) {
				m.FilterNode(n, c.String())
				if !tgEscaped {
					groupElig[class] = false
				}
				return false
			}
		}
		if !tgEscaped {
			groupElig[class] = true
		}
	}
	if !p.distinctHosts(job, tg, ni) {
		m.FilterNode(n, ConstraintDistinctHosts)
		return false
	}
	for _, c := range job.Constraints {
		if reason := p.distinctProperty(c, "", ni); reason != "" {
			m.FilterNode(n, reason)
			return false
		}
	}
	for _, c := range tg.Constraints {
		if reason := p.distinctProperty(c, tg.Name, ni); reason != "" {
			m.FilterNode(n, reason)
			return false
		}
	}
	return true
}

func taskConstraints(tg *state.TaskGroup) []*state.Constraint {
	var out []*state.Constraint
	for _, t := range tg.Tasks {
		out = append(out, t.Constraints...)
	}
	return out
}

// distinctHosts: with distinct_hosts on the job, no two allocations of the
// job on a node; on the group, no two of the group.
func (p *placer) distinctHosts(job *state.Job, tg *state.TaskGroup, ni *nodeInfo) bool {
	if hasOperand(job.Constraints, ConstraintDistinctHosts) && ni.jobAllocs > 0 {
		return false
	}
	return !hasOperand(tg.Constraints, ConstraintDistinctHosts) || ni.groupAllocs[tg.Name] == 0
}

// distinctProperty checks one distinct_property constraint (group "" for
// the job's, counting every allocation of the job): at most RTarget
// (default 1) allocations per value of the property. It returns Nomad's
// filter reason, or "" when the node passes.
func (p *placer) distinctProperty(c *state.Constraint, group string, ni *nodeInfo) string {
	if c.Operand != ConstraintDistinctProperty {
		return ""
	}
	allowed := uint64(1)
	if c.RTarget != "" {
		v, err := strconv.ParseUint(c.RTarget, 10, 64)
		if err != nil {
			return fmt.Sprintf("failed to convert RTarget %q to uint64: %v", c.RTarget, err)
		}
		allowed = v
	}
	value, ok := resolveTarget(c.LTarget, ni.node)
	if !ok {
		return fmt.Sprintf("missing property %q", c.LTarget)
	}
	var used uint64
	for _, o := range p.nodes {
		if v, ok := resolveTarget(c.LTarget, o.node); !ok || v != value {
			continue
		}
		if group == "" {
			used += uint64(max(o.jobAllocs, 0))
		} else {
			used += uint64(max(o.groupAllocs[group], 0))
		}
	}
	if used < allowed {
		return ""
	}
	return fmt.Sprintf("distinct_property: %s=%s used by %d allocs", c.LTarget, value, used)
}

func hasOperand(cs []*state.Constraint, op string) bool {
	for _, c := range cs {
		if c.Operand == op {
			return true
		}
	}
	return false
}

// escapes: some constraint reads a unique value of the node, so its
// outcome cannot be cached per class (Nomad's escapedConstraints).
func escapes(cs []*state.Constraint) bool {
	for _, c := range cs {
		for _, t := range []string{c.LTarget, c.RTarget} {
			if strings.HasPrefix(t, "${node.unique.") || strings.HasPrefix(t, "${attr.unique.") || strings.HasPrefix(t, "${meta.unique.") {
				return true
			}
		}
	}
	return false
}

// computedClass identifies nodes that look alike to the scheduler (Nomad's
// ComputedClass): datacenter, class, pool, drivers, and the attributes
// and meta that are not unique.* keys.
func computedClass(n *state.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q", n.Datacenter, n.NodeClass, nodePool(n))
	for _, d := range slices.Sorted(maps.Keys(n.Drivers)) {
		fmt.Fprintf(&b, " d:%q=%v", d, n.HasDriver(d))
	}
	for _, kv := range []struct {
		tag string
		m   map[string]string
	}{{"a", n.Attributes}, {"m", n.Meta}} {
		for _, k := range slices.Sorted(maps.Keys(kv.m)) {
			if !strings.HasPrefix(k, "unique.") {
				fmt.Fprintf(&b, " %s:%q=%q", kv.tag, k, kv.m[k])
			}
		}
	}
	return b.String()
}

// scoreMeta is a feasible node's score: Nomad's "binpack" (the fuller the
// node after placing, the higher, 0..1) and the reschedule penalty.
func scoreMeta(ni *nodeInfo, free float64, avoided bool) *state.NodeScoreMeta {
	s := &state.NodeScoreMeta{NodeID: ni.node.ID, Scores: map[string]float64{"binpack": 1 - free/2}}
	if avoided {
		s.Scores["node-reschedule-penalty"] = -1
	}
	var sum float64
	for _, v := range s.Scores {
		sum += v
	}
	s.NormScore = sum / float64(len(s.Scores))
	return s
}

// maxScoreMeta is how many top nodes Nomad keeps in ScoreMetaData.
const maxScoreMeta = 5

func topScores(all []*state.NodeScoreMeta) []*state.NodeScoreMeta {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].NormScore != all[j].NormScore {
			return all[i].NormScore > all[j].NormScore
		}
		return all[i].NodeID < all[j].NodeID
	})
	if len(all) > maxScoreMeta {
		all = all[:maxScoreMeta]
	}
	return all
}
