package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"
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

// groupStatic is what the placement-independent checks (datacenters, the
// job's constraints, drivers, the group's and tasks' constraints) found
// for a group: the nodes that passed, and the filter tallies of the first
// placement and of the later ones (which see failed classes as
// "computed class ineligible", as Nomad's cache does).
type groupStatic struct {
	feasible []*nodeInfo
	// affinities holds each feasible node's node-affinity score (nil
	// without affinities).
	affinities   []float64
	evaluated    int
	inPool       int // ready nodes of the job's node pool
	available    map[string]int
	first, later tally
	used         bool
	// order is the evaluation's shuffled order of feasible (made at the
	// first limited placement); next is where the next placement starts.
	order []int
	next  int
	// scores caches the tightest-fit placements' node scores of scoredFor
	// (scoresFor).
	scores    []scoredNode
	scoredFor *state.TaskGroup
	asked     int // placements that asked scoresFor
}

// tally is a set of filtered nodes as a metric counts them.
type tally struct {
	filtered    int
	class, cons map[string]int
}

func (t *tally) add(n *state.Node, reason string) {
	t.filtered++
	if n.NodeClass != "" {
		addCount(&t.class, n.NodeClass)
	}
	addCount(&t.cons, reason)
}

func addCount(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

// affinity is the i-th feasible node's node-affinity score.
func (g *groupStatic) affinity(i int) float64 {
	if g.affinities == nil {
		return 0
	}
	return g.affinities[i]
}

// metric starts a placement's metric from the static checks' tallies.
func (g *groupStatic) metric(inPool int) *state.AllocMetric {
	t := g.first
	if g.used {
		t = g.later
	}
	g.used = true
	return &state.AllocMetric{
		NodesEvaluated: g.evaluated, NodesInPool: inPool, NodesAvailable: maps.Clone(g.available),
		NodesFiltered: t.filtered, ClassFiltered: maps.Clone(t.class), ConstraintFiltered: maps.Clone(t.cons),
	}
}

// staticFor runs the static checks of tg over the ready nodes of the job's
// datacenters once per evaluation, in Nomad's order.
func (p *placer) staticFor(job *state.Job, tg *state.TaskGroup) *groupStatic {
	if g := p.static[tg.Name]; g != nil {
		return g
	}
	g := &groupStatic{available: map[string]int{}}
	jobEscaped := escapes(job.Constraints)
	tgCons := append(append([]*state.Constraint(nil), tg.Constraints...), taskConstraints(tg)...)
	tgEscaped := escapes(tgCons)
	p.escaped = p.escaped || jobEscaped || tgEscaped
	groupElig := p.elig.groups[tg.Name]
	if groupElig == nil {
		groupElig = map[string]bool{}
		p.elig.groups[tg.Name] = groupElig
	}
	affinities := groupAffinities(job, tg)
	if !jobEscaped && !tgEscaped && !p.uncached {
		p.staticByClass(g, job, tg, tgCons, groupElig, affinities)
	} else {
		p.staticByNode(g, job, tg, tgCons, groupElig, jobEscaped, tgEscaped, affinities)
	}
	p.static[tg.Name] = g
	return g
}

// staticByNode checks every ready node on its own.
func (p *placer) staticByNode(g *groupStatic, job *state.Job, tg *state.TaskGroup, tgCons []*state.Constraint,
	groupElig map[string]bool, jobEscaped, tgEscaped bool, affinities []*state.Affinity) {
	for _, ni := range p.nodes {
		n := ni.node
		if !state.InNodePool(n, job.NodePool) {
			continue
		}
		g.inPool++
		if !inDatacenters(job.Datacenters, n.Datacenter) {
			continue
		}
		g.evaluated++
		g.available[n.Datacenter]++
		if ni.class == "" {
			ni.class = computedClass(n)
		}
		reason, escaped := p.staticCheck(job, tg, tgCons, ni, groupElig, jobEscaped, tgEscaped)
		g.record(ni, reason, escaped, affinities)
	}
}

// staticByClass is staticByNode when no constraint escapes the classes:
// the node pool, the datacenter and every check are the same for the nodes
// of a computed class, so each class is checked once, at its first node
// (which gets the check's reason; the later ones, as in staticByNode, that
// the class is ineligible), and the nodes are then only counted.
func (p *placer) staticByClass(g *groupStatic, job *state.Job, tg *state.TaskGroup, tgCons []*state.Constraint,
	groupElig map[string]bool, affinities []*state.Affinity) {
	type classOutcome struct {
		seen, inPool, inDC bool
		reason, dc         string
		nodes              int
	}
	classes := p.list.Classes()
	outcomes := make([]classOutcome, len(classes.Keys))
	g.feasible = make([]*nodeInfo, 0, len(p.nodes))
	for i, ni := range p.nodes {
		c := classes.ClassOf[i]
		o := &outcomes[c]
		first := !o.seen
		if first {
			o.seen = true
			n := ni.node
			o.inPool = state.InNodePool(n, job.NodePool)
			o.inDC = o.inPool && inDatacenters(job.Datacenters, n.Datacenter)
			o.dc = n.Datacenter // the class's nodes share it
		}
		if !o.inPool {
			continue
		}
		g.inPool++
		if !o.inDC {
			continue
		}
		o.nodes++
		ni.class = classes.Keys[c]
		if first {
			o.reason, _ = p.staticCheck(job, tg, tgCons, ni, groupElig, false, false)
			g.record(ni, o.reason, false, affinities)
			continue
		}
		if o.reason == "" {
			g.record(ni, "", false, affinities)
		} else {
			g.record(ni, filterClassInelig, false, affinities)
		}
	}
	for _, o := range outcomes {
		if o.nodes > 0 {
			g.evaluated += o.nodes
			g.available[o.dc] += o.nodes
		}
	}
}

// record counts a node that passed the static checks (reason "") or
// failed them; a failure that did not escape the class cache is seen by
// the later placements as the class being ineligible.
func (g *groupStatic) record(ni *nodeInfo, reason string, escaped bool, affinities []*state.Affinity) {
	if reason == "" {
		g.feasible = append(g.feasible, ni)
		if len(affinities) > 0 {
			g.affinities = append(g.affinities, affinityScore(affinities, ni.node))
		}
		return
	}
	g.first.add(ni.node, reason)
	if !escaped {
		reason = filterClassInelig
	}
	g.later.add(ni.node, reason)
}

// staticCheck returns why the node fails tg's static checks ("" if it
// passes) and whether that check escaped the class cache.
func (p *placer) staticCheck(job *state.Job, tg *state.TaskGroup, tgCons []*state.Constraint, ni *nodeInfo,
	groupElig map[string]bool, jobEscaped, tgEscaped bool) (string, bool) {
	n, class := ni.node, ni.class
	if ok, known := p.elig.job[class]; known && !ok && !jobEscaped {
		return filterClassInelig, false
	}
	for _, c := range job.Constraints {
		if !meetsConstraint(c, n) {
			if !jobEscaped {
				p.elig.job[class] = false
			}
			return c.String(), jobEscaped
		}
	}
	if !jobEscaped {
		p.elig.job[class] = true
	}
	if ok, known := groupElig[class]; known && !tgEscaped {
		if ok {
			return "", false
		}
		return filterClassInelig, false
	}
	reason := ""
	if !hasDrivers(n, tg) {
		reason = filterMissingDrivers
	} else {
		for _, c := range tgCons {
			if !meetsConstraint(c, n) {
				reason = c.String()
				break
			}
		}
	}
	if !tgEscaped {
		groupElig[class] = reason == ""
	}
	return reason, tgEscaped
}

func taskConstraints(tg *state.TaskGroup) []*state.Constraint {
	var out []*state.Constraint
	for _, t := range tg.Tasks {
		out = append(out, t.Constraints...)
	}
	return out
}

// propertyUse counts, for one distinct_property constraint, the
// allocations per value of its property as this placement sees them.
type propertyUse struct {
	c       *state.Constraint
	allowed uint64
	err     string
	used    map[string]uint64
}

// propertyCounts prepares the job's and the group's distinct_property
// constraints for one placement (nil when there are none).
func (p *placer) propertyCounts(job *state.Job, tg *state.TaskGroup) []*propertyUse {
	var out []*propertyUse
	for _, level := range []struct {
		cs    []*state.Constraint
		group string
	}{{job.Constraints, ""}, {tg.Constraints, tg.Name}} {
		for _, c := range level.cs {
			if c.Operand != ConstraintDistinctProperty {
				continue
			}
			u := &propertyUse{c: c, allowed: 1, used: map[string]uint64{}}
			if c.RTarget != "" {
				v, err := strconv.ParseUint(c.RTarget, 10, 64)
				if err != nil {
					u.err = fmt.Sprintf("failed to convert RTarget %q to uint64: %v", c.RTarget, err)
				}
				u.allowed = v
			}
			for _, o := range p.nodes {
				n := o.jobAllocs
				if level.group != "" {
					n = o.groupAllocs[level.group]
				}
				if v, ok := resolveTarget(c.LTarget, o.node); ok && n > 0 {
					u.used[v] += uint64(n)
				}
			}
			out = append(out, u)
		}
	}
	return out
}

// distinct checks distinct_hosts and distinct_property on a node that
// passed the static checks, returning Nomad's filter reason ("" passes).
func (p *placer) distinct(job *state.Job, tg *state.TaskGroup, ni *nodeInfo, props []*propertyUse) string {
	if (hasOperand(job.Constraints, ConstraintDistinctHosts) && ni.jobAllocs > 0) ||
		(hasOperand(tg.Constraints, ConstraintDistinctHosts) && ni.groupAllocs[tg.Name] > 0) {
		return ConstraintDistinctHosts
	}
	for _, u := range props {
		if u.err != "" {
			return u.err
		}
		value, ok := resolveTarget(u.c.LTarget, ni.node)
		if !ok {
			return fmt.Sprintf("missing property %q", u.c.LTarget)
		}
		if used := u.used[value]; used >= u.allowed {
			return fmt.Sprintf("distinct_property: %s=%s used by %d allocs", u.c.LTarget, value, used)
		}
	}
	return ""
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

// computedClass is the node's class for the eligibility cache.
func computedClass(n *state.Node) string { return n.ComputedClass() }

// classEligibility is Nomad's EvalEligibility.GetClasses: per computed
// class seen, whether some group could use it (a class the job's
// constraints rule out is ineligible), and whether a constraint escaped
// the classes (then any node may help).
func (p *placer) classEligibility() (map[string]bool, bool) {
	out := map[string]bool{}
	for _, classes := range p.elig.groups {
		for class, ok := range classes {
			if ok {
				out[class] = true
			} else if _, seen := out[class]; !seen {
				out[class] = false
			}
		}
	}
	for class, ok := range p.elig.job {
		if !ok {
			out[class] = false
		} else if _, seen := out[class]; !seen {
			out[class] = true
		}
	}
	return out, p.escaped
}

// maxScoreMeta is how many top nodes Nomad keeps in ScoreMetaData.
const maxScoreMeta = 5

// nodeScore is one feasible node's scores, as Nomad's rank iterators
// give them: "binpack" (the fuller the node after placing, the higher,
// 0..1), "job-anti-affinity" (-(collisions+1)/count where the group
// already runs), "node-reschedule-penalty" (-1 where a predecessor
// failed), "node-affinity" (matching weights over all weights); the
// normalized score is their average (the ones that apply).
type nodeScore struct {
	ni                   *nodeInfo
	binpack, anti        float64
	affinity             float64
	avoided, hasAffinity bool
	spread               float64
	hasSpread            bool
	norm                 float64
	// parts counts the scores averaged into norm.
	parts float64
}

// addSpread adds Nomad's "allocation-spread" score (when not zero).
func (s *nodeScore) addSpread(v float64) {
	if v == 0 {
		return
	}
	s.spread, s.hasSpread = v, true
	s.norm = (s.norm*s.parts + v) / (s.parts + 1)
	s.parts++
}

func newNodeScore(ni *nodeInfo, free float64, avoided bool, collisions, count int, affinity float64, hasAffinity bool) nodeScore {
	s := nodeScore{ni: ni, binpack: 1 - free/2, avoided: avoided, affinity: affinity, hasAffinity: hasAffinity}
	sum, n := s.binpack, 1.0
	if collisions > 0 && count > 0 {
		s.anti = -float64(collisions+1) / float64(count)
		sum, n = sum+s.anti, n+1
	}
	if avoided {
		sum, n = sum-1, n+1
	}
	if hasAffinity && affinity != 0 {
		sum, n = sum+affinity, n+1
	}
	s.norm, s.parts = sum/n, n
	return s
}

// topScores keeps the best scored nodes of a placement.
type topScores struct {
	entries []nodeScore
}

func (t *topScores) add(s nodeScore) {
	// Nodes come by ID: on a tie the earlier one stays ahead, so a node
	// no better than the fifth is not among the best (the common case).
	if len(t.entries) == maxScoreMeta && s.norm <= t.entries[maxScoreMeta-1].norm {
		return
	}
	i := len(t.entries)
	for i > 0 && s.norm > t.entries[i-1].norm {
		i--
	}
	t.entries = slices.Insert(t.entries, i, s)
	if len(t.entries) > maxScoreMeta {
		t.entries = t.entries[:maxScoreMeta]
	}
}

func (t *topScores) meta() []*state.NodeScoreMeta {
	if len(t.entries) == 0 {
		return nil
	}
	out := make([]*state.NodeScoreMeta, 0, len(t.entries))
	for _, e := range t.entries {
		m := &state.NodeScoreMeta{NodeID: e.ni.node.ID, Scores: map[string]float64{"binpack": e.binpack}, NormScore: e.norm}
		if e.anti != 0 {
			m.Scores["job-anti-affinity"] = e.anti
		}
		if e.avoided {
			m.Scores["node-reschedule-penalty"] = -1
		}
		if e.hasAffinity {
			m.Scores["node-affinity"] = e.affinity
		}
		if e.hasSpread {
			m.Scores["allocation-spread"] = e.spread
		}
		out = append(out, m)
	}
	return out
}

// affinityScore is Nomad's node-affinity: the weights of the affinities
// the node meets over the sum of all weights' magnitudes (-1..1).
func affinityScore(as []*state.Affinity, n *state.Node) float64 {
	var total, sum float64
	for _, a := range as {
		total += math.Abs(float64(a.Weight))
		l, lok := resolveTarget(a.LTarget, n)
		r, rok := resolveTarget(a.RTarget, n)
		if checkConstraint(a.Operand, l, r, lok, rok) {
			sum += float64(a.Weight)
		}
	}
	if total == 0 {
		return 0
	}
	return sum / total
}

// groupAffinities are the affinities a group's placements are scored by:
// the job's, the group's and its tasks'.
func groupAffinities(job *state.Job, tg *state.TaskGroup) []*state.Affinity {
	return allAffinities(job, tg)
}
