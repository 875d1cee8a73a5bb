package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// client talks HTTP/1.1 to one server, one connection per concurrent request.
type client struct {
	base string
	tr   *http.Transport
	hc   *http.Client
}

func newClient(base string, maxConns int) *client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     0, // no limit
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &client{base: strings.TrimRight(base, "/"), tr: tr, hc: &http.Client{Transport: tr}}
}

// response is what a call returned. A transport failure is err; any status
// but 200 is an error for the callers' counts.
type response struct {
	status int
	index  uint64
	body   []byte
	err    error
}

func (r response) failure() string {
	if r.err != nil {
		return r.err.Error()
	}
	if r.status != http.StatusOK {
		return fmt.Sprintf("HTTP %d: %s", r.status, truncate(string(r.body), 120))
	}
	return ""
}

// do sends one request and reads the whole response. wrote, when not nil,
// is called once the request has been written to the connection.
func (c *client) do(ctx context.Context, method, path string, body []byte, wrote func()) response {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return response{err: err}
	}
	if wrote != nil {
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote() },
		}))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	out := response{status: resp.StatusCode}
	out.body, out.err = io.ReadAll(resp.Body)
	if v := resp.Header.Get("X-Service-Index"); v != "" {
		out.index, _ = strconv.ParseUint(v, 10, 64)
	}
	return out
}

// waitReady polls the list endpoint until the server answers it with 200
// (it answers 503 until it is a leader with its state caught up).
func (c *client) waitReady(ctx context.Context, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		r := c.do(rctx, http.MethodGet, "/v1/acl/binding-rules?authmethod=loadgen-ready", nil, nil)
		cancel()
		if last = r.failure(); last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return errors.New("the server exited before it was ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("server at %s not ready after %s: %s", c.base, timeout, last)
}

// agent is a ctlplane server this tool started.
type agent struct {
	url     string
	dir     string
	dataDir string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// spawnAgent builds ctlplane once and starts a persistent single node on
// free ports in a new temporary directory.
func spawnAgent(ctx context.Context) (*agent, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return nil, errors.New("-spawn must be run inside the ctlplane module")
	}
	dir, err := os.MkdirTemp("", "ctlplane-loadgen-")
	if err != nil {
		return nil, err
	}
	a := &agent{dir: dir, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "agent.log"), exited: make(chan struct{})}
	bin := filepath.Join(dir, "ctlplane")
	fmt.Fprintln(os.Stderr, "loadgen: building ctlplane")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ctlplane")
	build.Dir, build.Stdout, build.Stderr = filepath.Dir(gomod), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("building ctlplane: %w", err)
	}
	httpAddr, err1 := freeAddr()
	raftAddr, err2 := freeAddr()
	logFile, err3 := os.Create(a.logPath)
	if err := errors.Join(err1, err2, err3); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close()
	a.url = "http://" + httpAddr
	a.cmd = exec.Command(bin, "agent", "-data-dir="+a.dataDir, "-node=bench", "-bind="+raftAddr,
		"-http-addr="+httpAddr, "-bootstrap-expect=1")
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if err := a.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { a.cmd.Wait(); close(a.exited) }()
	fmt.Fprintf(os.Stderr, "loadgen: started ctlplane pid %d on %s, data in %s\n", a.cmd.Process.Pid, a.url, a.dataDir)
	c := newClient(a.url, 1)
	defer c.tr.CloseIdleConnections()
	if err := c.waitReady(ctx, 30*time.Second, a.exited); err != nil {
		a.stop()
		return nil, err
	}
	return a, nil
}

// stop sends SIGTERM, waits for a clean exit (kills after 30s), reports the
// warnings and errors the server logged, and deletes the directory.
func (a *agent) stop() {
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "loadgen: server did not exit 30s after SIGTERM; killing it")
		a.cmd.Process.Kill()
		<-a.exited
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		fmt.Fprintf(os.Stderr, "loadgen: server exited with status %d\n", code)
	}
	if f, err := os.Open(a.logPath); err == nil {
		var n int
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
				if n++; n <= 10 {
					fmt.Fprintln(os.Stderr, "loadgen: server log:", truncate(line, 300))
				}
			}
		}
		f.Close()
		fmt.Fprintf(os.Stderr, "loadgen: server logged %d warning/error lines\n", n)
	}
	os.RemoveAll(a.dir)
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
