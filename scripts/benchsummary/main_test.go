package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The summary averages rounds, takes the worst p99, compares ratios or
// values with their goals, and passes other benchmarks' check lines on.
func TestTargets(t *testing.T) {
	lines := []string{
		"single\tcreate\tboltdb\t64\t1\t3000\t10\t20\t30\t150",
		"single\tcreate\tboltdb\t64\t2\t2000\t10\t40\t50\t170",
		"single\tetcd\tetcd\t64\t1\t3000\t5\t15\t20\t120",
		"single\tetcd\tetcd\t64\t2\t3000\t5\t15\t20\t120",
		"single\tcreate\tconsul\t64\t1\t2600\t10\t20\t30\t150",
		"single\tcreate\tconsul\t64\t2\t2800\t10\t20\t30\t150",
		"single\tcreate\tboltdb\t1\t1\t900\t1\t2\t3\t0",
		"single\tcreate\tconsul\t1\t1\t800\t1\t2\t3\t0",
		"cluster-boltdb\tcreate\tcluster-boltdb\t16\t1\t900\t1\t2\t3\t0",
		"cluster-boltdb\tetcd\tetcd\t16\t1\t1000\t1\t2\t3\t0",
		"cluster-boltdb-plain\tcreate\tcluster-boltdb-plain\t16\t1\t700\t1\t2\t3\t0",
		"cluster-boltdb-plain\tetcd\tetcd\t16\t1\t1000\t1\t2\t3\t0",
		"cluster-boltdb-plain\tcreate\tconsul\t16\t1\t500\t1\t2\t3\t0",
		"metric\tvalidate.simple.ns\t1500\tns",
		"metric\tvalidate.libraries.ns\t120000\tns",
		"metric\tsnapshot.save.1000\t6\ts",
		"check\t2. evaluations/s\t1200\t-\t>=\t1000\t/s",
		"check\t2. eval latency p99\t31\t46000\t-\t-\tms",
	}
	file := filepath.Join(t.TempDir(), "summary.tsv")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range s.targets() {
		v := c.missing
		if v == "" {
			measured := c.measured
			if c.ratioGoal {
				measured /= c.reference
			}
			met := (c.op == "<=" && measured <= c.goal) || (c.op == ">=" && measured >= c.goal)
			v = map[bool]string{true: "met", false: "missed"}[met]
			if c.op == "" {
				v = "info"
			}
		}
		got[c.target] = v
	}
	want := map[string]string{
		"1. validate a never-seen BindName, CPU (ref: go-bexpr+HIL)":                                               "met",
		"1. creates/s, distinct BindName, at 64 clients (ref: etcd 1 member)":                                      "met",    // 2,500 vs 3,000: 0.83
		"1. create p99, distinct BindName, 64 clients (ref: etcd put p99)":                                         "missed", // worst round 40 ms
		"1. server CPU per create, 64 clients (ref: etcd CPU per put)":                                             "missed", // 160 vs 120: 1.33 > 1.3
		"3. 3 servers, boltdb, creates/s at 16 clients, Raft mutual TLS (ref: etcd 3 members, peer mutual TLS)":    "met",
		"3. 3 servers, boltdb, creates/s at 64 clients, Raft mutual TLS (ref: etcd 3 members, peer mutual TLS)":    "not measured",
		"   same at 16 clients, Raft without TLS (ref: etcd 3 members, peers without TLS)":                         "missed", // 700 vs 1,000
		"   same at 16 clients, Raft without TLS (ref: Consul 1.16, 3 servers, RPC without TLS)":                   "info",   // 700 vs 500
		"   same at 16 clients, Raft mutual TLS (ref: Consul 1.16, 3 servers, RPC without TLS: not like for like)": "no Consul in this run (CONSUL_BIN unset)",
		"6. snapshot save, 1000 rules": "missed",
		"2. evaluations/s":             "met",
		"2. eval latency p99":          "info",
		"1. creates/s, distinct BindName, at 16 clients (ref: etcd 1 member)":                "not measured",
		"6. blocked readers all back after one write":                                        "not measured",
		"1. ahead of Consul: creates/s, distinct BindName, at 1 clients (ref: Consul 1.16)":  "met",    // 900 vs 800
		"1. ahead of Consul: creates/s, distinct BindName, at 64 clients (ref: Consul 1.16)": "missed", // 2,500 vs 2,700
		"1. ahead of Consul: creates/s, distinct BindName, at 16 clients (ref: Consul 1.16)": "no Consul in this run (CONSUL_BIN unset; Consul is not in Debian, README says how to build it)",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q: %q, want %q", k, got[k], v)
		}
	}
	for _, c := range s.targets() {
		if c.target == "   same at 16 clients, Raft without TLS (ref: Consul 1.16, 3 servers, RPC without TLS)" && (c.measured != 700 || c.reference != 500) {
			t.Errorf("Consul 3-server row: %v vs %v, want 700 vs 500", c.measured, c.reference)
		}
	}
	// No Consul row for a run that was not measured at all.
	for k := range got {
		if strings.Contains(k, "64 clients") && strings.Contains(k, "Consul 1.16, 3 servers") {
			t.Errorf("%q: a Consul row for a level ctlplane was not measured at", k)
		}
	}
	if _, err := read(writeTemp(t, "single\tcreate\tboltdb\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "bad.tsv")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
