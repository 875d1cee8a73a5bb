package scheduler

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/server/scheduler/usage"
	"github.com/ctlplane/ctlplane/state"
)

// nodeInfo is one ready node and what is placed on it, as this plan sees it.
type nodeInfo struct {
	node *state.Node
	used state.Resources
	// jobAllocs counts the live allocations of the job being scheduled;
	// groupAllocs the same per task group (distinct_hosts, distinct_property).
	jobAllocs   int
	groupAllocs map[string]int
	// class is the node's computed class ("" until needed).
	class string
	// ports are the host ports taken on the node (nil until a group with
	// a network block looks: portsOn).
	ports map[int]bool
	// version moves whenever what a placement's check or score of the node
	// reads changes (used, the job's allocations, ports): scoreCache.
	version uint64
}

// count adds n allocations of the job's group tg to the node.
func (ni *nodeInfo) count(tg string, n int) {
	ni.version++
	ni.jobAllocs += n
	if ni.groupAllocs == nil {
		ni.groupAllocs = map[string]int{}
	}
	ni.groupAllocs[tg] += n
}

// placer picks nodes for allocations: feasibility (ready, datacenter,
// drivers, room), then bin-packing. It tracks the plan's own placements and
// stops so that one plan never overcommits a node.
type placer struct {
	nodes []*nodeInfo    // ready nodes, by ID
	pos   map[string]int // a ready node's place in nodes (shared, read only)
	// elig remembers, per computed node class, what the feasibility
	// checks found (Nomad's EvalEligibility); static caches, per group,
	// the outcome of the checks that do not depend on placements.
	elig   eligibility
	static map[string]*groupStatic
	// escaped: some constraint read a unique value (no class holds).
	escaped bool
	// nodeAllocs reads a node's allocations (ports); released are the
	// allocations this plan stops; err is the first read that failed.
	nodeAllocs func(nodeID string) ([]*state.Allocation, error)
	released   map[string]bool
	err        error
	// limited: Nomad's limited placement (limit.go); seed orders the
	// nodes of this evaluation for it (from its ID: the same evaluation
	// computed twice places alike).
	limited bool
	seed    uint64
	// uncached scores every node for every placement and runs the static
	// checks node by node (the caches' reference in the tests).
	uncached bool
	// list is the node list the placer was made from (its classes);
	// buf holds nodes' infos, pooled by releaseNodes.
	list *usage.NodeList
	buf  *nodeBuf
	// topBuf is the best scores' slice of the last placement, reused.
	topBuf []nodeScore
}

// newPlacer indexes the ready nodes and the resources used on them by every
// live allocation of the cluster.
func newPlacer(nodes *usage.NodeList, allocs []*state.Allocation, ns, jobID string) *placer {
	p := &placer{pos: nodes.Pos, elig: newEligibility(), static: map[string]*groupStatic{}, released: map[string]bool{}, list: nodes}
	// One allocation for every node's info, reused by the next placer
	// once this one's evaluation is computed (releaseNodes).
	p.buf = getNodeBuf(len(nodes.Ready))
	infos := p.buf.infos
	p.nodes = p.buf.ptrs
	for i, n := range nodes.Ready {
		infos[i].node, infos[i].version = n, 1 // a cached score of version 0 is none
		p.nodes[i] = &infos[i]
	}
	byNode := map[string][]*state.Allocation{}
	for _, a := range allocs {
		byNode[a.NodeID] = append(byNode[a.NodeID], a)
	}
	p.nodeAllocs = func(id string) ([]*state.Allocation, error) { return byNode[id], nil }
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		ni := p.byID(a.NodeID)
		if ni == nil {
			continue
		}
		ni.used = ni.used.Plus(a.Resources, 1)
		if a.Namespace == ns && a.JobID == jobID {
			ni.count(a.TaskGroup, 1)
		}
	}
	return p
}

// nodeBuf is a placer's nodes' infos. An evaluation of a one-allocation
// job on 1,000 nodes allocated 80 KB of them, a fifth of what it
// allocated in all: they are pooled.
type nodeBuf struct {
	infos []nodeInfo
	ptrs  []*nodeInfo
}

var nodeBufs sync.Pool

func getNodeBuf(n int) *nodeBuf {
	b, _ := nodeBufs.Get().(*nodeBuf)
	if b == nil || cap(b.infos) < n {
		return &nodeBuf{infos: make([]nodeInfo, n), ptrs: make([]*nodeInfo, n)}
	}
	b.infos, b.ptrs = b.infos[:n], b.ptrs[:n]
	return b
}

// releaseNodes gives the nodes' infos back once the evaluation is
// computed: what the result keeps of the placer (its class eligibility)
// does not read them, and nothing else may after this.
func (p *placer) releaseNodes() {
	b := p.buf
	if b == nil {
		return
	}
	p.buf, p.nodes, p.static = nil, nil, nil
	clear(b.infos[:cap(b.infos)])
	clear(b.ptrs[:cap(b.ptrs)])
	nodeBufs.Put(b)
}

// newPlacerFromUsage is newPlacer from the resources already summed per
// node (a UsageSource) and the job's own allocations.
func newPlacerFromUsage(nodes *usage.NodeList, used map[string]state.Resources, jobAllocs []*state.Allocation, nodeAllocs func(string) ([]*state.Allocation, error)) *placer {
	p := newPlacer(nodes, nil, "", "")
	p.nodeAllocs = nodeAllocs
	for id, r := range used {
		if ni := p.byID(id); ni != nil {
			ni.used = r
			ni.version++
		}
	}
	for _, a := range jobAllocs {
		if ni := p.byID(a.NodeID); ni != nil && !a.TerminalStatus() {
			ni.count(a.TaskGroup, 1)
		}
	}
	return p
}

// byID is a ready node's info (nil: not a ready node).
func (p *placer) byID(id string) *nodeInfo {
	if i, ok := p.pos[id]; ok {
		return p.nodes[i]
	}
	return nil
}

// release gives back what a stopped allocation used on its node.
func (p *placer) release(a *state.Allocation) {
	p.released[a.ID] = true
	if ni := p.byID(a.NodeID); ni != nil {
		ni.used = ni.used.Plus(a.Resources, -1)
		ni.count(a.TaskGroup, -1)
		if ni.ports != nil {
			for _, port := range a.HostPorts() {
				delete(ni.ports, port)
			}
		}
	}
}

// reclaim undoes release (a stop that did not happen after all).
func (p *placer) reclaim(a *state.Allocation) {
	delete(p.released, a.ID)
	if ni := p.byID(a.NodeID); ni != nil {
		ni.used = ni.used.Plus(a.Resources, 1)
		ni.count(a.TaskGroup, 1)
		if ni.ports != nil {
			for _, port := range a.HostPorts() {
				ni.ports[port] = true
			}
		}
	}
}

// place picks the node for one allocation of tg and books its resources,
// or returns nil when no node fits; the metric says what it saw either
// way. Every node is scored by bin-packing, the job's anti-affinity and
// the rescheduling penalty on nodes in avoid (where a predecessor failed).
// With affinities or spreads the best normalized score of every feasible
// node wins (Nomad's ranking); without, the tightest fit of them all, or,
// with limited placement, the best score of the first few fitting nodes of
// the evaluation's shuffled order (Nomad's LimitIterator, limit.go).
func (p *placer) place(job *state.Job, tg *state.TaskGroup, avoid map[string]bool) (*nodeInfo, []state.AllocatedPort, *state.AllocMetric) {
	start := time.Now()
	st := p.staticFor(job, tg)
	c := &candidates{p: p, job: job, tg: tg, need: tg.Resources(), m: st.metric(st.inPool), props: p.propertyCounts(job, tg),
		exhaustedNet: map[string]int{}}
	c.checkDistinct = c.props != nil || hasOperand(job.Constraints, ConstraintDistinctHosts) || hasOperand(tg.Constraints, ConstraintDistinctHosts)
	affinities := groupAffinities(job, tg)
	spreads := p.groupSpreads(job, tg)
	// With affinities the best normalized score wins (Nomad's ranking);
	// without, the tightest fit (the same order, with ctlplane's
	// tie-breaks), or with limited placement the best score of a few.
	ranked := len(affinities) > 0 || spreads != nil
	var best *nodeInfo
	var bestScore float64
	var bestNorm nodeScore
	bestAvoided := false
	top := topScores{entries: p.topBuf[:0]} // copied out by meta: reused
	var bestPorts []state.AllocatedPort
	if p.limited && !ranked {
		st.limited(p.seed, tg.Name, func(i int) (nodeScore, []state.AllocatedPort, bool) {
			ni := st.feasible[i]
			free, ports, ok := c.check(ni)
			if !ok {
				return nodeScore{}, nil, false
			}
			ns := newNodeScore(ni, free, avoid[ni.node.ID], ni.groupAllocs[tg.Name], tg.Count, 0, false)
			top.add(ns)
			return ns, ports, true
		}, func(ns nodeScore, ports []state.AllocatedPort) {
			if best == nil || ns.norm > bestNorm.norm || (ns.norm == bestNorm.norm && ns.ni.jobAllocs < best.jobAllocs) {
				best, bestNorm, bestPorts = ns.ni, ns, ports
			}
		})
	} else if cache := st.scoresFor(tg, p.uncached || ranked || c.checkDistinct || len(avoid) > 0); cache != nil {
		// The tightest fit from what each node scored at its version:
		// only the nodes changed since the last placement of the group
		// are checked and scored again (the same picks and metrics).
		for i, ni := range st.feasible {
			e := &cache[i]
			if e.version != ni.version {
				e.version = ni.version
				e.score, e.ports, e.outcome = c.fit(ni)
				if e.outcome == "" {
					e.ns = newNodeScore(ni, e.score, false, ni.groupAllocs[tg.Name], tg.Count, 0, false)
				}
			}
			if e.outcome != "" {
				c.tally(ni, e.outcome)
				continue
			}
			if len(top.entries) < maxScoreMeta || e.ns.norm > top.entries[maxScoreMeta-1].norm {
				top.add(e.ns)
			}
			if best == nil || e.score < bestScore || (e.score == bestScore && (ni.jobAllocs < best.jobAllocs ||
				(ni.jobAllocs == best.jobAllocs && ni.node.ID < best.node.ID))) {
				best, bestScore, bestPorts = ni, e.score, e.ports
			}
		}
	} else {
		for i, ni := range st.feasible {
			score, ports, ok := c.check(ni)
			if !ok {
				continue
			}
			avoided := avoid[ni.node.ID]
			ns := newNodeScore(ni, score, avoided, ni.groupAllocs[tg.Name], tg.Count, st.affinity(i), len(affinities) > 0)
			if spreads != nil {
				ns.addSpread(spreadScore(spreads, ni.node))
			}
			top.add(ns)
			if ranked {
				if best == nil || ns.norm > bestNorm.norm || (ns.norm == bestNorm.norm && ni.jobAllocs < best.jobAllocs) {
					best, bestNorm, bestPorts = ni, ns, ports
				}
				continue
			}
			if best == nil || (bestAvoided && !avoided) || (avoided == bestAvoided && (score < bestScore ||
				(score == bestScore && (ni.jobAllocs < best.jobAllocs ||
					(ni.jobAllocs == best.jobAllocs && ni.node.ID < best.node.ID))))) {
				best, bestScore, bestAvoided, bestPorts = ni, score, avoided, ports
			}
		}
	}
	m := c.m
	m.ScoreMetaData = top.meta()
	p.topBuf = top.entries[:0]
	c.exhaustedNet[dimensionCPU], c.exhaustedNet[dimensionMemory] = c.exhaustedCPU, c.exhaustedMem
	for dim, n := range c.exhaustedNet {
		if n > 0 {
			if m.DimensionExhausted == nil {
				m.DimensionExhausted = map[string]int{}
			}
			m.DimensionExhausted[dim] = n
		}
	}
	if best != nil {
		best.used = best.used.Plus(c.need, 1)
		best.count(tg.Name, 1)
		p.bookPorts(best, bestPorts)
	}
	m.AllocationTime = int64(time.Since(start))
	return best, bestPorts, m
}

// candidates checks the feasible nodes of one placement for what depends
// on the placements so far (distinct hosts and properties, room, ports),
// tallying into the placement's metric what it filters.
type candidates struct {
	p             *placer
	job           *state.Job
	tg            *state.TaskGroup
	need          state.Resources
	m             *state.AllocMetric
	props         []*propertyUse
	checkDistinct bool
	// tallied here, mapped into the metric once
	exhaustedCPU, exhaustedMem int
	exhaustedNet               map[string]int
}

// check says whether ni can take the allocation, with its fit score
// (fitScore) and the ports it would get.
func (c *candidates) check(ni *nodeInfo) (float64, []state.AllocatedPort, bool) {
	if c.checkDistinct {
		if reason := c.p.distinct(c.job, c.tg, ni, c.props); reason != "" {
			c.m.FilterNode(ni.node, reason)
			return 0, nil, false
		}
	}
	score, ports, outcome := c.fit(ni)
	if outcome != "" {
		c.tally(ni, outcome)
		return 0, nil, false
	}
	return score, ports, true
}

// fit is check's room and ports: the fit score and ports, or the
// dimension the node is exhausted in (outcome, "" when it fits). It reads
// only the node's info, the group and the plan's ports (scoreCache).
func (c *candidates) fit(ni *nodeInfo) (float64, []state.AllocatedPort, string) {
	score, ok := fitScore(ni, c.need)
	if !ok {
		if exhausted(ni, c.need) == dimensionCPU {
			return 0, nil, dimensionCPU
		}
		return 0, nil, dimensionMemory
	}
	ports, dim := c.p.assignPorts(ni, c.tg)
	if dim != "" {
		return 0, nil, dim
	}
	return score, ports, ""
}

// tally counts a node exhausted in dim into the placement's metric.
func (c *candidates) tally(ni *nodeInfo, dim string) {
	c.m.NodesExhausted++
	if ni.node.NodeClass != "" {
		c.m.ExhaustClass(ni.node.NodeClass)
	}
	switch dim {
	case dimensionCPU:
		c.exhaustedCPU++
	case dimensionMemory:
		c.exhaustedMem++
	default:
		c.exhaustedNet[dim]++
	}
}

// fitScore is the node's free share (CPU plus memory, each 0..1; an
// unlimited dimension counts as wholly free) after placing need on it: the
// lower, the tighter the fit. ok is false when need does not fit.
func fitScore(ni *nodeInfo, need state.Resources) (float64, bool) {
	free := func(capacity, used, want int) (float64, bool) {
		left, ok := state.Room(capacity, used, want)
		if !ok {
			return 0, false
		}
		if capacity <= 0 {
			return 1, true
		}
		return float64(left) / float64(capacity), true
	}
	cpu, ok := free(ni.node.Resources.CPU, ni.used.CPU, need.CPU)
	if !ok {
		return 0, false
	}
	mem, ok := free(ni.node.Resources.MemoryMB, ni.used.MemoryMB, need.MemoryMB)
	if !ok {
		return 0, false
	}
	return cpu + mem, true
}

// inDatacenters matches a node's datacenter against the job's patterns
// (globs; none at all means anywhere, as Nomad's default ["*"]).
func inDatacenters(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		if ok, err := path.Match(pat, dc); err == nil && ok {
			return true
		}
	}
	return false
}

// hasDrivers says whether the node can run every task of the group; "mock"
// and "mock_driver" name the same test driver.
func hasDrivers(n *state.Node, tg *state.TaskGroup) bool {
	for _, t := range tg.Tasks {
		d := t.Driver
		if n.HasDriver(d) {
			continue
		}
		switch d {
		case "mock":
			d = "mock_driver"
		case "mock_driver":
			d = "mock"
		default:
			return false
		}
		if !n.HasDriver(d) {
			return false
		}
	}
	return true
}

// allocName is Nomad's allocation name, <job>.<group>[<index>].
func allocName(jobID, group string, idx int) string {
	return fmt.Sprintf("%s.%s[%d]", jobID, group, idx)
}

// allocIndex reads the index back from an allocation name (-1 when it has none).
func allocIndex(name string) int {
	open := strings.LastIndexByte(name, '[')
	if open < 0 || !strings.HasSuffix(name, "]") {
		return -1
	}
	n, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// nameIndex hands out the lowest free allocation indexes of a group.
type nameIndex struct {
	used map[int]bool
	next int
}

func newNameIndex() *nameIndex { return &nameIndex{used: map[int]bool{}} }

func (n *nameIndex) take(i int) { n.used[i] = true }

// free returns the lowest unused index and takes it.
func (n *nameIndex) free() int {
	for n.used[n.next] {
		n.next++
	}
	n.used[n.next] = true
	return n.next
}
