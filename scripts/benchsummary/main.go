// Command benchsummary prints the summary table of `make bench`: each
// target of issue 20 next to its reference measured in the same run, their
// ratio, and whether the target is met. It reads the file the benchmarks
// appended to (scripts/bench.sh passes it to each):
//
//	LABEL SCENARIO SYSTEM CLIENTS ROUND OPS/S P50MS P99MS MAXMS CPUUS   (loadgen -summary)
//	metric NAME VALUE UNIT                                              (snapbench -summary, bench.sh)
//	check TARGET MEASURED REFERENCE OP GOAL UNIT                        (any benchmark: a ready-made row)
//
// tab-separated. A check's OP is <= or >= and compares MEASURED with GOAL
// (REFERENCE "-": none; OP and GOAL both "-": a number reported with no goal); loadgen lines are averaged over the rounds.
//
//	go run ./scripts/benchsummary FILE
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

type sample struct{ rate, p50, p99, max, cpu float64 }

type summary struct {
	loads   map[string][]sample // label/scenario/system/clients
	metrics map[string]float64
	checks  []check
}

// check is one row of the table.
type check struct {
	target              string
	measured, reference float64 // reference < 0: none
	op                  string  // "<=" or ">=", on measured (ratio: when ratioGoal)
	goal                float64
	unit                string
	ratioGoal           bool   // the goal bounds measured/reference, not measured
	missing             string // why it could not be measured
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchsummary FILE")
		os.Exit(2)
	}
	s, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", err)
		os.Exit(1)
	}
	s.print()
}

func read(file string) (*summary, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &summary{loads: map[string][]sample{}, metrics: map[string]float64{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		f := strings.Split(sc.Text(), "\t")
		bad := fmt.Errorf("%s:%d: malformed line %q", file, n, sc.Text())
		switch {
		case f[0] == "metric" && len(f) == 4:
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return nil, bad
			}
			s.metrics[f[1]] = v
		case f[0] == "check" && len(f) == 7:
			m, err1 := strconv.ParseFloat(f[2], 64)
			r, err2 := strconv.ParseFloat(f[3], 64)
			g, err3 := strconv.ParseFloat(f[5], 64)
			if f[3] == "-" {
				r, err2 = -1, nil
			}
			op := f[4]
			if op == "-" && f[5] == "-" { // reported, with no goal
				op, g, err3 = "", 0, nil
			}
			if err1 != nil || err2 != nil || err3 != nil || (op != "<=" && op != ">=" && op != "") {
				return nil, bad
			}
			s.checks = append(s.checks, check{target: f[1], measured: m, reference: r, op: op, goal: g, unit: f[6]})
		case len(f) == 10:
			var v [5]float64
			for i := range v {
				var err error
				if v[i], err = strconv.ParseFloat(f[5+i], 64); err != nil {
					return nil, bad
				}
			}
			key := strings.Join(f[:4], "/")
			s.loads[key] = append(s.loads[key], sample{v[0], v[1], v[2], v[3], v[4]})
		default:
			return nil, bad
		}
	}
	return s, sc.Err()
}

// load averages a loadgen measurement over its rounds (ok false: absent).
func (s *summary) load(label, scenario, system string, clients int) (sample, bool) {
	xs := s.loads[fmt.Sprintf("%s/%s/%s/%d", label, scenario, system, clients)]
	if len(xs) == 0 {
		return sample{}, false
	}
	var m sample
	for _, x := range xs {
		m.rate += x.rate / float64(len(xs))
		m.p50 += x.p50 / float64(len(xs))
		m.cpu += x.cpu / float64(len(xs))
		m.p99 = max(m.p99, x.p99)
		m.max = max(m.max, x.max)
	}
	return m, true
}

// fanoutMax is the slowest "all back" of the raw watchers' fan-outs, and
// how many watchers there were.
func (s *summary) fanoutMax(label string) (float64, string, bool) {
	best, watchers, ok := 0.0, "", false
	for k, xs := range s.loads {
		if strings.HasPrefix(k, label+"/fanout/") && strings.Contains(k, "after update sent") && strings.Contains(k, "raw HTTP") {
			watchers = k[strings.LastIndexByte(k, '/')+1:]
			for _, x := range xs {
				best, ok = max(best, x.max), true
			}
		}
	}
	return best, watchers, ok
}

// targets builds the rows of issue 20's targets from what was measured.
func (s *summary) targets() []check {
	var out []check
	missing := func(target, why string) { out = append(out, check{target: target, missing: why}) }

	// 1. Creates with distinct templates.
	if v, ok := s.metrics["validate.simple.ns"]; ok {
		ref := -1.0
		if r, ok := s.metrics["validate.libraries.ns"]; ok {
			ref = r / 1000
		}
		out = append(out, check{target: "1. validate a never-seen BindName, CPU (ref: go-bexpr+HIL)", measured: v / 1000, reference: ref, op: "<=", goal: 10, unit: "µs"})
	} else {
		missing("1. validate a never-seen BindName, CPU", "no Go benchmark in this run")
	}
	for _, n := range []int{1, 16, 64} {
		c, ok1 := s.load("single", "create", "boltdb", n)
		e, ok2 := s.load("single", "etcd", "etcd", n)
		target := fmt.Sprintf("1. creates/s, distinct BindName, at %d clients (ref: etcd 1 member)", n)
		if !ok1 || !ok2 {
			missing(target, "not measured")
			continue
		}
		ck := check{target: target, measured: c.rate, reference: e.rate, unit: "/s"}
		if n == 64 {
			ck.op, ck.goal, ck.ratioGoal = ">=", 0.8, true
		}
		out = append(out, ck)
		if n == 64 {
			out = append(out,
				check{target: "1. create p99, distinct BindName, 64 clients (ref: etcd put p99)", measured: c.p99, reference: e.p99, op: "<=", goal: 25, unit: "ms"},
				check{target: "1. server CPU per create, 64 clients (ref: etcd CPU per put)", measured: c.cpu, reference: e.cpu, op: "<=", goal: 1.3, unit: "µs", ratioGoal: true})
		}
		if r, ok := s.load("single", "create", "boltdb/repeated", n); ok {
			out = append(out, check{target: fmt.Sprintf("   same, repeated BindName, at %d clients", n), measured: r.rate, reference: e.rate, unit: "/s"})
		}
	}
	for _, n := range []int{1, 16, 64} {
		target := fmt.Sprintf("1. ahead of Consul: creates/s, distinct BindName, at %d clients (ref: Consul 1.16)", n)
		c, ok1 := s.load("single", "create", "boltdb", n)
		k, ok2 := s.load("single", "create", "consul", n)
		if !ok1 || !ok2 {
			missing(target, "no Consul in this run (CONSUL_BIN unset; Consul is not in Debian, README says how to build it)")
			continue
		}
		out = append(out, check{target: target, measured: c.rate, reference: k.rate, op: ">=", goal: 1, unit: "/s", ratioGoal: true})
	}

	// 2, 4, 5 are scripts/orchbench's (bench.sh step 6 appends check lines).
	// 3. Three servers, boltdb, through the leader: Raft over mutual TLS
	// against etcd with mutual peer TLS (the headline), then both without.
	// Each next to a 3-server Consul measured in the same loadgen run (with
	// CONSUL_BIN; issue 36), whose Raft RPC is without TLS: like for like
	// with the run without Raft TLS only. Reported, with no goal.
	for _, n := range []int{16, 64} {
		for _, run := range []struct{ label, target, consul string }{
			{"cluster-boltdb", fmt.Sprintf("3. 3 servers, boltdb, creates/s at %d clients, Raft mutual TLS (ref: etcd 3 members, peer mutual TLS)", n),
				fmt.Sprintf("   same at %d clients, Raft mutual TLS (ref: Consul 1.16, 3 servers, RPC without TLS: not like for like)", n)},
			{"cluster-boltdb-plain", fmt.Sprintf("   same at %d clients, Raft without TLS (ref: etcd 3 members, peers without TLS)", n),
				fmt.Sprintf("   same at %d clients, Raft without TLS (ref: Consul 1.16, 3 servers, RPC without TLS)", n)},
		} {
			c, ok1 := s.load(run.label, "create", run.label, n)
			e, ok2 := s.load(run.label, "etcd", "etcd", n)
			if !ok1 || !ok2 {
				missing(run.target, "not measured")
			} else {
				out = append(out, check{target: run.target, measured: c.rate, reference: e.rate, op: ">=", goal: 0.8, unit: "/s", ratioGoal: true})
			}
			k, ok3 := s.load(run.label, "create", "consul", n)
			switch {
			case !ok1:
			case !ok3:
				missing(run.consul, "no Consul in this run (CONSUL_BIN unset)")
			default:
				out = append(out, check{target: run.consul, measured: c.rate, reference: k.rate, unit: "/s"})
			}
		}
	}

	// 6. Hold what was met.
	rules := 0
	for k := range s.metrics {
		if n, err := strconv.Atoi(strings.TrimPrefix(k, "snapshot.save.")); err == nil && strings.HasPrefix(k, "snapshot.save.") {
			rules = max(rules, n)
		}
	}
	if rules == 0 {
		missing("6. snapshots", "not measured")
	} else {
		for _, m := range []struct {
			name string
			goal float64
		}{{"save", 5}, {"restore", 10}, {"restart", 10}} {
			out = append(out, check{target: fmt.Sprintf("6. snapshot %s, %d rules", m.name, rules), measured: s.metrics[fmt.Sprintf("snapshot.%s.%d", m.name, rules)],
				reference: -1, op: "<=", goal: m.goal, unit: "s"})
		}
		out = append(out, check{target: fmt.Sprintf("6. server peak RSS, %d rules", rules), measured: s.metrics[fmt.Sprintf("snapshot.rss.%d", rules)] / (1 << 20),
			reference: -1, op: "<=", goal: 1024, unit: "MiB"})
	}
	if v, n, ok := s.fanoutMax("single"); ok {
		out = append(out, check{target: "6. " + n + " blocked readers all back after one write (raw watchers)", measured: v, reference: -1, op: "<=", goal: 200, unit: "ms"})
	} else {
		missing("6. blocked readers all back after one write", "not measured")
	}
	return append(out, s.checks...)
}

func (s *summary) print() {
	fmt.Println("summary: issue 20's targets, each next to its reference from this run")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tMEASURED\tREFERENCE\tRATIO\tGOAL\tRESULT\t")
	for _, c := range s.targets() {
		if c.missing != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t\n", c.target, c.missing)
			continue
		}
		ref, ratio := "-", "-"
		if c.reference > 0 {
			ref = num(c.reference) + " " + c.unit
			ratio = fmt.Sprintf("%.2f", c.measured/c.reference)
		}
		goal, result := "-", "(no goal)"
		if c.op != "" {
			v := c.measured
			goal = c.op + " " + num(c.goal) + " " + c.unit
			if c.ratioGoal {
				goal = "ratio " + c.op + " " + num(c.goal)
				v = c.measured / c.reference
			}
			met := (c.op == "<=" && v <= c.goal) || (c.op == ">=" && v >= c.goal)
			result = map[bool]string{true: "met", false: "MISSED"}[met]
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\t\n", c.target, num(c.measured), c.unit, ref, ratio, goal, result)
	}
	tw.Flush()
}

// num prints v with thousands separators above 100, two decimals below.
func num(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
