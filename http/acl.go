package http

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

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
		if scheme, rest, ok := strings.Cut(strings.TrimSpace(auth), " "); ok && strings.EqualFold(scheme, "bearer") {
			if t := strings.TrimSpace(rest); t != "" {
				return t
			}
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
	s := h.backend.State()
	lookup := secret
	if lookup == "" {
		lookup = state.AnonymousTokenSecret
	}
	_, tok, err := s.ACLTokenBySecret(memdb.NewWatchSet(), lookup)
	if err != nil {
		return nil, err
	}
	// The index lookup found the row; compare the secret once more in
	// constant time so that the comparison leaks nothing through timing.
	if tok == nil || subtle.ConstantTimeCompare([]byte(tok.SecretID), []byte(lookup)) != 1 || tok.Expired(time.Now()) {
		return nil, errACLNotFound
	}
	return &identity{token: tok, authz: h.authorizer(s, tok), secret: secret}, nil
}

// authorizer builds what a token may do from its policies and its roles'
// policies. Parsed policies are cached by ID and ModifyIndex.
func (h *Handler) authorizer(s *state.Store, tok *state.ACLToken) *acl.Authorizer {
	ws := memdb.NewWatchSet()
	policyIDs := map[string]bool{}
	for _, l := range tok.Policies {
		policyIDs[l.ID] = true
	}
	for _, l := range tok.Roles {
		if _, role, err := s.ACLRole(ws, l.ID); err == nil && role != nil {
			for _, pl := range role.Policies {
				policyIDs[pl.ID] = true
			}
		}
	}
	if policyIDs[state.GlobalManagementPolicyID] {
		return acl.ManageAll()
	}
	var rules []*acl.Rules
	for id := range policyIDs {
		_, p, err := s.ACLPolicy(ws, id)
		if err != nil || p == nil {
			continue // a deleted policy grants nothing
		}
		if r := h.policyCache.rules(p); r != nil {
			rules = append(rules, r)
		}
	}
	return acl.NewAuthorizer(rules)
}

// policyCache keeps parsed policy rules; a policy's rules only change with
// its ModifyIndex.
type policyCache struct {
	mu      sync.Mutex
	entries map[string]cachedPolicy
}

type cachedPolicy struct {
	modifyIndex uint64
	rules       *acl.Rules
}

func (c *policyCache) rules(p *state.ACLPolicy) *acl.Rules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[p.ID]; ok && e.modifyIndex == p.ModifyIndex {
		return e.rules
	}
	r, err := acl.Parse(p.Rules)
	if err != nil {
		return nil // stored rules were validated on write; never grant on a parse failure
	}
	if c.entries == nil || len(c.entries) > 16384 {
		c.entries = map[string]cachedPolicy{}
	}
	c.entries[p.ID] = cachedPolicy{modifyIndex: p.ModifyIndex, rules: r}
	return r
}

// Permissions, named as in the deny texts.
const (
	permACLRead       = "acl:read"
	permACLWrite      = "acl:write"
	permOperatorRead  = "operator:read"
	permOperatorWrite = "operator:write"
)

// allowed says whether the identity holds a permission.
func (id *identity) allowed(perm string) bool {
	switch perm {
	case permACLRead:
		return id.authz.ACLRead()
	case permACLWrite:
		return id.authz.ACLWrite()
	case permOperatorRead:
		return id.authz.OperatorRead()
	case permOperatorWrite:
		return id.authz.OperatorWrite()
	}
	return false
}

// require resolves the request's identity and checks one permission.
func (h *Handler) require(r *http.Request, perm string) (*identity, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if !id.allowed(perm) {
		return nil, h.permissionDenied(id, perm)
	}
	return id, nil
}

// requireManagement checks for a management token.
func (h *Handler) requireManagement(r *http.Request) (*identity, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if !id.authz.IsManagement() {
		return nil, h.permissionDenied(id, "management")
	}
	return id, nil
}

// permissionDenied is the 403 in the upstream wording. The anonymous token
// is told that it is the anonymous token, and, on a persistent agent whose
// ACL system has no management token yet, how to get one.
func (h *Handler) permissionDenied(id *identity, perm string) error {
	if id.token == nil || id.token.AccessorID != state.AnonymousTokenID {
		accessor := ""
		if id.token != nil {
			accessor = id.token.AccessorID
		}
		return &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission '%s'", accessor, perm)}
	}
	msg := fmt.Sprintf("Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token.", perm)
	if !h.backend.IsDev() && h.backend.State().ACLBootstrapIndex() == 0 {
		msg += " The ACL system has no management token yet: run `ctlplane acl bootstrap` (PUT /v1/acl/bootstrap) once to create one, or start the agents with -acl-initial-management-token=SECRET."
	}
	return &apiError{code: http.StatusForbidden, msg: msg}
}
