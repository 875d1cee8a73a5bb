package http

import (
	"fmt"
	"net/http"

	"github.com/ctlplane/ctlplane/http/ui"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
)

// registerUI mounts the web UI at /ui/ and sends / there. Every server
// serves the UI from its own binary (local routes: never forwarded).
func (h *Handler) registerUI() {
	assets, err := ui.New()
	if err != nil {
		// The assets are compiled in: a missing index.html is a build bug.
		panic(fmt.Sprintf("web UI assets: %v", err))
	}
	if h.local == nil {
		h.local = map[*mux.Route]bool{}
	}
	h.local[h.router.Path("/").HandlerFunc(ui.Redirect)] = true
	h.local[h.router.Path("/ui").HandlerFunc(ui.Redirect)] = true
	h.local[h.router.PathPrefix(ui.Prefix).Handler(assets)] = true
	h.handle("/v1/ui/capabilities", methods{{http.MethodGet, h.uiCapabilities}})
}

// uiCapabilities is what the caller's token may do, for the UI to offer
// only the actions the server would allow (it checks each again). The
// answer comes from the same authorizer the endpoints consult.
type uiCapabilities struct {
	ACLEnabled bool
	Management bool
	// AccessorID and Description name the token ("" with ACLs off).
	AccessorID  string
	Description string
	// ACL, Node and Operator are "", "read" or "write".
	ACL      string
	Node     string
	Operator string
	// Namespace is the namespace asked about (?namespace=, default
	// "default") and Capabilities the capabilities granted there.
	Namespace    string
	Capabilities []string
}

// uiNamespaceCaps are the capabilities the UI's actions and pages need.
var uiNamespaceCaps = []string{acl.CapListJobs, acl.CapReadJob, acl.CapSubmitJob, acl.CapReadLogs, acl.CapReadFS, acl.CapAllocLifecycle, acl.CapScaleJob}

func (h *Handler) uiCapabilities(w http.ResponseWriter, r *http.Request) (any, error) {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = state.DefaultNamespace
	}
	if !namespaceRE.MatchString(ns) {
		return nil, badRequest("Invalid namespace %q: a namespace name is 1 to 64 letters, digits, '-' or '_'", ns)
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	a := id.authz
	out := &uiCapabilities{ACLEnabled: h.backend.ACLEnabled(), Management: a.IsManagement(), Namespace: ns, Capabilities: []string{},
		ACL: level(a.ACLRead(), a.ACLWrite()), Node: level(a.NodeRead(), a.NodeWrite()), Operator: level(a.OperatorRead(), a.OperatorWrite())}
	if id.token != nil {
		out.AccessorID, out.Description = id.token.AccessorID, id.token.Description
	}
	for _, c := range uiNamespaceCaps {
		if a.NamespaceCapability(ns, c) {
			out.Capabilities = append(out.Capabilities, c)
		}
	}
	return out, nil
}

func level(read, write bool) string {
	switch {
	case write:
		return "write"
	case read:
		return "read"
	}
	return ""
}
