package state

import (
	"fmt"
	"maps"
	"slices"
)

// Allocations repeat strings by the hundred thousand: every allocation of
// a plan names its job, evaluation and deployment, every one on a node the
// node, and each decoded Raft entry gave each its own copy, as it did to
// the keys of every metric's and task state's maps. The FSM makes them
// share one copy (a plan's own strings within the plan, the few others
// process-wide).

// shareStrings makes a restored allocation share its repeated strings with
// the rows restored before it.
func (a *Allocation) shareStrings(share func(string) string) { a.internStrings(share, share) }

// internStrings replaces a's repeated strings: those of bounded variety
// (namespace, group, node, statuses, the keys of its maps) with what
// global returns, those of one plan (job, evaluation, deployment) with
// what local returns.
func (a *Allocation) internStrings(global, local func(string) string) {
	a.Namespace = global(a.Namespace)
	a.TaskGroup = global(a.TaskGroup)
	a.NodeID = global(a.NodeID)
	a.NodeName = global(a.NodeName)
	a.DesiredStatus = global(a.DesiredStatus)
	a.DesiredDescription = global(a.DesiredDescription)
	a.ClientStatus = global(a.ClientStatus)
	a.ClientDescription = global(a.ClientDescription)
	a.JobID = local(a.JobID)
	a.EvalID = local(a.EvalID)
	a.DeploymentID = local(a.DeploymentID)
	a.TaskStates = internTaskStates(a.TaskStates, global)
	if m := a.Metrics; m != nil {
		m.NodesAvailable = internKeys(m.NodesAvailable, global)
		m.ClassFiltered = internKeys(m.ClassFiltered, global)
		m.ConstraintFiltered = internKeys(m.ConstraintFiltered, global)
		m.ClassExhausted = internKeys(m.ClassExhausted, global)
		m.DimensionExhausted = internKeys(m.DimensionExhausted, global)
		for _, s := range m.ScoreMetaData {
			if s != nil {
				s.NodeID = global(s.NodeID)
				s.Scores = internKeys(s.Scores, global)
			}
		}
	}
	for _, st := range a.AllocStates {
		if st != nil {
			st.Field, st.Value = global(st.Field), global(st.Value)
		}
	}
}

// internTaskStates shares the task names, states and event texts of a
// client's report (the same few for every allocation of a job).
func internTaskStates(m map[string]*TaskState, global func(string) string) map[string]*TaskState {
	for _, ts := range m {
		if ts == nil {
			continue
		}
		ts.State = global(ts.State)
		for _, e := range ts.Events {
			if e != nil {
				e.Type = global(e.Type)
				e.Message = global(e.Message)
				e.DisplayMessage = global(e.DisplayMessage)
			}
		}
	}
	return internKeys(m, global)
}

// internKeys returns m with its keys shared (a new map: keys cannot be
// replaced in place).
func internKeys[V any](m map[string]V, global func(string) string) map[string]V {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[global(k)] = v
	}
	return out
}

// planStrings shares the strings of one plan's allocations among them.
func planStrings() func(string) string {
	m := map[string]string{}
	return func(s string) string {
		if s == "" {
			return s
		}
		if c, ok := m[s]; ok {
			return c
		}
		m[s] = s
		return s
	}
}

// metricMaps shares equal maps among the metrics of one plan's placements:
// they saw the same datacenters and classes, and many of their top nodes
// scored alike (empty nodes score the same), while a small Go map costs
// hundreds of bytes. Stored metrics are never changed in place, so
// allocations may share them.
type metricMaps struct {
	ints   map[string]map[string]int
	floats map[string]map[string]float64
	buf    []byte
}

func newMetricMaps() *metricMaps {
	return &metricMaps{ints: map[string]map[string]int{}, floats: map[string]map[string]float64{}}
}

// share replaces m's maps with equal ones seen before in the plan.
func (mm *metricMaps) share(m *AllocMetric) {
	if m == nil {
		return
	}
	m.NodesAvailable = shareMap(mm, mm.ints, m.NodesAvailable)
	m.ClassFiltered = shareMap(mm, mm.ints, m.ClassFiltered)
	m.ConstraintFiltered = shareMap(mm, mm.ints, m.ConstraintFiltered)
	m.ClassExhausted = shareMap(mm, mm.ints, m.ClassExhausted)
	m.DimensionExhausted = shareMap(mm, mm.ints, m.DimensionExhausted)
	for _, s := range m.ScoreMetaData {
		if s != nil {
			s.Scores = shareMap(mm, mm.floats, s.Scores)
		}
	}
}

func shareMap[V int | float64](mm *metricMaps, seen map[string]map[string]V, m map[string]V) map[string]V {
	if len(m) == 0 {
		return m
	}
	mm.buf = mm.buf[:0]
	for _, k := range slices.Sorted(maps.Keys(m)) {
		// %v of a float is its shortest exact form: equal keys, equal maps.
		mm.buf = fmt.Appendf(mm.buf, "%q=%v;", k, m[k])
	}
	if c, ok := seen[string(mm.buf)]; ok {
		return c
	}
	seen[string(mm.buf)] = m
	return m
}
