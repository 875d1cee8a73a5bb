// Package servertest starts real ctlplane servers for tests: real Raft over
// TCP on 127.0.0.1, real bbolt files in t.TempDir(), real HTTP.
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

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server"
	"github.com/hashicorp/go-hclog"
)

// TestServer is one running agent.
type TestServer struct {
	*server.Server
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

// Start starts a server (in-memory by default) and waits until it is leader
// with its state caught up. It is shut down when the test ends.
func Start(t testing.TB, opts ...Option) *TestServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dev = true
	cfg.NodeName = "test"
	cfg.BindAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.RaftTimeout = 100 * time.Millisecond
	out := &testWriter{t: t}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: out})
	for _, o := range opts {
		o(cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	if err := srv.Serve(ctlhttp.New(srv, cfg.Logger)); err != nil {
		srv.Shutdown()
		t.Fatalf("serving HTTP: %v", err)
	}
	ts := &TestServer{Server: srv, Config: cfg, URL: "http://" + srv.HTTPAddr()}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		out.done.Store(true)
	})
	ts.WaitForLeader(t)
	return ts
}

// WaitForLeader waits until a default-mode read succeeds.
func (ts *TestServer) WaitForLeader(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ts.CheckRead(false) == nil {
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
