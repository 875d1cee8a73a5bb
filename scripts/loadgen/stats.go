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
	round    int // create and etcd: which round
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
	b.printSideBySide(w)
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

// printSideBySide prints ctlplane's creates next to etcd's puts measured
// right after them, level by level and round by round.
func (b *bench) printSideBySide(w io.Writer) {
	if b.etcd == nil {
		return
	}
	type key struct{ round, clients int }
	etcd := map[key]row{}
	for _, r := range b.rows {
		if r.scenario == "etcd" {
			etcd[key{r.round, r.clients}] = r
		}
	}
	fmt.Fprintf(w, "\nside by side (same run; each etcd level right after ctlplane's; etcd %s, %d member(s)):\n", b.etcd.version, b.etcd.members)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUND\tCLIENTS\tCTLPLANE CREATES/S\tP50\tP99\tETCD PUTS/S\tP50\tP99\tCTLPLANE/ETCD\t")
	lat := func(s *benchutil.Summary) (string, string) {
		if s == nil {
			return "-", "-"
		}
		return benchutil.MS(s.P50), benchutil.MS(s.P99)
	}
	for _, r := range b.rows {
		e, ok := etcd[key{r.round, r.clients}]
		if r.scenario != "create" || !ok {
			continue
		}
		p50, p99 := lat(r.lat)
		ep50, ep99 := lat(e.lat)
		ratio := "-"
		if e.rate > 0 {
			ratio = fmt.Sprintf("%.2f", r.rate/e.rate)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%s\t\n", r.round, r.clients, r.rate, p50, p99, e.rate, ep50, ep99, ratio)
	}
	tw.Flush()
}
