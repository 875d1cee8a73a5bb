package http

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// Search contexts (Nomad's names; deployments are "deployment").
const (
	ctxAllocs      = "allocs"
	ctxDeployments = "deployment"
	ctxEvals       = "evals"
	ctxJobs        = "jobs"
	ctxNodes       = "nodes"
	ctxNamespaces  = "namespaces"
	ctxAll         = "all"
)

// searchContexts are the contexts "all" searches, in Nomad's order.
var searchContexts = []string{ctxAllocs, ctxDeployments, ctxEvals, ctxJobs, ctxNodes, ctxNamespaces}

// searchTruncateLimit is how many matches a context answers (Nomad's 20).
const searchTruncateLimit = 20

func (h *Handler) registerSearch() {
	h.handle("/v1/search", methods{
		{http.MethodPut, h.search},
		{http.MethodPost, h.search},
	})
}

// searchRequest is Nomad's SearchRequest: Prefix and Context, with the
// client's QueryOptions embedded (known fields, only Namespace used).
type searchRequest struct {
	Prefix     string
	Context    string
	Region     string
	Namespace  string
	AllowStale bool
	WaitIndex  uint64
	WaitTime   time.Duration
	Params     map[string]string
	Headers    map[string]string
	AuthToken  string
	Filter     string
	PerPage    int32
	NextToken  string
	Reverse    bool
}

// search is Nomad's prefix search: IDs (names for namespaces) starting
// with Prefix, per context, at most 20 each (Truncations says where more
// matched), only what the token may read: read-job in the namespace for
// jobs, evaluations, allocations and deployments, node:read for nodes, any
// capability for a namespace. A context the token can read nothing of is
// left out; none at all is 403.
func (h *Handler) search(w http.ResponseWriter, r *http.Request) (any, error) {
	var req searchRequest
	if err := decodeBody(r, "SearchRequest", &req); err != nil {
		return nil, err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, req.Namespace, id, true)
	if err != nil {
		return nil, err
	}
	var contexts []string
	switch req.Context {
	case ctxAll:
		contexts = searchContexts
	case ctxAllocs, ctxDeployments, ctxEvals, ctxJobs, ctxNodes, ctxNamespaces:
		contexts = []string{req.Context}
	case "":
		return nil, badRequest("Context must be set: one of %s or all", strings.Join(searchContexts, ", "))
	default:
		return nil, badRequest("Invalid context %q: one of %s or all", req.Context, strings.Join(searchContexts, ", "))
	}
	// Each context is decided by its family's read rule: the jobs family's
	// (read-job) for jobs, evaluations, allocations and deployments.
	caller := id.caller()
	readJobs, jobsErr := jobs.ReadJobsIn(caller, ns)
	if jobsErr != nil {
		// Refused in ns: those contexts are left out, and nothing of theirs is visible.
		readJobs = func(string) bool { return false }
	}
	allowed := contexts[:0:0]
	for _, c := range contexts {
		switch c {
		case ctxNodes:
			if nodes.ReadNodes(caller) == nil {
				allowed = append(allowed, c)
			}
		case ctxNamespaces:
			allowed = append(allowed, c) // filtered per namespace
		default:
			if jobsErr == nil {
				allowed = append(allowed, c)
			}
		}
	}
	if len(allowed) == 0 {
		return nil, jobDenied
	}
	inNS := func(n string) bool { return (ns == state.AllNamespaces || n == ns) && readJobs(n) }
	readNamespace := func(n string) bool { return namespaces.ReadNamespace(caller, n) == nil }
	var out *searchResponse
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		out = &searchResponse{Matches: map[string][]string{}, Truncations: map[string]bool{}}
		var index uint64
		for _, c := range allowed {
			idx, ids, err := searchContext(ws, s, c, req.Prefix, inNS, readNamespace)
			if err != nil {
				return 0, err
			}
			index = max(index, idx)
			sort.Strings(ids)
			out.Truncations[c] = len(ids) > searchTruncateLimit
			if len(ids) > searchTruncateLimit {
				ids = ids[:searchTruncateLimit]
			}
			out.Matches[c] = ids
		}
		return index, nil
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	return out, nil
}

// searchResponse is Nomad's SearchResponse.
type searchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
}

// searchContext lists the IDs of one context starting with prefix that
// inNS (namespaced objects) or nsOK (namespaces) admits.
func searchContext(ws memdb.WatchSet, s *state.Store, c, prefix string, inNS, nsOK func(string) bool) (uint64, []string, error) {
	ids := []string{}
	add := func(id, ns string) {
		if strings.HasPrefix(id, prefix) && inNS(ns) {
			ids = append(ids, id)
		}
	}
	switch c {
	case ctxJobs:
		idx, jobs, err := s.Jobs(ws, state.AllNamespaces, prefix)
		for _, j := range jobs {
			add(j.ID, j.Namespace)
		}
		return idx, ids, err
	case ctxEvals:
		idx, evals, err := s.Evals(ws, state.AllNamespaces)
		for _, e := range evals {
			add(e.ID, e.Namespace)
		}
		return idx, ids, err
	case ctxAllocs:
		idx, allocs, err := s.Allocs(ws, state.AllNamespaces)
		for _, a := range allocs {
			add(a.ID, a.Namespace)
		}
		return idx, ids, err
	case ctxDeployments:
		idx, deps, err := s.Deployments(ws, state.AllNamespaces, "")
		for _, d := range deps {
			add(d.ID, d.Namespace)
		}
		return idx, ids, err
	case ctxNodes:
		idx, nodes, err := s.Nodes(ws)
		for _, n := range nodes {
			if strings.HasPrefix(n.ID, prefix) {
				ids = append(ids, n.ID)
			}
		}
		return idx, ids, err
	case ctxNamespaces:
		idx, nss, err := s.Namespaces(ws, prefix)
		for _, n := range nss {
			if nsOK(n.Name) {
				ids = append(ids, n.Name)
			}
		}
		return idx, ids, err
	}
	return 0, ids, nil
}
