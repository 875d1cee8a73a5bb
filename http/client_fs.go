package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/gorilla/mux"
)

// Task logs, as Nomad's GET /v1/client/fs/logs/:alloc_id: its framed JSON
// stream, or plain text with plain=true. The node service checks node:read and read-logs in
// the allocation's namespace and mints a grant for that allocation, task
// and stream under the node's secret; this server then calls the node's
// own API itself, with that grant and nothing of the caller's request (no
// token, cookie or other header leaves the server). A client's logs
// endpoint verifies the grant (client/http.go); callers that go to a
// client directly get one from GET /v1/client/fs/logs-grant/:alloc_id.
func (h *Handler) registerClientFS() {
	h.handle("/v1/client/fs/logs/{alloc_id}", methods{{http.MethodGet, h.clientLogs}})
	h.handle("/v1/client/fs/logs-grant/{alloc_id}", methods{{http.MethodGet, h.clientLogsGrant}})
}

// Timeouts of a call to a node: to connect, and for its answer's headers
// (a followed stream then lasts as long as the caller stays).
const (
	nodeDialTimeout   = 5 * time.Second
	nodeHeaderTimeout = 15 * time.Second
)

// logsGrant authorizes the request and mints its grant.
func (h *Handler) logsGrant(r *http.Request) (*nodes.LogsTarget, *identity, api.Grant, error) {
	q := r.URL.Query()
	g := api.LogsGrantFor(mux.Vars(r)["alloc_id"], q.Get("task"), q.Get("type"))
	t, id, err := h.nodeGrantAs(r, g)
	return t, id, g, err
}

func (h *Handler) clientLogsGrant(w http.ResponseWriter, r *http.Request) (any, error) {
	t, _, _, err := h.logsGrant(r)
	if err != nil {
		return nil, err
	}
	if t.Grant == "" {
		return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s of allocation %s is gone or has no secret: it cannot check a grant", t.NodeID, t.AllocID)}
	}
	return &api.LogsGrantResponse{Grant: t.Grant, NodeID: t.NodeID, Expires: t.Expires}, nil
}

// logsQuery is the node's query: the caller's known parameters, checked.
func logsQuery(r *http.Request, task, stream string) (url.Values, error) {
	in := r.URL.Query()
	out := url.Values{"task": {task}, "type": {stream}}
	if v := in.Get("plain"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badRequest("failed to parse plain %q as a bool", v)
		}
		out.Set("plain", strconv.FormatBool(b))
	}
	if v := in.Get("follow"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badRequest("failed to parse follow %q as a bool", v)
		}
		out.Set("follow", strconv.FormatBool(b))
	}
	if v := in.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, badRequest("invalid offset %q: a non-negative integer is needed", v)
		}
		out.Set("offset", strconv.FormatInt(n, 10))
	}
	switch o := in.Get("origin"); o {
	case "":
	case "start", "end":
		out.Set("origin", o)
	default:
		return nil, badRequest("invalid origin %q: must be start or end", o)
	}
	return out, nil
}

func (h *Handler) clientLogs(w http.ResponseWriter, r *http.Request) (any, error) {
	t, id, g, err := h.logsGrant(r)
	if err != nil {
		return nil, err
	}
	query, err := logsQuery(r, g.Task, g.Stream)
	if err != nil {
		return nil, err
	}
	// Nomad's framed JSON stream, or plain text with plain=true.
	contentType := "application/json"
	if query.Get("plain") == "true" {
		contentType = "text/plain; charset=utf-8"
	}
	return h.followNode(w, r, t, id, g, "/v1/client/fs/logs/"+t.AllocID, query, contentType)
}

// followNode streams a node's answer (logs, a followed file) to the
// caller until the node or the caller ends it, or the caller's token no
// longer allows g (watchToken: deleted, expired, or its policies changed).
func (h *Handler) followNode(w http.ResponseWriter, r *http.Request, t *nodes.LogsTarget, id *identity, g api.Grant, path string, query url.Values, contentType string) (any, error) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	resp, err := h.callNode(r.WithContext(ctx), t, http.MethodGet, path, query, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	svc, err := h.nodeService()
	if err != nil {
		return nil, err
	}
	secret := strings.TrimSpace(r.Header.Get(api.NodeSecretHeader))
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		h.watchToken(ctx, id, func(id *identity) error {
			_, err := svc.Grant(nodes.Caller{NodeSecret: secret, ACL: id.authz}, g)
			return err
		}, func(reason string) {
			h.logger.Debug("ending a followed answer", "path", path, "reason", reason)
			cancel() // the node's body ends: so does the copy
		})
	}()
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w) // unwraps the middleware's writers
	_ = rc.Flush()
	copyFlushing(w, rc, resp.Body)
	cancel()
	<-watched
	return written, nil
}

// copyFlushing streams body to w, flushing each read (a followed stream
// reaches the caller as it is written).
func copyFlushing(w io.Writer, rc *http.ResponseController, body io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

var errServerAddr = errors.New("the address is one of the servers' own")

// serverAddrs is what a backend that listens tells about its addresses.
type serverAddrs interface {
	HTTPAddr() string
	HTTPSAddr() string
	RaftAddr() string
}

// addrGuard refuses dials to the servers' own listeners: this server's
// HTTP, HTTPS and Raft addresses and every known server's HTTP and Raft
// addresses. A listener on an unspecified address (0.0.0.0, ::) covers
// its port on loopback and every local interface address.
type addrGuard struct {
	exact map[string]bool // "ip:port"
	local map[string]bool // ports of listeners on every interface
	loop  map[string]bool // ports of loopback listeners: every loopback address counts (127.0.0.1 or ::1 first)
	ips   map[string]bool // this machine's addresses
}

func (h *Handler) serverAddrGuard() *addrGuard {
	g := &addrGuard{exact: map[string]bool{}, local: map[string]bool{}, loop: map[string]bool{}, ips: map[string]bool{}}
	var addrs []string
	if sa, ok := h.backend.(serverAddrs); ok {
		addrs = append(addrs, sa.HTTPAddr(), sa.HTTPSAddr(), sa.RaftAddr())
	}
	if _, servers, err := h.backend.State().Servers(nil); err == nil {
		for _, s := range servers {
			addrs = append(addrs, s.HTTPAddr, s.RaftAddr)
		}
	}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		ip := net.ParseIP(host)
		switch {
		case host == "" || (ip != nil && ip.IsUnspecified()):
			g.local[port] = true
		case ip != nil && ip.IsLoopback():
			g.loop[port] = true
		case ip != nil:
			g.exact[net.JoinHostPort(ip.String(), port)] = true
		default:
			// A name (e.g. localhost): its addresses now.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			ips, _ := net.DefaultResolver.LookupIPAddr(ctx, host)
			cancel()
			for _, x := range ips {
				if x.IP.IsLoopback() {
					g.loop[port] = true
				} else {
					g.exact[net.JoinHostPort(x.IP.String(), port)] = true
				}
			}
		}
	}
	if len(g.local) > 0 {
		if ifaddrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range ifaddrs {
				if n, ok := a.(*net.IPNet); ok {
					g.ips[n.IP.String()] = true
				}
			}
		}
	}
	return g
}

// check is the dialer's Control: address is the resolved "ip:port".
func (g *addrGuard) check(address string) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return fmt.Errorf("unexpected dial address %q", address)
	}
	if g.exact[net.JoinHostPort(ip.String(), port)] {
		return errServerAddr
	}
	if g.loop[port] && ip.IsLoopback() {
		return errServerAddr
	}
	if g.local[port] && (ip.IsLoopback() || ip.IsUnspecified() || g.ips[ip.String()]) {
		return errServerAddr
	}
	return nil
}
