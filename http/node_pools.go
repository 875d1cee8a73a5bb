package http

import (
	"encoding/json"
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/nodepools"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-memdb"
)

// NodePoolService is what Nomad's node pool endpoints call to write.
type NodePoolService interface {
	Upsert(caller acl.Caller, p *state.NodePool) (uint64, error)
	Delete(caller acl.Caller, name string) (uint64, error)
}

// registerNodePools adds Nomad 1.6's node pool routes. They are registered
// before /v1/node/{node_id}, which would otherwise take /v1/node/pools.
func (h *Handler) registerNodePools() {
	h.handle("/v1/node/pools", methods{
		{http.MethodGet, h.nodePoolList},
		{http.MethodPut, h.nodePoolsService(h.nodePoolUpsert)},
		{http.MethodPost, h.nodePoolsService(h.nodePoolUpsert)},
	})
	h.handle("/v1/node/pool/{name}", methods{
		{http.MethodGet, h.nodePoolRead},
		{http.MethodPut, h.nodePoolsService(h.nodePoolUpsert)},
		{http.MethodPost, h.nodePoolsService(h.nodePoolUpsert)},
		{http.MethodDelete, h.nodePoolsService(h.nodePoolDelete)},
	})
	h.handle("/v1/node/pool/{name}/nodes", methods{{http.MethodGet, h.nodePoolNodes}})
	h.handle("/v1/node/pool/{name}/jobs", methods{{http.MethodGet, h.nodePoolJobs}})
}

// nodePoolsService answers 501 while no node pool service is wired in.
func (h *Handler) nodePoolsService(fn apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		if h.services.NodePools == nil {
			return nil, &apiError{code: http.StatusNotImplemented, msg: "The node pools API is not served by this agent"}
		}
		return fn(w, r)
	}
}

// parseFilter reads the optional go-bexpr `filter` query parameter.
func parseFilter(r *http.Request) (*bexpr.Evaluator, error) {
	f := r.URL.Query().Get("filter")
	if f == "" {
		return nil, nil
	}
	ev, err := bindrule.NewEvaluator("filter", f)
	if err != nil {
		return nil, badRequest("failed to read filter expression: %v", err)
	}
	return ev, nil
}

// nodePoolList is GET /v1/node/pools: every pool (built-ins included), by
// name; `prefix` and `filter` narrow it. Reads need node:read.
func (h *Handler) nodePoolList(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.readerFor(r, nodepools.ReadPools); err != nil {
		return nil, err
	}
	filter, err := parseFilter(r)
	if err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, []*state.NodePool, error) {
		idx, all, err := s.NodePools(ws, prefix)
		if err != nil || filter == nil {
			return idx, all, err
		}
		out := []*state.NodePool{}
		for _, p := range all {
			ok, err := filter.Evaluate(p)
			if err != nil {
				return 0, nil, badRequest("failed to read result page: %v", err)
			}
			if ok {
				out = append(out, p)
			}
		}
		return idx, out, nil
	})
}

// nodePoolRead is GET /v1/node/pool/:name.
func (h *Handler) nodePoolRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.readerFor(r, nodepools.ReadPools); err != nil {
		return nil, err
	}
	name := mux.Vars(r)["name"]
	p, err := blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, *state.NodePool, error) {
		return s.NodePoolByName(ws, name)
	})
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, notFound("node pool not found")
	}
	return p, nil
}

// nodePoolBody is Nomad's api.NodePool as its client sends it.
// NodeIdentityTTL (newer clients send it, "" when unset) is accepted and
// not kept.
type nodePoolBody struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	NodeIdentityTTL        json.RawMessage
	SchedulerConfiguration *state.NodePoolSchedulerConfiguration
	CreateIndex            uint64
	ModifyIndex            uint64
}

// nodePoolUpsert is PUT|POST /v1/node/pools and /v1/node/pool/:name.
func (h *Handler) nodePoolUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var body nodePoolBody
	if err := decodeBody(r, "NodePool", &body); err != nil {
		return nil, err
	}
	if name, ok := mux.Vars(r)["name"]; ok && body.Name != name {
		return nil, badRequest("Node pool name does not match request path")
	}
	caller, err := h.namespaceCaller(r)
	if err != nil {
		return nil, err
	}
	idx, err := h.services.NodePools.Upsert(caller, &state.NodePool{
		Name: body.Name, Description: body.Description, Meta: body.Meta, SchedulerConfiguration: body.SchedulerConfiguration,
	})
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, idx)
	return nil, nil
}

// nodePoolDelete is DELETE /v1/node/pool/:name.
func (h *Handler) nodePoolDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	caller, err := h.namespaceCaller(r)
	if err != nil {
		return nil, err
	}
	idx, err := h.services.NodePools.Delete(caller, mux.Vars(r)["name"])
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, idx)
	return nil, nil
}

// nodePoolNodes is GET /v1/node/pool/:name/nodes: the pool's nodes ("all":
// every node); [] for a pool that does not exist, as Nomad answers.
func (h *Handler) nodePoolNodes(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.readerFor(r, nodepools.ReadPools); err != nil {
		return nil, err
	}
	if r.URL.Query().Get("prefix") != "" {
		return nil, badRequest("prefix argument not allowed")
	}
	filter, err := parseFilter(r)
	if err != nil {
		return nil, err
	}
	name := mux.Vars(r)["name"]
	return blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, []*state.Node, error) {
		_, pool, err := s.NodePoolByName(ws, name)
		if err != nil {
			return 0, nil, err
		}
		idx, nodes, err := s.Nodes(ws)
		out := []*state.Node{}
		if pool == nil || err != nil {
			return idx, out, err
		}
		for _, n := range nodes {
			if !state.InNodePool(n, name) {
				continue
			}
			if filter != nil {
				ok, err := filter.Evaluate(publicNode(n))
				if err != nil {
					return 0, nil, badRequest("failed to read result page: %v", err)
				}
				if !ok {
					continue
				}
			}
			out = append(out, publicNode(n))
		}
		return idx, out, nil
	})
}

// nodePoolJobs is GET /v1/node/pool/:name/jobs: the jobs of the pool in
// the request's namespace (`*`: every namespace the token may read jobs in).
func (h *Handler) nodePoolJobs(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.readerFor(r, nodepools.ReadPools); err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, "", id, true)
	if err != nil {
		return nil, err
	}
	visible, err := jobs.ReadJobsIn(id.caller(), ns)
	if err != nil {
		return nil, err
	}
	name := mux.Vars(r)["name"]
	return blockingRead(h, w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, []*jobListStub, error) {
		out := []*jobListStub{}
		_, pool, err := s.NodePoolByName(ws, name)
		if err != nil || pool == nil {
			return 1, out, err
		}
		idx, all, err := s.Jobs(ws, ns, "")
		if err != nil {
			return 0, nil, err
		}
		var mine []*state.Job
		for _, j := range all {
			if jobPool(j) == name && visible(j.Namespace) {
				mine = append(mine, j)
			}
		}
		sumIdx, sums, err := s.JobSummaries(ws, mine)
		if err != nil {
			return 0, nil, err
		}
		for _, j := range mine {
			out = append(out, &jobListStub{
				ID: j.ID, Name: j.Name, Namespace: j.Namespace, Datacenters: j.Datacenters, NodePool: jobPool(j), Type: j.Type,
				Priority: j.Priority, Stop: j.Stop, Status: j.Status, StatusDescription: j.StatusDescription,
				Version: j.Version, CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex,
				JobModifyIndex: j.JobModifyIndex, SubmitTime: j.SubmitTime,
				JobSummary: sums[[2]string{j.Namespace, j.ID}],
			})
		}
		return max(idx, sumIdx), out, nil
	})
}

// jobPool is a job's pool; jobs stored before pools existed are in "default".
func jobPool(j *state.Job) string {
	if j.NodePool == "" {
		return state.NodePoolDefault
	}
	return j.NodePool
}
