package acl

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// ErrTokenNotFound: the secret names no live token (unknown or expired).
var ErrTokenNotFound = errors.New("ACL not found")

// Resolver turns a secret into its token and authorizer. Parsed policies
// are cached by their text, whole resolutions by secret until the token, a
// policy or a role changes, so a change takes effect on the next request.
type Resolver struct {
	// Now is the clock expiry is judged by (nil: time.Now).
	Now func() time.Time
	// Datacenter is this agent's: a policy whose Datacenters list is not
	// empty applies only where it names this one (upstream's rule).
	Datacenter string

	mu       sync.Mutex
	policies map[string]cachedPolicy

	// resolved caches whole resolutions by secret, for the next request of
	// the same token: good while none of its watch channels has closed (the
	// token's row, the policy and role tables) on the same store (a
	// snapshot restore replaces the store).
	resolvedMu sync.RWMutex
	resolved   map[string]*resolvedToken
}

type resolvedToken struct {
	store *state.Store
	tok   *state.ACLToken
	authz *Authorizer
	watch []<-chan struct{}
}

// current says whether nothing the resolution was built from has changed.
func (e *resolvedToken) current(s *state.Store) bool {
	if e.store != s {
		return false
	}
	for _, ch := range e.watch {
		select {
		case <-ch:
			return false
		default:
		}
	}
	return true
}

// maxResolved bounds the resolution cache; it starts over when full.
const maxResolved = 65536

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
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	r.resolvedMu.RLock()
	e := r.resolved[secret]
	r.resolvedMu.RUnlock()
	if e != nil && e.current(s) {
		if e.tok.Expired(now()) {
			return nil, nil, ErrTokenNotFound
		}
		return e.tok, e.authz, nil
	}
	tok, watch, err := s.ACLTokenBySecretWatch(secret)
	if err != nil {
		return nil, nil, err
	}
	// The index lookup found the row; the secret is compared once more in
	// constant time so that no timing difference tells how much matched.
	if tok == nil || subtle.ConstantTimeCompare([]byte(tok.SecretID), []byte(secret)) != 1 || tok.Expired(now()) {
		return nil, nil, ErrTokenNotFound
	}
	authz, err := r.authorizer(s, tok)
	if err != nil {
		return nil, nil, err
	}
	r.resolvedMu.Lock()
	if r.resolved == nil || len(r.resolved) >= maxResolved {
		r.resolved = map[string]*resolvedToken{}
	}
	r.resolved[secret] = &resolvedToken{store: s, tok: tok, authz: authz, watch: watch}
	r.resolvedMu.Unlock()
	return tok, authz, nil
}

// authorizer merges the rules of the token's policies and its roles'
// policies that apply in this datacenter. A store failure is returned, not
// taken for a missing policy: dropping a policy could drop a deny.
func (r *Resolver) authorizer(s objectReader, tok *state.ACLToken) (*Authorizer, error) {
	ws := memdb.NewWatchSet()
	ids := map[string]bool{}
	for _, l := range tok.Policies {
		ids[l.ID] = true
	}
	for _, l := range tok.Roles {
		_, role, err := s.ACLRole(ws, l.ID)
		if err != nil {
			return nil, fmt.Errorf("resolving role %s of token %s: %w", l.ID, tok.AccessorID, err)
		}
		if role != nil {
			for _, pl := range role.Policies {
				ids[pl.ID] = true
			}
		}
	}
	var rules []*Rules
	for id := range ids {
		_, p, err := s.ACLPolicy(ws, id)
		if err != nil {
			return nil, fmt.Errorf("resolving policy %s of token %s: %w", id, tok.AccessorID, err)
		}
		if p == nil || !AppliesIn(p, r.Datacenter) {
			continue
		}
		if p.ID == state.GlobalManagementPolicyID {
			return ManageAll(), nil
		}
		if parsed := r.rules(p); parsed != nil {
			rules = append(rules, parsed)
		}
	}
	return NewAuthorizer(rules), nil
}

// objectReader is the part of the state store that resolution and link
// lookups read.
type objectReader interface {
	ACLPolicy(ws memdb.WatchSet, id string) (uint64, *state.ACLPolicy, error)
	ACLPolicyByName(ws memdb.WatchSet, name string) (uint64, *state.ACLPolicy, error)
	ACLRole(ws memdb.WatchSet, id string) (uint64, *state.ACLRole, error)
	ACLRoleByName(ws memdb.WatchSet, name string) (uint64, *state.ACLRole, error)
}

// AppliesIn says whether a policy applies in datacenter dc: its Datacenters
// list is empty or names dc.
func AppliesIn(p *state.ACLPolicy, dc string) bool {
	if len(p.Datacenters) == 0 {
		return true
	}
	return slices.Contains(p.Datacenters, dc)
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
