package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// row is one measurement, one line of the table.
type row struct {
	scenario string
	what     string
	clients  int                // 0: not applicable
	n        string             // samples (or returned/total)
	rate     float64            // ops/s; 0: not applicable
	lat      *benchutil.Summary // nil: not applicable
	errors   int
}

func (b *bench) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMEASUREMENT\tCLIENTS\tN\tOPS/S\tMIN\tP50\tMEAN\tP99\tMAX\tERRORS\t")
	for _, r := range b.rows {
		cols := []string{r.scenario, r.what, "-", r.n, "-", "-", "-", "-", "-", "-", fmt.Sprint(r.errors)}
		if r.clients > 0 {
			cols[2] = fmt.Sprint(r.clients)
		}
		if r.n == "" {
			cols[3], cols[10] = "-", "-"
		}
		if r.rate > 0 {
			cols[4] = fmt.Sprintf("%.1f", r.rate)
		}
		if s := r.lat; s != nil {
			cols[5], cols[6], cols[7], cols[8], cols[9] = benchutil.MS(s.Min), benchutil.MS(s.P50), benchutil.MS(s.Mean), benchutil.MS(s.P99), benchutil.MS(s.Max)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	tw.Flush()
	if len(b.notes) > 0 {
		fmt.Fprintln(w, "\nfailures seen (count  scenario: message):")
		keys := make([]string, 0, len(b.notes))
		for k := range b.notes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %6d  %s\n", b.notes[k], k)
		}
	}
}
