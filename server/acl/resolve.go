package acl

import (
	"crypto/subtle"
	"errors"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// ErrTokenNotFound: the secret names no live token (unknown or expired).
var ErrTokenNotFound = errors.New("ACL not found")

// Resolver turns a secret into its token and authorizer. The token is read
// from the state store every time; parsed policies and each token's
// authorizer are cached until the token, a policy or a role changes, so a
// change takes effect on the next request.
type Resolver struct {
	mu       sync.Mutex
	policies map[string]cachedPolicy
	// authorizers caches each token's authorizer; an entry is good while the
	// token, the policies and the roles are unchanged.
	authorizers map[string]cachedAuthorizer
	// store is the state store the cached authorizers were built from. A
	// snapshot restore replaces the store, and the indexes the entries are
	// keyed on then describe other objects: the cache starts over.
	store *state.Store
}

type cachedAuthorizer struct {
	tokenIndex, rulesIndex uint64
	authz                  *Authorizer
}

type cachedPolicy struct {
	source string
	rules  *Rules
}

// Resolve finds the token of secret ("" is the anonymous token) and builds
// what it may do. An unknown or expired secret is ErrTokenNotFound.
func (r *Resolver) Resolve(s *state.Store, secret string) (*state.ACLToken, *Authorizer, error) {
	if secret == "" {
		secret = state.AnonymousTokenSecret
	}
	_, tok, err := s.ACLTokenBySecret(memdb.NewWatchSet(), secret)
	if err != nil {
		return nil, nil, err
	}
	// The index lookup found the row; the secret is compared once more in
	// constant time so that no timing difference tells how much matched.
	if tok == nil || subtle.ConstantTimeCompare([]byte(tok.SecretID), []byte(secret)) != 1 || tok.Expired(time.Now()) {
		return nil, nil, ErrTokenNotFound
	}
	rulesIndex := s.ACLRulesIndex()
	r.mu.Lock()
	if r.store != s {
		r.store, r.authorizers = s, nil
	}
	c, ok := r.authorizers[tok.AccessorID]
	r.mu.Unlock()
	if ok && c.tokenIndex == tok.ModifyIndex && c.rulesIndex == rulesIndex {
		return tok, c.authz, nil
	}
	authz := r.authorizer(s, tok)
	r.mu.Lock()
	if r.store == s { // a request still on a replaced store does not cache
		if r.authorizers == nil || len(r.authorizers) > 65536 {
			r.authorizers = map[string]cachedAuthorizer{}
		}
		r.authorizers[tok.AccessorID] = cachedAuthorizer{tokenIndex: tok.ModifyIndex, rulesIndex: rulesIndex, authz: authz}
	}
	r.mu.Unlock()
	return tok, authz, nil
}

// authorizer merges the rules of the token's policies and its roles' policies.
func (r *Resolver) authorizer(s *state.Store, tok *state.ACLToken) *Authorizer {
	ws := memdb.NewWatchSet()
	ids := map[string]bool{}
	for _, l := range tok.Policies {
		ids[l.ID] = true
	}
	for _, l := range tok.Roles {
		if _, role, err := s.ACLRole(ws, l.ID); err == nil && role != nil {
			for _, pl := range role.Policies {
				ids[pl.ID] = true
			}
		}
	}
	if ids[state.GlobalManagementPolicyID] {
		return ManageAll()
	}
	var rules []*Rules
	for id := range ids {
		if _, p, err := s.ACLPolicy(ws, id); err == nil && p != nil {
			if parsed := r.rules(p); parsed != nil {
				rules = append(rules, parsed)
			}
		}
	}
	return NewAuthorizer(rules)
}

// rules parses a policy's rules, cached by ID and checked against the
// rules text (an index alone could name other rules after a restore).
func (r *Resolver) rules(p *state.ACLPolicy) *Rules {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.policies[p.ID]; ok && e.source == p.Rules {
		return e.rules
	}
	parsed, err := Parse(p.Rules)
	if err != nil {
		return nil // stored rules were validated on write; a failure grants nothing
	}
	if r.policies == nil || len(r.policies) > 16384 {
		r.policies = map[string]cachedPolicy{}
	}
	r.policies[p.ID] = cachedPolicy{source: p.Rules, rules: parsed}
	return parsed
}
