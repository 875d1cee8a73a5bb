package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/gorilla/mux"
)

// Calls to a node's own API, made by this server with a grant the node
// service minted for that one operation (never with anything of the
// caller's request): logs (client_fs.go), the allocation directory,
// host and allocation stats, restart and signal.
func (h *Handler) registerClientNode() {
	h.handle("/v1/client/grant", methods{{http.MethodGet, h.clientGrant}})
	h.handle("/v1/client/fs/ls/{alloc_id}", methods{{http.MethodGet, h.clientFSList}})
	h.handle("/v1/client/fs/stat/{alloc_id}", methods{{http.MethodGet, h.clientFSStat}})
	h.handle("/v1/client/fs/cat/{alloc_id}", methods{{http.MethodGet, h.clientFSCat}})
	h.handle("/v1/client/fs/readat/{alloc_id}", methods{{http.MethodGet, h.clientFSReadAt}})
	h.handle("/v1/client/fs/stream/{alloc_id}", methods{{http.MethodGet, h.clientFSStream}})
	h.handle("/v1/client/stats", methods{{http.MethodGet, h.clientHostStats}})
	h.handle("/v1/client/allocation/{alloc_id}/stats", methods{{http.MethodGet, h.clientAllocStats}})
	h.handle("/v1/client/allocation/{alloc_id}/restart", methods{{http.MethodPut, h.clientAllocRestart}, {http.MethodPost, h.clientAllocRestart}})
	h.handle("/v1/client/allocation/{alloc_id}/signal", methods{{http.MethodPut, h.clientAllocSignal}, {http.MethodPost, h.clientAllocSignal}})
}

// maxNodeAnswer bounds a node's JSON answer (a listing, stats).
const maxNodeAnswer = 8 << 20

// nodeGrant authorizes the caller for g and mints its grant.
func (h *Handler) nodeGrant(r *http.Request, g api.Grant) (*nodes.LogsTarget, error) {
	t, _, err := h.nodeGrantAs(r, g)
	return t, err
}

// nodeGrantAs is nodeGrant that also answers the caller's identity, for
// a followed answer to check again (followNode).
func (h *Handler) nodeGrantAs(r *http.Request, g api.Grant) (*nodes.LogsTarget, *identity, error) {
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, nil, err
	}
	svc, err := h.nodeService()
	if err != nil {
		return nil, nil, err
	}
	caller := nodes.Caller{NodeSecret: strings.TrimSpace(r.Header.Get(api.NodeSecretHeader)), ACL: id.authz}
	t, err := svc.Grant(caller, g)
	return t, id, err
}

// clientGrant answers a grant to a caller that goes to a node directly
// (the node asks it with the caller's token).
func (h *Handler) clientGrant(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	g := api.Grant{Op: q.Get("op"), AllocID: q.Get("alloc_id"), Task: q.Get("task"), Stream: q.Get("type"), Path: q.Get("path")}
	// Only what Nomad's client calls on a node directly: a grant is a
	// bearer credential for a minute, handed out no further than needed.
	switch g.Op {
	case api.GrantLogs, api.GrantFSCat, api.GrantFSReadAt, api.GrantFSStream:
	default:
		return nil, badRequest("op %q is not granted to callers: make that call through the servers", g.Op)
	}
	t, err := h.nodeGrant(r, g)
	if err != nil {
		return nil, err
	}
	if t.Grant == "" {
		return nil, nodeGone(t)
	}
	return &api.GrantResponse{Grant: t.Grant, NodeID: t.NodeID, Expires: t.Expires}, nil
}

func nodeGone(t *nodes.LogsTarget) error {
	if t.AllocID == "" {
		return &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s has no secret: it cannot check a grant", t.NodeID)}
	}
	return &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s of allocation %s is gone or has no secret: it cannot check a grant", t.NodeID, t.AllocID)}
}

// callNode makes the granted call to the node: a request built here with
// only the grant, straight to the node (no proxy), never to a server's
// own address, with dial and header timeouts. A 200 answer is returned
// (the caller closes its body); any other is an error that does not quote
// the dial error, and quotes the node's message only for a 4xx, cleaned.
func (h *Handler) callNode(r *http.Request, t *nodes.LogsTarget, method, path string, query url.Values, body []byte) (*http.Response, error) {
	if t.Grant == "" || t.HTTPAddr == "" {
		what := "allocation " + t.AllocID
		if t.AllocID == "" {
			what = "this call"
		}
		return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s cannot serve %s: it is gone, registered no HTTP address or has no secret", t.NodeID, what)}
	}
	if _, port, err := net.SplitHostPort(t.HTTPAddr); err != nil || port == "" {
		return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s registered an invalid HTTP address", t.NodeName)}
	}
	guard := h.serverAddrGuard()
	tr := &http.Transport{
		Proxy: nil, // straight to the node, never through an environment proxy
		DialContext: (&net.Dialer{Timeout: nodeDialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
			return guard.check(address)
		}}).DialContext,
		ResponseHeaderTimeout:  nodeHeaderTimeout,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	u := &url.URL{Scheme: "http", Host: t.HTTPAddr, Path: path, RawQuery: query.Encode()}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(r.Context(), method, u.String(), rd)
	if err != nil {
		return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s registered an invalid HTTP address", t.NodeName)}
	}
	// The request is built here: only the grant goes, never a header of the caller's.
	out.Header = http.Header{api.GrantHeader: {t.Grant}, "User-Agent": {"ctlplane-server"}}
	if body != nil {
		out.Header.Set("Content-Type", "application/json")
	}
	resp, err := tr.RoundTrip(out)
	if err != nil {
		tr.CloseIdleConnections()
		if errors.Is(err, errServerAddr) {
			return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("refusing to call node %s: its HTTP address is one of the servers' own", t.NodeName)}
		}
		if r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
		// The dial error is not quoted: it would make this a port scanner.
		return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("failed to reach node %s", t.NodeName)}
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusForbidden {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &apiError{code: resp.StatusCode, msg: nodeMessage(t.NodeName, msg)}
	}
	// A refused grant or a fault: the node's body is not quoted.
	return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s answered %d", t.NodeName, resp.StatusCode)}
}

// nodeMessage is a node's short error message: one line of printable
// text, at most 256 characters, said to be the node's.
func nodeMessage(node string, msg []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, strings.TrimSpace(string(msg)))
	if len(s) > 256 {
		s = s[:256] + "…"
	}
	return fmt.Sprintf("node %s: %s", node, s)
}

// nodeJSON makes a granted call and decodes its JSON answer into out.
func (h *Handler) nodeJSON(r *http.Request, g api.Grant, method, path string, query url.Values, body []byte, out any) error {
	t, err := h.nodeGrant(r, g)
	if err != nil {
		return err
	}
	resp, err := h.callNode(r, t, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxNodeAnswer)).Decode(out); err != nil {
		return &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s answered something that is not the expected JSON", t.NodeName)}
	}
	return nil
}

func allocVar(r *http.Request) string { return mux.Vars(r)["alloc_id"] }

func (h *Handler) fsGrant(r *http.Request, op string) (api.Grant, url.Values, error) {
	p, err := nodes.CleanAllocPath(r.URL.Query().Get("path"))
	if err != nil {
		return api.Grant{}, nil, err
	}
	return api.Grant{Op: op, AllocID: allocVar(r), Path: p}, url.Values{"path": {p}}, nil
}

func (h *Handler) clientFSList(w http.ResponseWriter, r *http.Request) (any, error) {
	g, q, err := h.fsGrant(r, api.GrantFSList)
	if err != nil {
		return nil, err
	}
	var out []*api.AllocFileInfo
	if err := h.nodeJSON(r, g, http.MethodGet, "/v1/client/fs/ls/"+strings.ToLower(g.AllocID), q, nil, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []*api.AllocFileInfo{}
	}
	return out, nil
}

func (h *Handler) clientFSStat(w http.ResponseWriter, r *http.Request) (any, error) {
	g, q, err := h.fsGrant(r, api.GrantFSStat)
	if err != nil {
		return nil, err
	}
	var out api.AllocFileInfo
	if err := h.nodeJSON(r, g, http.MethodGet, "/v1/client/fs/stat/"+strings.ToLower(g.AllocID), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// clientFSCat streams a file (the node bounds its size).
func (h *Handler) clientFSCat(w http.ResponseWriter, r *http.Request) (any, error) {
	g, q, err := h.fsGrant(r, api.GrantFSCat)
	if err != nil {
		return nil, err
	}
	t, err := h.nodeGrant(r, g)
	if err != nil {
		return nil, err
	}
	resp, err := h.callNode(r, t, http.MethodGet, "/v1/client/fs/cat/"+t.AllocID, q, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if n := resp.ContentLength; n >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, resp.Body)
	return written, nil
}

// clientFSReadAt streams a range of a file (offset, limit; the node
// bounds it).
func (h *Handler) clientFSReadAt(w http.ResponseWriter, r *http.Request) (any, error) {
	g, q, err := h.fsGrant(r, api.GrantFSReadAt)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"offset", "limit"} {
		if v := r.URL.Query().Get(name); v != "" {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return nil, badRequest("invalid %s %q: an integer is needed", name, v)
			}
			q.Set(name, v)
		}
	}
	t, err := h.nodeGrant(r, g)
	if err != nil {
		return nil, err
	}
	resp, err := h.callNode(r, t, http.MethodGet, "/v1/client/fs/readat/"+t.AllocID, q, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, resp.Body)
	return written, nil
}

// clientFSStream follows a file in Nomad's frames (offset, origin).
func (h *Handler) clientFSStream(w http.ResponseWriter, r *http.Request) (any, error) {
	g, q, err := h.fsGrant(r, api.GrantFSStream)
	if err != nil {
		return nil, err
	}
	in := r.URL.Query()
	if v := in.Get("offset"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return nil, badRequest("invalid offset %q: a non-negative integer is needed", v)
		}
		q.Set("offset", v)
	}
	switch o := in.Get("origin"); o {
	case "":
	case "start", "end":
		q.Set("origin", o)
	default:
		return nil, badRequest("invalid origin %q: must be start or end", o)
	}
	t, id, err := h.nodeGrantAs(r, g)
	if err != nil {
		return nil, err
	}
	return h.followNode(w, r, t, id, g, "/v1/client/fs/stream/"+t.AllocID, q, "application/json")
}

// clientHostStats is a node's host stats; node_id names it (as Nomad's
// API sends it: a server has no stats of its own to answer).
func (h *Handler) clientHostStats(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.URL.Query().Get("node_id")
	if id == "" {
		return nil, badRequest("missing node_id: the servers answer a node's stats, named by ?node_id=")
	}
	var out api.HostStats
	if err := h.nodeJSON(r, api.Grant{Op: api.GrantHostStats, NodeID: id}, http.MethodGet, "/v1/client/stats", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (h *Handler) clientAllocStats(w http.ResponseWriter, r *http.Request) (any, error) {
	g := api.Grant{Op: api.GrantAllocStats, AllocID: allocVar(r)}
	var out api.AllocResourceUsage
	if err := h.nodeJSON(r, g, http.MethodGet, "/v1/client/allocation/"+strings.ToLower(g.AllocID)+"/stats", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (h *Handler) clientAllocRestart(w http.ResponseWriter, r *http.Request) (any, error) {
	var req api.AllocationRestartRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, "AllocationRestartRequest", &req); err != nil {
			return nil, err
		}
	}
	g := api.Grant{Op: api.GrantAllocRestart, AllocID: allocVar(r), Task: req.TaskName, AllTasks: req.AllTasks}
	body, _ := json.Marshal(&req)
	var out struct{}
	if err := h.nodeJSON(r, g, http.MethodPut, "/v1/client/allocation/"+strings.ToLower(g.AllocID)+"/restart", nil, body, &out); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (h *Handler) clientAllocSignal(w http.ResponseWriter, r *http.Request) (any, error) {
	var req api.AllocSignalRequest
	if err := decodeBody(r, "AllocSignalRequest", &req); err != nil {
		return nil, err
	}
	sig := nodes.NormalizeSignal(req.Signal)
	if sig == "" {
		sig = req.Signal // the service says what is wrong
	}
	g := api.Grant{Op: api.GrantAllocSignal, AllocID: allocVar(r), Task: req.Task, Signal: sig}
	body, _ := json.Marshal(&api.AllocSignalRequest{Task: req.Task, Signal: sig})
	var out struct{}
	if err := h.nodeJSON(r, g, http.MethodPut, "/v1/client/allocation/"+strings.ToLower(g.AllocID)+"/signal", nil, body, &out); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
