package http

import (
	"net/http"
	"sort"
	"strings"

	"github.com/ctlplane/ctlplane/server/search"
	"github.com/ctlplane/ctlplane/state"
)

// Nomad's search block defaults (agent config search { ... }).
const (
	fuzzyMinTermLength = 2   // min_term_length
	fuzzyLimitQuery    = 20  // limit_query: objects scanned per context
	fuzzyLimitResults  = 100 // limit_results: matches kept per context
)

// fuzzySearchRequest is Nomad's FuzzySearchRequest.
type fuzzySearchRequest struct {
	Text    string
	Context string
	searchQueryOptions
}

// fuzzyMatch is Nomad's FuzzyMatch: the matched name (or ID) and the IDs
// of its parents, namespace first.
type fuzzyMatch struct {
	ID    string
	Scope []string `json:",omitempty"`
}

type fuzzySearchResponse struct {
	Matches     map[string][]fuzzyMatch
	Truncations map[string]bool
}

// scoredMatch is a match with its score: where Text occurs in the name.
type scoredMatch struct {
	fuzzyMatch
	score int
}

// fuzzySearch is Nomad's PUT /v1/search/fuzzy: a case-insensitive
// substring search of names (jobs and their groups, services, tasks and
// driver commands/images/classes; allocations, nodes, node pools and
// namespaces), best matches first, and an ID prefix search of evaluations
// and deployments over the first 20 of them, as Nomad 1.6 does.
func (h *Handler) fuzzySearch(w http.ResponseWriter, r *http.Request) (any, error) {
	var req fuzzySearchRequest
	if err := decodeBody(r, "FuzzySearchRequest", &req); err != nil {
		return nil, err
	}
	call, err := h.searchSetup(r, req.Namespace, req.Context, true)
	if err != nil {
		return nil, err
	}
	if n := len(req.Text); n < fuzzyMinTermLength {
		return nil, badRequest("fuzzy search query must be at least %d characters, got %d", fuzzyMinTermLength, n)
	}
	if call.unknown {
		return nil, badSearchContext(req.Context)
	}
	text := strings.ToLower(req.Text)
	var out *fuzzySearchResponse
	err = h.runSearch(w, r, call, func() {
		out = &fuzzySearchResponse{Matches: map[string][]fuzzyMatch{}, Truncations: map[string]bool{}}
	}, func(c string, objs []searchObject) {
		switch c {
		case search.Evals, search.Deployments, search.ScalingPolicies, search.Volumes:
			// Nomad lists these by ID (the request's prefix option,
			// empty) and keeps those of the first 20 starting with Text.
			matches := []fuzzyMatch{}
			for _, o := range objs[:min(len(objs), searchTruncateLimit)] {
				if strings.HasPrefix(o.id, req.Text) {
					matches = append(matches, fuzzyMatch{ID: o.id})
				}
			}
			out.Matches[c] = matches
			out.Truncations[c] = len(objs) > searchTruncateLimit
		default:
			fuzzyContext(out, c, objs, text)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fuzzyContext adds the matches of one fuzzy context's objects to out:
// the first 20 objects are scanned, at most 100 matches kept per context;
// either limit reached marks the context truncated (Nomad's rules).
func fuzzyContext(out *fuzzySearchResponse, context string, objs []searchObject, text string) {
	out.Truncations[context] = false
	found := map[string][]scoredMatch{}
	keep := func(ctx string, m scoredMatch, limited bool) bool {
		if len(found[ctx]) >= fuzzyLimitResults {
			out.Truncations[ctx] = true
			return false
		}
		found[ctx] = append(found[ctx], m)
		if limited {
			out.Truncations[ctx] = true
			return false
		}
		return true
	}
	for i, o := range objs[:min(len(objs), fuzzyLimitQuery)] {
		limited := i == fuzzyLimitQuery-1 && len(objs) > fuzzyLimitQuery
		if o.job != nil {
			for _, cm := range fuzzyJobMatches(o.job, text) {
				if !keep(cm.context, cm.m, limited) {
					break
				}
			}
			continue
		}
		if at := strings.Index(strings.ToLower(o.name), text); at >= 0 {
			keep(context, scoredMatch{fuzzyMatch{ID: o.name, Scope: fuzzyScope(context, o)}, at}, limited)
		}
	}
	for ctx, ms := range found {
		sort.SliceStable(ms, func(a, b int) bool {
			A, B := ms[a], ms[b]
			if A.score != B.score {
				return A.score < B.score
			}
			if len(A.ID) != len(B.ID) {
				return len(A.ID) < len(B.ID)
			}
			return A.ID < B.ID
		})
		list := make([]fuzzyMatch, len(ms))
		for i, m := range ms {
			list[i] = m.fuzzyMatch
		}
		out.Matches[ctx] = list
	}
}

// fuzzyScope is the Scope Nomad gives a match of a single object.
func fuzzyScope(context string, o searchObject) []string {
	switch context {
	case search.Nodes:
		return []string{o.id}
	case search.NodePools:
		return []string{o.name}
	case search.Allocs:
		return []string{o.ns, o.id}
	}
	return nil
}

type contextMatch struct {
	context string
	m       scoredMatch
}

// fuzzyJobMatches are the matches of a job, in Nomad's order: its name,
// then per group the group, its services, and per task the task, its
// services and its driver's image (docker), command (exec, raw_exec) or
// class (java).
func fuzzyJobMatches(j *state.Job, text string) []contextMatch {
	var out []contextMatch
	add := func(ctx, name string, scope ...string) {
		if at := strings.Index(strings.ToLower(name), text); at >= 0 {
			out = append(out, contextMatch{ctx, scoredMatch{fuzzyMatch{ID: name, Scope: append([]string{j.Namespace}, scope...)}, at}})
		}
	}
	add(search.Jobs, j.Name, j.ID)
	for _, g := range j.TaskGroups {
		add(search.Groups, g.Name, j.ID)
		for _, svc := range g.Services {
			add(search.Services, svc.Name, j.ID, g.Name)
		}
		for _, t := range g.Tasks {
			add(search.Tasks, t.Name, j.ID, g.Name)
			for _, svc := range t.Services {
				add(search.Services, svc.Name, j.ID, g.Name, t.Name)
			}
			param, ctx := "", ""
			switch t.Driver {
			case "docker":
				param, ctx = "image", search.Images
			case "exec", "raw_exec":
				param, ctx = "command", search.Commands
			case "java":
				param, ctx = "class", search.Classes
			}
			if ctx != "" {
				if v, ok := t.Config[param].(string); ok {
					add(ctx, v, j.ID, g.Name, t.Name)
				}
			}
		}
	}
	return out
}
