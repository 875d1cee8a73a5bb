package http

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// The client protocol (design §6b): how client nodes register, heartbeat,
// learn their allocations and report on them. A node's identity is its
// secret (api.NodeSecretHeader), minted at its first registration; the
// node service (server/nodes) checks every call against it: registering a
// new node needs node:write (an introduction token), re-registering one
// its secret, and the other calls are the node's own, on its own
// allocations. Here the caller is only resolved.

// Caps on a registration (design §9: inputs are bounded, 400 naming the field).
const (
	maxNodeDrivers    = 64
	maxNodeAttributes = 512
	maxNodeMeta       = 512
	maxNodeKeyLen     = 256
	maxNodeValueLen   = 4096
)

// errNodeDenied is every refusal of the Nomad-side endpoints (design §7),
// an unknown secret included.
var errNodeDenied = &apiError{code: http.StatusForbidden, msg: "Permission denied"}

var errNoNodeService = &apiError{code: http.StatusNotImplemented, msg: "The node service is not available on this server"}

func (h *Handler) registerClientProtocol() {
	h.handle("/v1/client/register", methods{{http.MethodPut, h.clientRegister}, {http.MethodPost, h.clientRegister}})
	h.handle("/v1/client/heartbeat/{node_id}", methods{{http.MethodPut, h.clientHeartbeat}, {http.MethodPost, h.clientHeartbeat}})
	h.handle("/v1/client/allocations/{node_id}", methods{{http.MethodGet, h.clientAllocs}})
	h.handle("/v1/client/allocations", methods{{http.MethodPut, h.clientUpdateAllocs}, {http.MethodPost, h.clientUpdateAllocs}})
}

// nodeIdentify is identify with the Nomad-side answer to an unknown secret.
func (h *Handler) nodeIdentify(r *http.Request) (*identity, error) {
	id, err := h.identify(r)
	if err == errACLNotFound {
		return nil, errNodeDenied
	}
	return id, err
}

// nodeCaller resolves the caller for the node service: its node secret
// and, when withACL, its ACL token (an unknown secret is refused here).
func (h *Handler) nodeCaller(r *http.Request, withACL bool) (nodes.Caller, error) {
	c := nodes.Caller{NodeSecret: strings.TrimSpace(r.Header.Get(api.NodeSecretHeader))}
	if withACL {
		id, err := h.nodeIdentify(r)
		if err != nil {
			return c, err
		}
		c.ACL = id.authz
	}
	return c, nil
}

// nodeService is the node service, checked for once the request is valid.
func (h *Handler) nodeService() (NodeService, error) {
	if h.services.Nodes == nil {
		return nil, errNoNodeService
	}
	return h.services.Nodes, nil
}

// nodeIDVar is the {node_id} path variable, a full UUID.
func nodeIDVar(r *http.Request) (string, error) {
	id := mux.Vars(r)["node_id"]
	if !isUUID(id) {
		return "", badRequest("Invalid node ID %q: a 36-character UUID is required", id)
	}
	return id, nil
}

func nodeCheckStringMap(field string, m map[string]string, limit int) error {
	if len(m) > limit {
		return badRequest("%s has %d entries: at most %d are allowed", field, len(m), limit)
	}
	for k, v := range m {
		if len(k) > maxNodeKeyLen {
			return badRequest("%s has a key longer than %d bytes", field, maxNodeKeyLen)
		}
		if len(v) > maxNodeValueLen {
			return badRequest("%s[%q] is longer than %d bytes", field, k, maxNodeValueLen)
		}
	}
	return nil
}

// nodeRegistration and allocUpdateRequest decode api.NodeRegistration and
// api.AllocUpdateRequest (the same JSON) into the server's types.
type nodeRegistration struct {
	ID         string
	Name       string
	Datacenter string
	HTTPAddr   string
	Drivers    map[string]*state.DriverInfo
	Resources  state.Resources
	Attributes map[string]string
	Meta       map[string]string
	NodeClass  string
	NodePool   string

	MinDynamicPort int
	MaxDynamicPort int
	ReservedPorts  []int
}

// maxReservedPorts bounds a node's reserved ports.
const maxReservedPorts = 1024

// checkNodePorts validates a node's port range and reserved ports.
func checkNodePorts(reg *nodeRegistration) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MinDynamicPort", reg.MinDynamicPort}, {"MaxDynamicPort", reg.MaxDynamicPort}} {
		if f.v < 0 || f.v > 65535 {
			return badRequest("%s %d is out of range: ports are 1 to 65535 (0: Nomad's default)", f.name, f.v)
		}
	}
	lo, hi := (&state.Node{MinDynamicPort: reg.MinDynamicPort, MaxDynamicPort: reg.MaxDynamicPort}).PortRange()
	if lo > hi {
		return badRequest("MinDynamicPort %d is above MaxDynamicPort %d", lo, hi)
	}
	if len(reg.ReservedPorts) > maxReservedPorts {
		return badRequest("ReservedPorts has %d ports: at most %d are allowed", len(reg.ReservedPorts), maxReservedPorts)
	}
	for _, p := range reg.ReservedPorts {
		if p < 1 || p > 65535 {
			return badRequest("ReservedPorts: %d is not a port (1 to 65535)", p)
		}
	}
	return nil
}

type allocUpdateRequest struct {
	NodeID string
	Allocs []*state.AllocClientUpdate
}

func (h *Handler) clientRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	caller, err := h.nodeCaller(r, true)
	if err != nil {
		return nil, err
	}
	var reg nodeRegistration
	if err := decodeBody(r, "Node", &reg); err != nil {
		return nil, err
	}
	if len(reg.Drivers) > maxNodeDrivers {
		return nil, badRequest("Drivers has %d entries: at most %d are allowed", len(reg.Drivers), maxNodeDrivers)
	}
	for name, d := range reg.Drivers {
		if len(name) > maxNodeKeyLen {
			return nil, badRequest("Drivers has a name longer than %d bytes", maxNodeKeyLen)
		}
		if d == nil {
			return nil, badRequest("Drivers[%q] is null", name)
		}
	}
	if err := nodeCheckStringMap("Attributes", reg.Attributes, maxNodeAttributes); err != nil {
		return nil, err
	}
	if err := nodeCheckStringMap("Meta", reg.Meta, maxNodeMeta); err != nil {
		return nil, err
	}
	if len(reg.HTTPAddr) > maxNodeKeyLen {
		return nil, badRequest("HTTPAddr is longer than %d bytes", maxNodeKeyLen)
	}
	if err := checkNodeClassPool(&reg.NodeClass, &reg.NodePool); err != nil {
		return nil, err
	}
	if err := checkNodePorts(&reg); err != nil {
		return nil, err
	}
	node := &state.Node{
		ID: reg.ID, Name: reg.Name, Datacenter: reg.Datacenter, HTTPAddr: reg.HTTPAddr,
		Drivers: reg.Drivers, Resources: reg.Resources, Attributes: reg.Attributes, Meta: reg.Meta,
		NodeClass: reg.NodeClass, NodePool: reg.NodePool,
		MinDynamicPort: reg.MinDynamicPort, MaxDynamicPort: reg.MaxDynamicPort, ReservedPorts: reg.ReservedPorts,
	}
	nodes, err := h.nodeService()
	if err != nil {
		return nil, err
	}
	res, err := nodes.Register(caller, node)
	if err != nil {
		return nil, err
	}
	return &api.NodeRegisterResponse{NodeID: res.NodeID, SecretID: res.SecretID, HeartbeatTTL: res.HeartbeatTTL, Index: res.Index}, nil
}

func (h *Handler) clientHeartbeat(w http.ResponseWriter, r *http.Request) (any, error) {
	nodeID, err := nodeIDVar(r)
	if err != nil {
		return nil, err
	}
	caller, err := h.nodeCaller(r, false)
	if err != nil {
		return nil, err
	}
	nodes, err := h.nodeService()
	if err != nil {
		return nil, err
	}
	ttl, index, err := nodes.Heartbeat(caller, nodeID)
	if err != nil {
		return nil, err
	}
	return &api.HeartbeatResponse{HeartbeatTTL: ttl, Index: index}, nil
}

// clientAllocs answers a node's list of allocations, or with
// ?changes_since=N what changed in it after index N (api.ClientAllocChanges):
// a node re-reads on every change, and most of its list is what it has.
func (h *Handler) clientAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	nodeID, err := nodeIDVar(r)
	if err != nil {
		return nil, err
	}
	caller, err := h.nodeCaller(r, false)
	if err != nil {
		return nil, err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	var since uint64
	v, changes := r.URL.Query()["changes_since"]
	if changes {
		if since, err = strconv.ParseUint(v[0], 10, 64); err != nil {
			return nil, badRequest("Invalid changes_since: %q is not an index", v[0])
		}
	}
	nodes, err := h.nodeService()
	if err != nil {
		return nil, err
	}
	// The caller is checked before any wait.
	if _, err := nodes.AllocsIndexForNode(caller, nil, nodeID); err != nil {
		return nil, err
	}
	// Wait on the index alone (a node's own reports do not move it), then
	// build the answer once.
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, _ *state.Store) (uint64, error) {
		return nodes.AllocsIndexForNode(caller, ws, nodeID)
	})
	if err != nil {
		return nil, err
	}
	out, err := nodes.AllocChangesForNode(caller, nodeID, since)
	if err != nil {
		return nil, err
	}
	// Both indexes were read before the answer's transaction: the changes
	// after the higher one are still to come.
	meta.index = max(meta.index, out.Index)
	setMeta(w, r, meta)
	if out.Allocs == nil {
		out.Allocs = []*state.ClientAlloc{}
	}
	if !changes {
		return out.Allocs, nil
	}
	if out.Removed == nil {
		out.Removed = []string{}
	}
	answer := &clientAllocChanges{Full: out.Full, Allocs: out.Allocs, Removed: out.Removed, Count: out.Count}
	if wantsMsgpack(r) {
		return writeMsgpack(w, answer)
	}
	return answer, nil
}

// clientAllocChanges is api.ClientAllocChanges.
type clientAllocChanges struct {
	Full    bool
	Allocs  []*state.ClientAlloc
	Removed []string
	Count   int
}

func (h *Handler) clientUpdateAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	caller, err := h.nodeCaller(r, false)
	if err != nil {
		return nil, err
	}
	var req allocUpdateRequest
	if err := decodeClientBody(r, "AllocUpdateRequest", &req); err != nil {
		return nil, err
	}
	if !isUUID(req.NodeID) {
		return nil, badRequest("Invalid NodeID %q: a 36-character UUID is required", req.NodeID)
	}
	nodes, err := h.nodeService()
	if err != nil {
		return nil, err
	}
	index, err := nodes.UpdateAllocs(caller, req.NodeID, req.Allocs)
	if err != nil {
		return nil, err
	}
	return &api.AllocUpdateResponse{Index: index}, nil
}
