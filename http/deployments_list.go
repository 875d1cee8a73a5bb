package http

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-memdb"
)

// deploymentListOptions are the list parameters of GET /v1/deployments.
type deploymentListOptions struct {
	namespace string
	prefix    string
	perPage   int
	reverse   bool
	filter    *bexpr.Evaluator
	// The next_token: the ID of the first deployment of the page, with its
	// CreateIndex when the token was given as <CreateIndex>.<ID>.
	tokenID    string
	tokenIndex uint64
	tokenHasIx bool
}

func parseDeploymentList(r *http.Request) (*deploymentListOptions, error) {
	q := r.URL.Query()
	o := &deploymentListOptions{namespace: q.Get("namespace"), reverse: q.Get("reverse") == "true"}
	if o.namespace == "" {
		o.namespace = state.DefaultNamespace
	}
	if o.namespace != state.AllNamespaces && !namespaceRE.MatchString(o.namespace) {
		return nil, badRequest("Invalid namespace %q: a namespace name is 1 to 64 letters, digits, '-' or '_'", o.namespace)
	}
	if p := q.Get("prefix"); p != "" {
		hexPart := strings.ReplaceAll(p, "-", "")
		_, err := hex.DecodeString(hexPart)
		if err != nil || len(hexPart) > 32 || len(p) > 36 || strings.Count(p, "-") > 4 {
			return nil, badRequest("Invalid prefix %q: a deployment ID prefix must have an even number of hexadecimal characters (0-9a-f), at most 32; up to 4 hyphens are ignored", p)
		}
		o.prefix = p
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return nil, badRequest("Expect a non-negative number for `per_page` query string parameter")
		}
		o.perPage = int(n)
	}
	if tok := q.Get("next_token"); tok != "" {
		o.tokenID = tok
		if ix, id, ok := strings.Cut(tok, "."); ok {
			n, err := strconv.ParseUint(ix, 10, 64)
			if err != nil || id == "" {
				return nil, badRequest("Invalid next_token %q: expected a deployment ID or <CreateIndex>.<ID>", tok)
			}
			o.tokenID, o.tokenIndex, o.tokenHasIx = id, n, true
		}
	}
	if f := q.Get("filter"); f != "" {
		// Size and nesting caps first: go-bexpr's parse cost grows about
		// fourfold per level of parentheses.
		ev, err := bindrule.NewEvaluator("filter", f)
		if err != nil {
			return nil, badRequest("failed to read filter expression: %v", err)
		}
		o.filter = ev
	}
	return o, nil
}

func (h *Handler) deploymentList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseDeploymentList(r)
	if err != nil {
		return nil, err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	ident, err := h.deploymentIdentity(r)
	if err != nil {
		return nil, err
	}
	visible, err := deployments.ReadDeploymentsIn(ident.caller(), o.namespace)
	if err != nil {
		return nil, err
	}
	var page []*state.Deployment
	var next string
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, p, n, err := o.paginate(ws, s, visible)
		page, next = p, n
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if next != "" {
		for _, prefix := range headerPrefixes(r) {
			w.Header().Set(prefix+"NextToken", next)
		}
	}
	return page, nil
}

// paginate reads one page: it walks the list (by CreateIndex then ID, or
// by ID with a prefix), reversed when asked, from the token on, and keeps
// what passes the namespace permission, then the filter, until the page is
// full. next is the ID of the first deployment of the next page ("" on the
// last page).
func (o *deploymentListOptions) paginate(ws memdb.WatchSet, s *state.Store, visible func(ns string) bool) (uint64, []*state.Deployment, string, error) {
	q := state.DeploymentListQuery{Namespace: o.namespace, Prefix: o.prefix, Reverse: o.reverse,
		TokenID: o.tokenID, TokenIndex: o.tokenIndex, TokenHasIndex: o.tokenHasIx}
	out := []*state.Deployment{}
	next := ""
	idx, err := s.DeploymentsWalk(ws, q, func(d *state.Deployment) (bool, error) {
		// The namespace permission first: the filter must see only what
		// the caller may read, or its answer (a match, or a 400 from an
		// evaluation error) would tell of deployments the caller cannot see.
		if !visible(d.Namespace) {
			return true, nil
		}
		if o.filter != nil {
			ok, err := o.filter.Evaluate(d)
			if err != nil {
				return false, badRequest("failed to read result page: %v", err)
			}
			if !ok {
				return true, nil
			}
		}
		if o.perPage > 0 && len(out) == o.perPage {
			next = d.ID
			return false, nil
		}
		out = append(out, d)
		return true, nil
	})
	if err != nil {
		return idx, nil, "", err
	}
	return idx, out, next, nil
}
