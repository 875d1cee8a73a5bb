package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/ctlplane/ctlplane/api"
)

// printPlacementMetrics prints an allocation's placement metrics as
// Nomad's `alloc status -verbose` does: the filter and exhaustion lines,
// then the scored nodes with each score and the final one.
func printPlacementMetrics(w io.Writer, m *api.AllocationMetric) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "\nPlacement Metrics\n")
	if lines := formatMetrics(m, "  "); lines != "" {
		fmt.Fprintln(w, lines)
	}
	if len(m.ScoreMetaData) == 0 {
		return
	}
	names := map[string]bool{}
	for _, s := range m.ScoreMetaData {
		for k := range s.Scores {
			names[k] = true
		}
	}
	cols := make([]string, 0, len(names))
	for k := range names {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	t := newTable(w, append(append([]string{"Node"}, cols...), "final score")...)
	for _, s := range m.ScoreMetaData {
		row := []string{s.NodeID}
		for _, c := range cols {
			v, ok := s.Scores[c]
			if !ok {
				row = append(row, "0")
				continue
			}
			row = append(row, fmt.Sprintf("%.3g", v))
		}
		t.row(append(row, fmt.Sprintf("%.3g", s.NormScore))...)
	}
	t.flush()
}

// printNodeAttributes prints a node's attributes and meta, sorted (Nomad's
// `node status -verbose`).
func printNodeAttributes(w io.Writer, n *api.Node) {
	for _, sec := range []struct {
		title string
		m     map[string]string
	}{{"Attributes", n.Attributes}, {"Meta", n.Meta}} {
		fmt.Fprintf(w, "\n%s\n", sec.title)
		keys := make([]string, 0, len(sec.m))
		for k := range sec.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var pairs []string
		for _, k := range keys {
			pairs = append(pairs, k, sec.m[k])
		}
		if len(pairs) == 0 {
			fmt.Fprintln(w, "<none>")
			continue
		}
		kv(w, pairs...)
	}
}
