package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Constraint is Nomad's constraint: LTarget Operand RTarget, where a target
// is a literal or an interpolation of the node (${attr.kernel.name},
// ${meta.rack}, ${node.class} ...). Job, group and task constraints all
// apply to the node a group's allocation is placed on.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// String is Nomad's Constraint.String: the key of ConstraintFiltered.
func (c *Constraint) String() string {
	return fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget)
}

// Affinity is Nomad's affinity: a constraint that, when a node meets it,
// adds Weight (-100..100, not 0) to the node's score instead of ruling
// nodes out.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// String is Nomad's Affinity.String.
func (a *Affinity) String() string {
	return fmt.Sprintf("%s %s %s %v", a.LTarget, a.Operand, a.RTarget, a.Weight)
}

// Spread is Nomad's spread: allocations spread over the values of
// Attribute, by target percentages or evenly, as a scoring weight.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is one value's share of a spread.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// AllocMetric is Nomad's AllocMetric: what the scheduler saw while placing
// an allocation (on the allocation) or failing to (an evaluation's
// FailedTGAllocs, per group).
type AllocMetric struct {
	// NodesEvaluated counts the nodes the placement looked at.
	NodesEvaluated int `codec:",omitempty"`
	// NodesFiltered counts the nodes a constraint or driver ruled out.
	NodesFiltered int `codec:",omitempty"`
	// NodesInPool counts the ready nodes of the job's node pool.
	NodesInPool int `codec:",omitempty"`
	// NodesAvailable counts the ready nodes per datacenter of the job.
	NodesAvailable map[string]int
	// ClassFiltered counts filtered nodes per node class.
	ClassFiltered map[string]int
	// ConstraintFiltered counts filtered nodes per constraint (its String).
	ConstraintFiltered map[string]int
	// NodesExhausted counts the nodes without room.
	NodesExhausted int `codec:",omitempty"`
	// ClassExhausted counts nodes without room per node class.
	ClassExhausted map[string]int
	// DimensionExhausted counts nodes without room per resource ("cpu", "memory").
	DimensionExhausted map[string]int
	// QuotaExhausted names exhausted quotas (none here: no quotas).
	QuotaExhausted []string
	// ScoreMetaData is the top scoring nodes with their scores.
	ScoreMetaData []*NodeScoreMeta
	// AllocationTime is how long the placement took (nanoseconds).
	AllocationTime int64 `codec:",omitempty"`
	// CoalescedFailures counts further failed placements of the same
	// group folded into this one.
	CoalescedFailures int `codec:",omitempty"`
}

// NodeScoreMeta is one node's scores (Nomad's shape).
type NodeScoreMeta struct {
	NodeID    string `codec:",omitempty"`
	Scores    map[string]float64
	NormScore float64 `codec:",omitempty"`
}

// FilterNode counts a node ruled out by reason (Nomad's AllocMetric.FilterNode).
func (m *AllocMetric) FilterNode(n *Node, reason string) {
	m.NodesFiltered++
	if n != nil && n.NodeClass != "" {
		addCount(&m.ClassFiltered, n.NodeClass)
	}
	if reason != "" {
		addCount(&m.ConstraintFiltered, reason)
	}
}

// ExhaustNode counts a node without room in dimension (Nomad's ExhaustedNode).
func (m *AllocMetric) ExhaustNode(n *Node, dimension string) {
	m.NodesExhausted++
	if n != nil && n.NodeClass != "" {
		addCount(&m.ClassExhausted, n.NodeClass)
	}
	if dimension != "" {
		addCount(&m.DimensionExhausted, dimension)
	}
}

// ExhaustClass counts a node of class without room (the caller tallies
// NodesExhausted and the dimension).
func (m *AllocMetric) ExhaustClass(class string) { addCount(&m.ClassExhausted, class) }

func addCount(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

// ComputedClass identifies nodes that look alike to the scheduler (Nomad's
// ComputedClass): datacenter, class, pool, drivers, and the attributes
// and meta that are not unique.* keys. Feasibility found for one node
// holds for every node of its class.
func (n *Node) ComputedClass() string {
	if n.class != "" {
		return n.class
	}
	return n.computeClass()
}

func (n *Node) computeClass() string {
	var b strings.Builder
	pool := n.NodePool
	if pool == "" {
		pool = "default"
	}
	fmt.Fprintf(&b, "%q %q %q", n.Datacenter, n.NodeClass, pool)
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
