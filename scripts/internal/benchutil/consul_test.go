package benchutil

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Free ports are laid out three per server (HTTP, RPC, Serf LAN), in
// order; a wrong count, a repeated or impossible port, or a datacenter
// size out of bounds is refused with what is wrong.
func TestConsulPortsFrom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		free    []int
		servers int
		want    []ConsulPorts
		err     string
	}{
		{name: "one server", free: []int{8500, 8300, 8301}, servers: 1, want: []ConsulPorts{{HTTP: 8500, Server: 8300, SerfLAN: 8301}}},
		{name: "three servers", free: []int{1, 2, 3, 4, 5, 6, 7, 8, 9}, servers: 3,
			want: []ConsulPorts{{HTTP: 1, Server: 2, SerfLAN: 3}, {HTTP: 4, Server: 5, SerfLAN: 6}, {HTTP: 7, Server: 8, SerfLAN: 9}}},
		{name: "too few ports", free: []int{1, 2, 3, 4, 5, 6, 7, 8}, servers: 3, err: "8 ports for 3 servers; want 9"},
		{name: "a port twice", free: []int{1, 2, 3, 4, 5, 6, 7, 8, 1}, servers: 3, err: "port 1 out of range or given twice"},
		{name: "port zero", free: []int{0, 2, 3}, servers: 1, err: "port 0 out of range"},
		{name: "port above 65535", free: []int{1, 2, 65536}, servers: 1, err: "port 65536 out of range"},
		{name: "no servers", free: nil, servers: 0, err: "0 servers; want 1 to 7"},
		{name: "too many servers", free: make([]int, 24), servers: 8, err: "8 servers; want 1 to 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := consulPortsFrom(tc.free, tc.servers)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ports %+v, want %+v", got, tc.want)
			}
		})
	}
}

// renderedConsul is a server's configuration as Consul reads it (its JSON
// keys), decoded independently of consulConfig's struct tags.
type renderedConsul struct {
	NodeName           string         `json:"node_name"`
	Server             bool           `json:"server"`
	BootstrapExpect    int            `json:"bootstrap_expect"`
	BindAddr           string         `json:"bind_addr"`
	ClientAddr         string         `json:"client_addr"`
	DataDir            string         `json:"data_dir"`
	LogLevel           string         `json:"log_level"`
	RetryJoin          []string       `json:"retry_join"`
	RetryInterval      string         `json:"retry_interval"`
	DisableUpdateCheck bool           `json:"disable_update_check"`
	Ports              map[string]int `json:"ports"`
	ACL                struct {
		Enabled       bool   `json:"enabled"`
		DefaultPolicy string `json:"default_policy"`
		Tokens        struct {
			InitialManagement string `json:"initial_management"`
		} `json:"tokens"`
	} `json:"acl"`
}

// Each server of a 3-server datacenter gets its own node name, data
// directory and ports, expects 3 servers, joins the two others' Serf LAN
// addresses, has DNS, gRPC and the WAN gossip off, no update check, and
// ACLs on with default deny and the shared management token; a single
// server joins nobody. The JSON holds no key beyond those.
func TestConsulServerConfig(t *testing.T) {
	all := []ConsulPorts{{HTTP: 101, Server: 102, SerfLAN: 103}, {HTTP: 201, Server: 202, SerfLAN: 203}, {HTTP: 301, Server: 302, SerfLAN: 303}}
	dir, token := t.TempDir(), "the-token"
	for _, tc := range []struct {
		servers []ConsulPorts
		i       int
		join    []string
	}{
		{all, 0, []string{"127.0.0.1:203", "127.0.0.1:303"}},
		{all, 1, []string{"127.0.0.1:103", "127.0.0.1:303"}},
		{all, 2, []string{"127.0.0.1:103", "127.0.0.1:203"}},
		{all[:1], 0, nil},
	} {
		t.Run(fmt.Sprintf("%d servers, server %d", len(tc.servers), tc.i), func(t *testing.T) {
			b, err := consulServerConfig(dir, token, tc.i, tc.servers)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			var c renderedConsul
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("%v in %s", err, b)
			}
			if want := fmt.Sprintf("bench%d", tc.i); c.NodeName != want {
				t.Errorf("node_name %q, want %q", c.NodeName, want)
			}
			if want := filepath.Join(dir, fmt.Sprintf("s%d", tc.i), "data"); c.DataDir != want {
				t.Errorf("data_dir %q, want %q", c.DataDir, want)
			}
			if !c.Server || c.BootstrapExpect != len(tc.servers) {
				t.Errorf("server %v, bootstrap_expect %d; want true, %d", c.Server, c.BootstrapExpect, len(tc.servers))
			}
			if c.BindAddr != "127.0.0.1" || c.ClientAddr != "127.0.0.1" {
				t.Errorf("bind_addr %q, client_addr %q; want loopback", c.BindAddr, c.ClientAddr)
			}
			if !reflect.DeepEqual(c.RetryJoin, tc.join) {
				t.Errorf("retry_join %v, want %v", c.RetryJoin, tc.join)
			}
			if c.LogLevel != "warn" {
				t.Errorf("log_level %q, want warn", c.LogLevel)
			}
			if c.RetryInterval != "1s" || !c.DisableUpdateCheck {
				t.Errorf("retry_interval %q, disable_update_check %v; want 1s, true", c.RetryInterval, c.DisableUpdateCheck)
			}
			p := tc.servers[tc.i]
			wantPorts := map[string]int{"http": p.HTTP, "server": p.Server, "serf_lan": p.SerfLAN, "serf_wan": -1, "dns": -1, "grpc": -1, "grpc_tls": -1}
			if !reflect.DeepEqual(c.Ports, wantPorts) {
				t.Errorf("ports %v, want %v", c.Ports, wantPorts)
			}
			if !c.ACL.Enabled || c.ACL.DefaultPolicy != "deny" || c.ACL.Tokens.InitialManagement != token {
				t.Errorf("acl %+v, want enabled, deny, initial_management %q", c.ACL, token)
			}
		})
	}
}
