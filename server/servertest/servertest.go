// Package servertest starts real ctlplane servers for tests: real Raft over
// mutual TLS on 127.0.0.1 (in memory for a lone dev server), real bbolt
// files in t.TempDir(), real HTTP (which also answers HTTPS, as servers use
// it between them).
package servertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/agent"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// TestServer is one running agent.
type TestServer struct {
	*agent.Agent
	Config *server.Config
	// URL is the HTTP API base, e.g. http://127.0.0.1:41234.
	URL string
}

// Option changes the config before start.
type Option func(*server.Config)

// Persistent makes the server keep its state in dir (a t.TempDir() for a new one).
func Persistent(dir string) Option {
	return func(c *server.Config) {
		c.Dev = false
		c.DataDir = dir
		c.BootstrapExpect = 1
	}
}

// ACL turns access control on, with initial as the secret of a management
// token ("" for none).
func ACL(initial string) Option {
	return func(c *server.Config) {
		c.ACLEnabled = true
		c.ACLInitialManagementToken = initial
	}
}

// HTTPAddr sets the HTTP address (host:port).
func HTTPAddr(addr string) Option { return func(c *server.Config) { c.HTTPAddr = addr } }

// Join makes the server form or join a cluster through these HTTP addresses.
func Join(expect int, addrs ...string) Option {
	return func(c *server.Config) {
		c.BootstrapExpect = expect
		c.Join = addrs
	}
}

// Advertise sets the Raft address other servers reach this one at.
func Advertise(addr string) Option { return func(c *server.Config) { c.AdvertiseAddr = addr } }

// BindAddr sets the Raft bind address.
func BindAddr(addr string) Option { return func(c *server.Config) { c.BindAddr = addr } }

// DevNodes runs n simulated client nodes (mock_driver) in the agent.
func DevNodes(n int) Option { return func(c *server.Config) { c.DevNodes = n } }

// DevNodeGroup adds simulated client nodes alike (class, datacenter,
// meta, attributes): a heterogeneous fleet.
func DevNodeGroup(g server.DevNodeGroup) Option {
	return func(c *server.Config) { c.DevNodeGroups = append(c.DevNodeGroups, g) }
}

// HeartbeatTTL sets how long a client node may stay silent before it is down.
func HeartbeatTTL(d time.Duration) Option { return func(c *server.Config) { c.HeartbeatTTL = d } }

// RaftTimeout sets the Raft heartbeat/election timeout.
func RaftTimeout(d time.Duration) Option { return func(c *server.Config) { c.RaftTimeout = d } }

// Start starts a server (in-memory by default) and, unless it is joining a
// cluster, waits until it is leader with its state caught up. It is shut
// down when the test ends.
func Start(t testing.TB, opts ...Option) *TestServer {
	t.Helper()
	ts := StartNoWait(t, opts...)
	if len(ts.Config.Join) == 0 {
		ts.WaitForLeader(t)
	}
	return ts
}

// StartNoWait starts a server without waiting for anything.
func StartNoWait(t testing.TB, opts ...Option) *TestServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dev = true
	cfg.DevNodes = 0 // no simulated client node unless a test asks (DevNodes)
	cfg.NodeName = "test"
	cfg.BindAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.RaftTimeout = 100 * time.Millisecond
	cfg.ACLEnabled = false
	out := &testWriter{t: t}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: out})
	for _, o := range opts {
		o(cfg)
	}
	if cfg.DevNodes == 1 && cfg.DevMinDynamicPort == 0 {
		// Its client node runs real processes: ports of its own.
		cfg.DevMinDynamicPort, cfg.DevMaxDynamicPort = DynamicPortRange(t)
	}
	withTestTLS(t, cfg)
	srv, err := agent.New(cfg)
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	ts := &TestServer{Agent: srv, Config: cfg, URL: "http://" + srv.HTTPAddr()}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		out.done.Store(true)
	})
	return ts
}

// StartCluster starts n in-memory servers that form one cluster through
// -bootstrap-expect=n and -join, and waits until every one of them knows the
// leader and can forward to it.
func StartCluster(t testing.TB, n int, opts ...Option) []*TestServer {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = FreeAddr(t)
	}
	nodes := make([]*TestServer, n)
	for i := range nodes {
		o := append([]Option{HTTPAddr(addrs[i]), Join(n, addrs...), RaftTimeout(200 * time.Millisecond),
			func(c *server.Config) { c.NodeName = fmt.Sprintf("node%d", i+1) }}, opts...)
		nodes[i] = StartNoWait(t, o...)
	}
	WaitForCluster(t, nodes)
	return nodes
}

// WaitForCluster waits until every node sees the same leader and all of the
// nodes as peers, and a default read through each of them succeeds (so
// forwarding works everywhere).
func WaitForCluster(t testing.TB, nodes []*TestServer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok := oneCluster(nodes)
		for _, n := range nodes {
			if !ok {
				break
			}
			resp, err := http.Get(n.URL + "/v1/acl/binding-rules")
			if err != nil {
				ok = false
				break
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("cluster of %d did not become ready", len(nodes))
}

// oneCluster says whether every node knows the same leader and has every
// node, and no other server, in its Raft configuration.
func oneCluster(nodes []*TestServer) bool {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n.RaftAddr()] = true
	}
	leader := ""
	for i, n := range nodes {
		l := n.Leader()
		if l == "" || (i > 0 && l != leader) || !want[l] {
			return false
		}
		leader = l
		peers, err := n.Peers()
		if err != nil || len(peers) != len(want) {
			return false
		}
		for _, p := range peers {
			if !want[p] {
				return false
			}
		}
	}
	return true
}

// Leader returns the node that currently leads, failing the test if none does.
func Leader(t testing.TB, nodes []*TestServer) *TestServer {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if n.CheckRead(false) == nil {
				return n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no leader among %d nodes", len(nodes))
	return nil
}

// WaitForLeader waits until a default-mode read succeeds and the server has
// written its own record (its last start-up write), so that a test sees no
// write it did not make.
func (ts *TestServer) WaitForLeader(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, self, err := ts.State().Server(memdb.NewWatchSet(), ts.NodeID())
		if ts.CheckRead(false) == nil && err == nil && self != nil && self.HTTPAddr == ts.HTTPAddr() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("server at %s did not become a ready leader", ts.URL)
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// JSON decodes the body into out, failing the test on error.
func (r *Response) JSON(t testing.TB, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Body), out); err != nil {
		t.Fatalf("decoding %q: %v", r.Body, err)
	}
}

// Do sends a request with an optional body (string) and headers (name, value pairs).
func (ts *TestServer) Do(t testing.TB, method, path, body string, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatalf("building request: %v", err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading response of %s %s: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: string(buf)}
}

// testWriter sends server logs to the test log until the server has shut
// down; a stray late line must not fail the test with "Log after completed".
type testWriter struct {
	t    testing.TB
	done atomic.Bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// String describes a response for failure messages.
func (r *Response) String() string {
	return fmt.Sprintf("%d %q", r.Status, r.Body)
}
