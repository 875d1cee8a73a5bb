package http

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// identity is who a request acts as: its token (nil when ACLs are off) and
// what that token may do.
type identity struct {
	token *state.ACLToken
	authz *acl.Authorizer
	// secret is the secret the request presented ("" for none).
	secret string
}

// caller is the identity as the domain services take it.
func (id *identity) caller() acl.Caller {
	c := acl.Caller{Authz: id.authz}
	if id.token != nil {
		c.AccessorID = id.token.AccessorID
	}
	return c
}

// namespace is the token's namespace: step 3 of namespace resolution.
func (id *identity) namespace() string {
	if id.token == nil {
		return ""
	}
	return id.token.Namespace
}

// requestToken returns the token a request presents: X-Service-Token, then
// Authorization: Bearer, then the upstream clients' headers. Never the
// query string.
func requestToken(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get(servicePrefix + "Token")); t != "" {
		return t
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		// Upstream's rule: the scheme, then the first word after it.
		if f := strings.Fields(auth); len(f) >= 2 && strings.EqualFold(f[0], "bearer") {
			return f[1]
		}
	}
	return compatToken(r)
}

var errACLNotFound = &apiError{code: http.StatusForbidden, msg: "ACL not found"}

// identify resolves the request's token. With ACLs off every request may do
// everything and any token is ignored. An unknown or expired secret is 403
// `ACL not found`.
func (h *Handler) identify(r *http.Request) (*identity, error) {
	if !h.backend.ACLEnabled() {
		return &identity{authz: acl.ManageAll()}, nil
	}
	secret := requestToken(r)
	tok, authz, err := h.services.ACL.Resolve(secret)
	if errors.Is(err, acl.ErrTokenNotFound) {
		return nil, errACLNotFound
	}
	if err != nil {
		return nil, err
	}
	return &identity{token: tok, authz: authz, secret: secret}, nil
}

// deniedError words a service's refusal (acl.DeniedError) of the token
// accessor in the upstream wording. The anonymous token is told that it is
// the anonymous token, and, on a persistent agent whose ACL system has no
// management token yet, how to get one.
func (h *Handler) deniedError(accessor, perm string) error {
	if accessor != state.AnonymousTokenID {
		return &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission '%s'", accessor, perm)}
	}
	msg := fmt.Sprintf("Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token.", perm)
	if !h.backend.IsDev() && h.backend.State().ACLBootstrapIndex() == 0 {
		msg += " The ACL system has no management token yet: run `ctlplane acl bootstrap` (PUT /v1/acl/bootstrap) once to create one, or start the agents with -acl-initial-management-token=SECRET."
	}
	return &apiError{code: http.StatusForbidden, msg: msg}
}

// Namespace handling of an ACL read.
type nsMode int

const (
	noNamespace  nsMode = iota // the object kind has no namespace
	oneNamespace               // resolved as usual; "*" is refused
	anyNamespace               // resolved as usual; "*" means every namespace
)

// aclQuery reads through the ACL service's reader in namespace ns ("" for
// kinds without one), keeps its result, and says whether it found anything.
type aclQuery func(ws memdb.WatchSet, rd acl.StoreReader, ns string) (index uint64, found bool, err error)

// aclRead is the shape every ACL-object read shares: query options,
// the ACL service's reader (it checks acl:read), the namespace, a blocking query, the read headers, and 404 with
// notFoundMsg when the query found nothing. result returns what it kept.
func (h *Handler) aclRead(w http.ResponseWriter, r *http.Request, mode nsMode, query aclQuery, result func() any, notFoundMsg string) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	reader, err := h.services.ACL.Reader(id.caller())
	if err != nil {
		return nil, err
	}
	ns := ""
	if mode != noNamespace {
		if ns, err = resolveNamespace(r, "", id, mode == anyNamespace); err != nil {
			return nil, err
		}
	}
	found := false
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, ok, err := query(ws, reader.On(s), ns)
		found = ok
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if !found {
		return nil, notFound(notFoundMsg)
	}
	return result(), nil
}
