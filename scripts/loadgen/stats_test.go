package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// The Consul reference is labelled by its size and, for a cluster, by
// whether its Raft (RPC without TLS) compares like for like with the
// target's.
func TestConsulLabel(t *testing.T) {
	for _, tc := range []struct {
		servers  int
		raftTLS  bool
		want     []string
		wantNone []string
	}{
		{1, false, []string{"Consul v1.16.3, one persistent server"}, []string{"like for like", "without TLS"}},
		{3, false, []string{"3 persistent servers", "server RPC (Raft) without TLS", "like for like with the target's Raft without TLS"}, []string{"NOT"}},
		{3, true, []string{"3 persistent servers", "server RPC (Raft) without TLS", "NOT like for like: the target's Raft is over TLS"}, nil},
	} {
		got := consulLabel("Consul v1.16.3", tc.servers, tc.raftTLS)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("servers %d, raftTLS %v: %q lacks %q", tc.servers, tc.raftTLS, got, w)
			}
		}
		for _, w := range tc.wantNone {
			if strings.Contains(got, w) {
				t.Errorf("servers %d, raftTLS %v: %q says %q", tc.servers, tc.raftTLS, got, w)
			}
		}
	}
}

// The side-by-side table puts the target's creates over Consul's and over
// etcd's puts, level by level; a level a reference did not answer gets "-".
func TestSideBySideConsulRatio(t *testing.T) {
	lat := &benchutil.Summary{N: 1, P50: 2 * time.Millisecond, P99: 9 * time.Millisecond}
	b := &bench{
		cfg:        config{scenarios: map[string]bool{"create": true}, templates: []string{"distinct"}},
		systems:    []system{{name: "cluster-boltdb-plain"}, {name: consulSystem}},
		etcd:       &etcdRef{members: 3, version: "3.4.30"},
		consulDesc: "Consul v1.16.3, 3 persistent servers",
	}
	for _, r := range []struct {
		scenario, system string
		clients          int
		rate             float64
	}{
		{"create", "cluster-boltdb-plain", 16, 3000}, {"create", consulSystem, 16, 1500}, {"etcd", "etcd", 16, 2000},
		{"create", "cluster-boltdb-plain", 64, 6000}, {"create", consulSystem, 64, 0}, {"etcd", "etcd", 64, 4000},
	} {
		row := row{scenario: r.scenario, system: r.system, clients: r.clients, round: 1, rate: r.rate, lat: lat}
		if r.rate == 0 {
			row.lat = nil
		}
		b.add(row)
	}
	var out bytes.Buffer
	b.printSideBySide(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a title, a header and 2 levels:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], "consul: Consul v1.16.3, 3 persistent servers") {
		t.Errorf("title %q does not say what the Consul reference is", lines[0])
	}
	head := strings.Fields(lines[1])
	if n := len(head); n < 2 || head[n-2] != "CLUSTER-BOLTDB-PLAIN/CONSUL" || head[n-1] != "CLUSTER-BOLTDB-PLAIN/ETCD" {
		t.Errorf("header %q, want the ratios to consul and etcd last", lines[1])
	}
	for i, want := range [][2]string{{"2.00", "1.50"}, {"-", "1.50"}} {
		f := strings.Fields(lines[2+i])
		if got := [2]string{f[len(f)-2], f[len(f)-1]}; got != want {
			t.Errorf("level %d: ratios %v, want %v (%q)", i, got, want, lines[2+i])
		}
	}
}
