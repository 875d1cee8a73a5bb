package http

import (
	"net/http"
	"strings"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// The read API of nodes and allocations, as Nomad's: node endpoints need
// node:read, allocation endpoints namespace read-job on the allocation's
// namespace.

func (h *Handler) registerNodes() {
	h.registerNodePools()
	h.handle("/v1/nodes", methods{{http.MethodGet, h.nodeList}})
	h.handle("/v1/node/{node_id}", methods{{http.MethodGet, h.nodeRead}})
	h.handle("/v1/node/{node_id}/allocations", methods{{http.MethodGet, h.nodeAllocs}})
	h.registerNodeDrain()
	h.handle("/v1/allocations", methods{{http.MethodGet, h.allocList}})
	h.handle("/v1/allocation/{alloc_id}", methods{{http.MethodGet, h.allocRead}})
	h.registerClientProtocol()
}

// nodeReader resolves the caller of a node read, which nodes.ReadNodes decides.
func (h *Handler) nodeReader(r *http.Request) (*identity, error) {
	return h.readerFor(r, nodes.ReadNodes)
}

// readerFor resolves the caller of a Nomad-side read (an unknown token is
// refused) and asks the family's rule whether it may read.
func (h *Handler) readerFor(r *http.Request, rule func(acl.Caller) error) (*identity, error) {
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, err
	}
	if err := rule(id.caller()); err != nil {
		return nil, err
	}
	return id, nil
}

// nodeIDPrefix checks a prefix query parameter: hex digits (hyphens ignored),
// an even number of them, as for deployments (design §6).
func nodeIDPrefix(r *http.Request) (string, error) {
	p := r.URL.Query().Get("prefix")
	digits := strings.ReplaceAll(p, "-", "")
	if len(digits)%2 != 0 {
		return "", badRequest("Invalid prefix %q: it must have an even number of hexadecimal characters", p)
	}
	for _, c := range digits {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return "", badRequest("Invalid prefix %q: only hexadecimal characters are allowed", p)
		}
	}
	return strings.ToLower(p), nil
}

func (h *Handler) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.nodeReader(r); err != nil {
		return nil, err
	}
	prefix, err := nodeIDPrefix(r)
	if err != nil {
		return nil, err
	}
	return blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, []*state.Node, error) {
		idx, nodes, err := s.Nodes(ws)
		out := []*state.Node{}
		for _, n := range nodes {
			if strings.HasPrefix(n.ID, prefix) {
				out = append(out, publicNode(n))
			}
		}
		return idx, out, err
	})
}

func (h *Handler) nodeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.nodeReader(r); err != nil {
		return nil, err
	}
	nodeID, err := nodeIDVar(r)
	if err != nil {
		return nil, err
	}
	node, err := blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, *state.Node, error) {
		return s.Node(ws, nodeID)
	})
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, notFound("node not found")
	}
	return nomadNodeOf(publicNode(node)), nil
}

// publicNode is a node as reads answer it: without its secret (as Nomad
// sanitizes Node.SecretID).
func publicNode(n *state.Node) *state.Node {
	c := *n
	c.SecretID = ""
	return &c
}

func (h *Handler) nodeAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.nodeReader(r)
	if err != nil {
		return nil, err
	}
	nodeID, err := nodeIDVar(r)
	if err != nil {
		return nil, err
	}
	// A node runs allocations of every namespace: only the readable ones.
	visible, err := jobs.ReadJobsIn(id.caller(), state.AllNamespaces)
	if err != nil {
		return nil, err
	}
	found := false
	out, err := blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, []*allocDetail, error) {
		_, n, err := s.Node(ws, nodeID)
		if err != nil {
			return 0, nil, err
		}
		found = n != nil
		idx, allocs, err := s.AllocsByNode(ws, nodeID)
		if err != nil {
			return 0, nil, err
		}
		details, err := nodeAllocDetails(ws, s, nodeReadableAllocs(visible, allocs))
		return idx, details, err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound("node not found")
	}
	return out, nil
}

// nodeReadableAllocs keeps the allocations whose namespace is visible.
func nodeReadableAllocs(visible func(ns string) bool, allocs []*state.Allocation) []*state.Allocation {
	out := make([]*state.Allocation, 0, len(allocs))
	for _, a := range allocs {
		if visible(a.Namespace) {
			out = append(out, a)
		}
	}
	return out
}

func (h *Handler) allocList(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, r.URL.Query().Get("namespace"), id, true)
	if err != nil {
		return nil, err
	}
	visible, err := jobs.ReadJobsIn(id.caller(), ns)
	if err != nil {
		return nil, err
	}
	prefix, err := nodeIDPrefix(r)
	if err != nil {
		return nil, err
	}
	return blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, []*state.Allocation, error) {
		idx, allocs, err := s.Allocs(ws, ns)
		out := nodeReadableAllocs(visible, allocs)
		if prefix != "" {
			kept := out[:0]
			for _, a := range out {
				if strings.HasPrefix(a.ID, prefix) {
					kept = append(kept, a)
				}
			}
			out = kept
		}
		return idx, out, err
	})
}

func (h *Handler) allocRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, err
	}
	allocID := mux.Vars(r)["alloc_id"]
	if !isUUID(allocID) {
		return nil, badRequest("Invalid allocation ID %q: a 36-character UUID is required", allocID)
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	caller := id.caller()
	var alloc *allocDetail
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, a, err := readAllocDetail(ws, s, allocID)
		if err == nil && a != nil {
			// Before any wait, and without index headers on a refusal.
			err = jobs.ReadJob(caller, a.Namespace)
		}
		alloc = a
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if alloc == nil {
		return nil, notFound("alloc not found")
	}
	return alloc, nil
}
