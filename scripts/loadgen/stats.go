package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one measurement, one line of the table.
type row struct {
	scenario string
	what     string
	clients  int      // 0: not applicable
	n        string   // samples (or returned/total)
	rate     float64  // ops/s; 0: not applicable
	lat      *summary // nil: not applicable
	errors   int
}

type summary struct {
	min, p50, mean, p99, max time.Duration
}

// summarize returns nearest-rank percentiles of d, nil when d is empty.
func summarize(d []time.Duration) *summary {
	if len(d) == 0 {
		return nil
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return &summary{min: s[0], p50: rank(0.50), mean: sum / time.Duration(len(s)), p99: rank(0.99), max: s[len(s)-1]}
}

// single is the summary of one observation.
func single(d time.Duration) *summary { return &summary{d, d, d, d, d} }

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }

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
			cols[5], cols[6], cols[7], cols[8], cols[9] = ms(s.min), ms(s.p50), ms(s.mean), ms(s.p99), ms(s.max)
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
