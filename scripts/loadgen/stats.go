package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

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
	round    int           // create and etcd: which round
	system   string        // create and etcd: which server (and load)
	cpuPerOp time.Duration // create and etcd: the server's CPU per operation (0: unknown)
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

// printSideBySide prints the creates of every measured server next to
// etcd's puts measured right after them, level by level, round by round.
func (b *bench) printSideBySide(w io.Writer) {
	if (b.etcd == nil && len(b.systems) < 2) || !b.cfg.scenarios["create"] {
		return
	}
	names := b.createNames()
	if b.etcd != nil {
		names = append(names, "etcd")
	}
	type key struct {
		round, clients int
		system         string
	}
	byKey := map[key]row{}
	var levels []key
	for _, r := range b.rows {
		if r.scenario != "create" && r.scenario != "etcd" {
			continue
		}
		k := key{r.round, r.clients, r.system}
		byKey[k] = r
		if r.system == names[0] {
			levels = append(levels, key{r.round, r.clients, ""})
		}
	}
	fmt.Fprintf(w, "\nside by side (one run, each level measured on every server in turn")
	if b.etcd != nil {
		fmt.Fprintf(w, "; etcd %s, %d member(s), %s, 256 B puts", b.etcd.version, b.etcd.members, b.etcd.peers())
	}
	if b.consulDesc != "" {
		fmt.Fprintf(w, "; consul: %s", b.consulDesc)
	}
	fmt.Fprintln(w, "):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "ROUND\tCLIENTS\t"
	for _, n := range names {
		head += strings.ToUpper(n) + " OPS/S\tP50\tP99\tCPU/OP\t"
	}
	// The target's headline load over each reference's, level by level.
	var refs []string
	if slices.Contains(names, consulSystem) {
		refs = append(refs, consulSystem)
	}
	if b.etcd != nil {
		refs = append(refs, "etcd")
	}
	for _, ref := range refs {
		head += strings.ToUpper(names[0]+"/"+ref) + "\t"
	}
	fmt.Fprintln(tw, head)
	for _, l := range levels {
		line := fmt.Sprintf("%d\t%d\t", l.round, l.clients)
		for _, n := range names {
			r, ok := byKey[key{l.round, l.clients, n}]
			if !ok || r.lat == nil {
				line += "-\t-\t-\t-\t"
				continue
			}
			line += fmt.Sprintf("%.0f\t%s\t%s\t%s\t", r.rate, benchutil.MS(r.lat.P50), benchutil.MS(r.lat.P99), usPerOp(r.cpuPerOp))
		}
		for _, ref := range refs {
			first, e := byKey[key{l.round, l.clients, names[0]}], byKey[key{l.round, l.clients, ref}]
			if e.rate > 0 {
				line += fmt.Sprintf("%.2f\t", first.rate/e.rate)
			} else {
				line += "-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// createNames are the create loads of the side-by-side table in order:
// every server's, each with its -templates loads.
func (b *bench) createNames() []string {
	var names []string
	for _, s := range b.systems {
		for _, t := range b.cfg.templates {
			names = append(names, createLabel(s.name, t, b.cfg.templates))
		}
	}
	return names
}

func usPerOp(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

// writeSummary appends one line per create, etcd, read and fan-out
// measurement to file, for scripts/benchsummary: label, scenario, system,
// clients, round, ops/s, p50 ms, p99 ms, max ms, server CPU µs per op,
// tab-separated.
func (b *bench) writeSummary(file string) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for _, r := range b.rows {
		if r.lat == nil || (r.scenario != "create" && r.scenario != "etcd" && r.scenario != "read" && r.scenario != "fanout") {
			continue
		}
		system := r.system
		if system == "" {
			system = r.what
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }
		fmt.Fprintf(f, "%s\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t%.1f\n", b.cfg.label, r.scenario, system, r.clients, r.round,
			r.rate, ms(r.lat.P50), ms(r.lat.P99), ms(r.lat.Max), float64(r.cpuPerOp)/float64(time.Microsecond))
	}
	return f.Close()
}
