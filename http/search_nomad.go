package http

import (
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/server/search"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// searchTruncateLimit is how many objects a prefix search takes of a
// context (Nomad's truncateLimit).
const searchTruncateLimit = 20

func (h *Handler) registerSearch() {
	h.handle("/v1/search", methods{
		{http.MethodPut, h.search},
		{http.MethodPost, h.search},
	})
	h.handle("/v1/search/fuzzy", methods{
		{http.MethodPut, h.fuzzySearch},
		{http.MethodPost, h.fuzzySearch},
	})
}

// searchQueryOptions are the client's QueryOptions embedded in Nomad's
// search requests (known fields; only Namespace is used).
type searchQueryOptions struct {
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
	Prefix     string
}

// searchRequest is Nomad's SearchRequest.
type searchRequest struct {
	Prefix  string
	Context string
	searchQueryOptions
}

// searchResponse is Nomad's SearchResponse: a context without matches
// is null, as Nomad's.
type searchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
}

// badSearchContext is Nomad's refusal of an unknown context.
func badSearchContext(context string) error {
	return badRequest("context must be one of %v or 'all' for all contexts; got %q", search.Contexts, context)
}

// searchCall is what both searches resolve first: the caller's contexts
// (all of them, or the one named, as the token may search them) and the
// namespace.
type searchCall struct {
	ns       string
	contexts []string
	// unknown says the context is none of Nomad's: refused after the
	// checks Nomad makes first.
	unknown bool
	visible func(context, ns string) bool
}

// searchSetup checks context against Nomad's list and the caller's
// permissions. A context named explicitly that the token may not search is
// 403; with "all" such contexts are left out, and none at all is 403. A fuzzy search over every
// namespace ("*") skips these checks, as Nomad's: its objects are
// filtered one by one.
func (h *Handler) searchSetup(r *http.Request, bodyNS, context string, fuzzy bool) (*searchCall, error) {
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, bodyNS, id, true)
	if err != nil {
		return nil, err
	}
	caller := id.caller()
	call := &searchCall{ns: ns, visible: func(c, n string) bool { return search.Visible(caller, c, n) }}
	if context != search.All && !search.Known(context) {
		call.unknown = true
		return call, nil
	}
	if context != search.All {
		if !(fuzzy && ns == state.AllNamespaces) && !search.MaySearch(caller, ns, context) {
			return nil, jobDenied
		}
		call.contexts = []string{context}
		return call, nil
	}
	for _, c := range search.Contexts {
		if (fuzzy && ns == state.AllNamespaces) || search.MaySearch(caller, ns, c) {
			call.contexts = append(call.contexts, c)
		}
	}
	if len(call.contexts) == 0 {
		// Nomad's sufficientSearchPerms: a token that may search none of
		// the contexts is refused, not answered with nothing.
		return nil, jobDenied
	}
	return call, nil
}

// search is Nomad's prefix search: per context, the first 20 objects
// whose ID (name for namespaces and node pools) starts with Prefix, with
// Truncations saying where more were found. As Nomad's it does not block,
// rounds an odd-length prefix down to even for the UUID lookups, and
// leaves out a UUID context the prefix cannot be the start of a UUID for.
// Objects of namespaces the token may not read are never shown.
func (h *Handler) search(w http.ResponseWriter, r *http.Request) (any, error) {
	var req searchRequest
	if err := decodeBody(r, "SearchRequest", &req); err != nil {
		return nil, err
	}
	call, err := h.searchSetup(r, req.Namespace, req.Context, false)
	if err != nil {
		return nil, err
	}
	if call.unknown {
		return nil, badSearchContext(req.Context)
	}
	lookup := req.Prefix
	if req.Context != search.Jobs {
		lookup = roundUUIDPrefixDown(lookup)
	}
	var out *searchResponse
	err = h.runSearch(w, r, call, func() {
		out = &searchResponse{Matches: map[string][]string{}, Truncations: map[string]bool{}}
	}, func(c string, objs []searchObject) {
		if uuidContext(c) && !validUUIDPrefix(lookup) {
			return // Nomad's lookup by a UUID index fails, silenced
		}
		var candidates []string
		for _, o := range objs {
			if strings.HasPrefix(o.id, lookup) {
				candidates = append(candidates, o.id)
			}
		}
		var matches []string
		for _, id := range candidates[:min(len(candidates), searchTruncateLimit)] {
			if strings.HasPrefix(id, req.Prefix) {
				matches = append(matches, id)
			}
		}
		out.Matches[c] = matches
		out.Truncations[c] = len(candidates) > searchTruncateLimit
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runSearch reads each of call's contexts' objects in one read of the
// store (Nomad's searches never block, but honour stale and consistent),
// calling reset once per read and each per context, and sets the read's
// headers.
func (h *Handler) runSearch(w http.ResponseWriter, r *http.Request, call *searchCall, reset func(), each func(context string, objs []searchObject)) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	opts.minIndex = 0
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		reset()
		var index uint64
		for _, c := range call.contexts {
			idx, objs, err := searchObjects(ws, s, c, call.ns, call.visible)
			if err != nil {
				return 0, err
			}
			index = max(index, idx)
			each(c, objs)
		}
		return index, nil
	})
	if err != nil {
		return err
	}
	setMeta(w, r, meta)
	return nil
}

// searchObject is one object a search considers: its ID (or name), what
// fuzzy search matches (names), and its namespace.
type searchObject struct {
	id, ns string
	name   string
	job    *state.Job
}

// searchObjects lists context's objects in ns ("*": every namespace) that
// visible admits, in Nomad's index order, with the table's index.
// Plugins, volumes, scaling policies and variables are not kept here.
func searchObjects(ws memdb.WatchSet, s *state.Store, context, ns string, visible func(context, ns string) bool) (uint64, []searchObject, error) {
	var out []searchObject
	add := func(o searchObject) {
		if (ns == state.AllNamespaces || o.ns == ns) && visible(context, o.ns) {
			out = append(out, o)
		}
	}
	var idx uint64
	var err error
	switch context {
	case search.Jobs:
		var list []*state.Job
		idx, list, err = s.Jobs(ws, state.AllNamespaces, "")
		for _, j := range list {
			add(searchObject{id: j.ID, ns: j.Namespace, name: j.Name, job: j})
		}
		sort.SliceStable(out, func(a, b int) bool {
			return out[a].ns < out[b].ns || out[a].ns == out[b].ns && out[a].id < out[b].id
		})
		return idx, out, err
	case search.Evals:
		var list []*state.Evaluation
		idx, list, err = s.Evals(ws, state.AllNamespaces)
		for _, e := range list {
			add(searchObject{id: e.ID, ns: e.Namespace})
		}
	case search.Allocs:
		var list []*state.Allocation
		idx, list, err = s.Allocs(ws, state.AllNamespaces)
		for _, a := range list {
			add(searchObject{id: a.ID, ns: a.Namespace, name: a.Name})
		}
	case search.Deployments:
		var list []*state.Deployment
		idx, list, err = s.Deployments(ws, state.AllNamespaces, "")
		for _, d := range list {
			add(searchObject{id: d.ID, ns: d.Namespace})
		}
	case search.Nodes:
		var list []*state.Node
		idx, list, err = s.Nodes(ws)
		for _, n := range list {
			if visible(context, "") {
				out = append(out, searchObject{id: n.ID, name: n.Name})
			}
		}
	case search.NodePools:
		var list []*state.NodePool
		idx, list, err = s.NodePools(ws, "")
		for _, p := range list {
			if visible(context, "") {
				out = append(out, searchObject{id: p.Name, name: p.Name})
			}
		}
	case search.Namespaces:
		var list []*state.Namespace
		idx, list, err = s.Namespaces(ws, "")
		for _, n := range list {
			if visible(context, n.Name) {
				out = append(out, searchObject{id: n.Name, ns: n.Name, name: n.Name})
			}
		}
	default:
		return 0, nil, nil
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].id < out[b].id })
	return idx, out, err
}

// uuidContext says whether Nomad looks context's IDs up by a UUID index.
func uuidContext(context string) bool {
	switch context {
	case search.Allocs, search.Evals, search.Nodes, search.Deployments:
		return true
	}
	return false
}

// roundUUIDPrefixDown drops the last character of a prefix with an odd
// number of non-hyphen characters (Nomad's roundUUIDDownIfOdd).
func roundUUIDPrefixDown(prefix string) string {
	if (len(prefix)-strings.Count(prefix, "-"))%2 == 0 {
		return prefix
	}
	return prefix[:len(prefix)-1]
}

// validUUIDPrefix says whether memdb's UUID index accepts prefix: at most
// 36 characters and 4 hyphens, an even number of hex digits.
func validUUIDPrefix(prefix string) bool {
	if len(prefix) > 36 || strings.Count(prefix, "-") > 4 {
		return false
	}
	digits := strings.ReplaceAll(prefix, "-", "")
	if len(digits)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(digits)
	return err == nil
}
