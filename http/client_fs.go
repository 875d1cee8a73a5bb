package http

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/gorilla/mux"
)

// Task logs, as Nomad's GET /v1/client/fs/logs/:alloc_id (plain text, as
// its -plain output): the servers check node:read and read-logs in the
// allocation's namespace, then forward the request to the client of the
// allocation's node, which streams the file (client/http.go).
func (h *Handler) registerClientFS() {
	h.handle("/v1/client/fs/logs/{alloc_id}", methods{{http.MethodGet, h.clientLogs}})
}

func (h *Handler) clientLogs(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, err
	}
	if !id.authz.NodeRead() {
		return nil, errNodeDenied
	}
	allocID := mux.Vars(r)["alloc_id"]
	if !isUUID(allocID) {
		return nil, badRequest("Invalid allocation ID %q: a 36-character UUID is required", allocID)
	}
	allocID = strings.ToLower(allocID)
	_, a, err := h.backend.State().Alloc(nil, allocID)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, notFound(fmt.Sprintf("Unknown allocation %q", allocID))
	}
	if !id.authz.NamespaceCapability(a.Namespace, acl.CapReadLogs) {
		return nil, errNodeDenied
	}
	_, node, err := h.backend.State().Node(nil, a.NodeID)
	if err != nil {
		return nil, err
	}
	if node == nil || node.HTTPAddr == "" {
		return nil, &apiError{code: http.StatusBadGateway, msg: fmt.Sprintf("node %s of allocation %s serves no logs: it registered no HTTP address", a.NodeID, allocID)}
	}
	target := node.HTTPAddr
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = target
			pr.Out.URL.Path = "/v1/client/fs/logs/" + allocID
			pr.Out.URL.RawPath = ""
			pr.Out.Host = target
		},
		// Streams (follow) reach the caller as they are written.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("failed to reach node %s at %s: %v", node.Name, target, err))
		},
	}
	proxy.ServeHTTP(w, r)
	return written, nil
}
