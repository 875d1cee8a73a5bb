package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/api/webguard"
	"github.com/google/uuid"
)

// The client's own HTTP API: task logs (GET /v1/client/fs/logs/:alloc_id),
// which the servers read here with a grant (authorizeLogs).

// serveHTTP listens on cfg.HTTPAddr and serves until the returned stop.
func (c *Client) serveHTTP() (func(), error) {
	ln, err := net.Listen("tcp", c.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("client: HTTP listener: %w", err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	c.mu.Lock()
	c.httpAddr = net.JoinHostPort(host, strconv.Itoa(addr.Port))
	c.httpPort = addr.Port
	if c.cfg.HTTPAdvertise != "" {
		c.httpAddr = c.cfg.HTTPAdvertise
	}
	c.mu.Unlock()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/client/fs/logs/{alloc_id}", c.handleLogs)
	c.nodeRoutes(mux)
	// No DNS rebinding of a loopback listener (webguard), as the servers'.
	srv := &http.Server{Handler: webguard.Wrap(mux, webguard.LoopbackAddrs(ln.Addr())), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	c.logger.Info("client HTTP API listening", "address", c.httpAddr)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	}, nil
}

// HTTPAddr is the address of the client's own API ("" when it serves none).
func (c *Client) HTTPAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.httpAddr
}

func plainError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}

// requestToken is the caller's token, from any header the servers accept.
func requestToken(r *http.Request) string {
	for _, h := range []string{"X-Service-Token", "X-Nomad-Token", "X-Consul-Token"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

func (c *Client) handleLogs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		plainError(w, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
		return
	}
	allocID := r.PathValue("alloc_id")
	if _, err := uuid.Parse(allocID); err != nil || len(allocID) != 36 {
		plainError(w, http.StatusBadRequest, "Invalid allocation ID %q: a 36-character UUID is required", allocID)
		return
	}
	allocID = strings.ToLower(allocID) // as the servers sign it
	lr, err := parseLogQuery(r)
	if err != nil {
		plainError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if code, err := c.authorizeLogs(r.Context(), r, allocID, lr); err != nil {
		plainError(w, code, "%v", err)
		return
	}
	lr.paths = c.taskPaths(allocID, lr.task)
	lr.maxFiles = c.cfg.LogMaxFiles
	c.mu.Lock()
	ar := c.runners[allocID]
	var tr *taskRunner
	if ar != nil {
		for _, t := range ar.tasks {
			if t.task.Name == lr.task {
				tr = t
			}
		}
	}
	c.mu.Unlock()
	switch {
	case ar != nil && tr == nil:
		plainError(w, http.StatusNotFound, "task %q not found in allocation %s", lr.task, allocID)
		return
	case ar == nil:
		// Ended and forgotten: its files may still be here.
		if _, err := os.Stat(lr.paths.taskDir); err != nil {
			plainError(w, http.StatusNotFound, "allocation %s has no task %q on this node", allocID, lr.task)
			return
		}
		lr.running = func() bool { return false }
	default:
		lr.running = func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return !c.closed && tr.phase != phaseDead
		}
	}
	plain, err := logPlain(r.URL.Query().Get("plain"))
	if err != nil {
		plainError(w, http.StatusBadRequest, "%v", err)
		return
	}
	var out io.Writer = w
	var fr *framer
	if f, ok := w.(http.Flusher); ok {
		lr.flush = f.Flush
	}
	if plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
		fr = newFramer(w, lr.paths.allocDir, lr.flush)
		out, lr.flush = fr, fr.Flush
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	if lr.follow {
		var cancel context.CancelFunc
		ctx, cancel = c.followWithToken(r, api.LogsGrantFor(allocID, lr.task, lr.stream))
		defer cancel()
	}
	if err := streamLogs(ctx, out, lr); err != nil {
		c.logger.Debug("log stream ended", "alloc", allocID, "error", err)
	}
	if fr != nil {
		fr.Flush()
	}
}

// parseLogQuery reads task, type, follow, offset and origin.
func parseLogQuery(r *http.Request) (logRequest, error) {
	q := r.URL.Query()
	lr := logRequest{task: q.Get("task"), stream: q.Get("type")}
	if lr.task == "" {
		return lr, errors.New("must include task name: ?task=NAME")
	}
	if strings.ContainsAny(lr.task, "/\\") || lr.task == "." || lr.task == ".." {
		return lr, fmt.Errorf("invalid task name %q", lr.task)
	}
	if lr.stream != "stdout" && lr.stream != "stderr" {
		return lr, fmt.Errorf("invalid log type %q: must be stdout or stderr", lr.stream)
	}
	if v := q.Get("follow"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return lr, fmt.Errorf("failed to parse follow %q as a bool", v)
		}
		lr.follow = b
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return lr, fmt.Errorf("invalid offset %q: a non-negative integer is needed", v)
		}
		lr.offset = n
	}
	switch q.Get("origin") {
	case "", "start":
	case "end":
		lr.fromEnd = true
	default:
		return lr, fmt.Errorf("invalid origin %q: must be start or end", q.Get("origin"))
	}
	return lr, nil
}

// authorizeLogs checks a request for a task stream (see authorizeGrant).
func (c *Client) authorizeLogs(ctx context.Context, r *http.Request, allocID string, lr logRequest) (int, error) {
	return c.authorizeGrant(ctx, r, api.LogsGrantFor(allocID, lr.task, lr.stream), true)
}
