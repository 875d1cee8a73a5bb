package acl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// ErrLoginPermissionDenied: the identity binds nothing.
var ErrLoginPermissionDenied = forbidden("Permission denied")

func authMethodNotFound(name string) error {
	return forbidden("ACL not found: auth method %q not found", name)
}

// LoginRequest is a login: an auth method, its bearer token and Meta for
// the description. Namespace is the namespace the request named, if
// NamespaceGiven (the login happens in the method's).
type LoginRequest struct {
	AuthMethod     string
	BearerToken    string
	Meta           map[string]string
	Namespace      string
	NamespaceGiven bool
}

// Login validates a bearer token with an auth method, binds the identity
// through the method's binding rules and mints a token. Nothing is written
// unless the login succeeds.
func (s *Service) Login(ctx context.Context, req LoginRequest) (*state.ACLToken, error) {
	if err := checkLoginMeta(req.Meta); err != nil {
		return nil, err
	}
	method, v, err := s.loginMethod(req.AuthMethod, req.Namespace, req.NamespaceGiven)
	if err != nil {
		return nil, err
	}
	id, err := validateBearer(ctx, v, req.BearerToken)
	if err != nil {
		return nil, err
	}
	plan, err := s.bind(method, id, req.Meta)
	if err != nil {
		return nil, err
	}
	tok := *plan.token
	tok.AccessorID = uuid.NewString()
	tok.SecretID = uuid.NewString()
	out, err := fsm.Apply(s.deps.Raft, fsm.ACLTokenSet, &fsm.ACLTokenSetRequest{Token: tok, Create: true})
	if IsNotFound(err) {
		// The method was deleted since it was read: nothing was minted.
		return nil, authMethodNotFound(req.AuthMethod)
	}
	return out, err
}

// Logout deletes the token of secret, which must have been created by login.
func (s *Service) Logout(secret string) error {
	if secret == "" {
		return &UnauthorizedError{Msg: "Supplied token does not exist"}
	}
	tok, _, err := s.Resolve(secret)
	if err != nil {
		return err
	}
	if tok.AuthMethod == "" {
		return forbidden("Permission denied: token wasn't created via login")
	}
	_, err = fsm.Apply(s.deps.Raft, fsm.ACLTokenDelete, &fsm.ACLTokenDeleteRequest{AccessorID: tok.AccessorID})
	if IsNotFound(err) {
		return ErrTokenNotFound // logged out concurrently
	}
	return err
}

// loginMethod finds the auth method of a login and its validator. A login
// that names a namespace other than the method's does not find the method
// there (403, upstream's text).
func (s *Service) loginMethod(name, ns string, nsGiven bool) (*state.ACLAuthMethod, *authmethod.Validator, error) {
	st := s.deps.State()
	_, method, err := st.ACLAuthMethod(memdb.NewWatchSet(), name)
	if err != nil {
		return nil, nil, err
	}
	if method == nil || (nsGiven && ns != methodNamespace(method)) {
		return nil, nil, authMethodNotFound(name)
	}
	v, err := s.validators.get(st, method, s.deps.Now, s.allowHTTPKeyURLs)
	if err != nil {
		return nil, nil, err
	}
	return method, v, nil
}

// validateBearer validates a bearer token: a token that fails is
// unauthorized with the validator's message; keys that cannot be fetched
// are the server's problem (a plain error: 500).
func validateBearer(ctx context.Context, v *authmethod.Validator, bearer string) (*authmethod.Identity, error) {
	id, err := v.ValidateLogin(ctx, bearer)
	if err == nil {
		return id, nil
	}
	var fetch *authmethod.FetchError
	if errors.As(err, &fetch) {
		return nil, err
	}
	return nil, &UnauthorizedError{Msg: err.Error()}
}

// loginPlan is what a login binds and the token it would mint (no
// AccessorID, no SecretID).
type loginPlan struct {
	bindings *authmethod.Bindings
	token    *state.ACLToken
}

// bind evaluates the method's binding rules in its namespace against the
// identity (authmethod.Bind decides) and builds the token. When the login
// is refused (nothing bound, or a bind name that renders invalid) the plan
// comes back with the refusal, so that explain can show the verdicts.
func (s *Service) bind(method *state.ACLAuthMethod, id *authmethod.Identity, meta map[string]string) (*loginPlan, error) {
	st := s.deps.State()
	ws := memdb.NewWatchSet()
	ns := methodNamespace(method)
	_, all, err := st.BindingRules(ws, ns, "")
	if err != nil {
		return nil, err
	}
	var rules []*state.BindingRule
	for _, r := range all {
		if sameMethod(r, method.Name) {
			rules = append(rules, r)
		}
	}
	b, err := authmethod.Bind(id, rules, s.datacenter, func(name string) (*state.ACLRole, error) {
		_, role, err := st.ACLRoleByName(ws, name)
		return role, err
	})
	if err != nil {
		return nil, err
	}
	plan := &loginPlan{bindings: b}
	// Upstream refuses a login whose matching rule renders a name that is
	// not valid for its bind type, before anything is written.
	for _, v := range b.Verdicts {
		if v.NameErr != nil {
			return plan, invalid("cannot compute %q bind name for bind target: %v", v.Rule.BindType, v.NameErr)
		}
	}
	if b.None() {
		return plan, ErrLoginPermissionDenied
	}
	desc, err := loginDescription(meta)
	if err != nil {
		return plan, err
	}
	now := s.Now().UTC()
	tok := &state.ACLToken{
		Description:       desc,
		Roles:             b.Roles,
		ServiceIdentities: b.ServiceIdentities,
		NodeIdentities:    b.NodeIdentities,
		Local:             method.TokenLocality != "global",
		AuthMethod:        method.Name,
		CreateTime:        now,
		Namespace:         ns,
	}
	if method.MaxTokenTTL > 0 {
		exp := now.Add(method.MaxTokenTTL)
		tok.ExpirationTime = &exp
	}
	tok.Hash = TokenHash(tok)
	plan.token = tok
	return plan, nil
}

// validatorCache keeps a validator per auth method, rebuilt when the method
// is replaced (its indexes change), so that JWKS keys are cached across
// logins. Entries belong to one state store: after a snapshot restore
// (from another cluster, say) the same name and indexes can describe
// another method, so a new store starts the cache over, as the resolver's.
type validatorCache struct {
	mu      sync.Mutex
	store   *state.Store
	entries map[string]validatorEntry
}

type validatorEntry struct {
	createIndex, modifyIndex uint64
	validator                *authmethod.Validator
}

func (c *validatorCache) get(st *state.Store, m *state.ACLAuthMethod, now func() time.Time, allowHTTP bool) (*authmethod.Validator, error) {
	key := strings.ToLower(m.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != st {
		// A request still on the old store rebuilds too; that only costs
		// a key fetch.
		c.store, c.entries = st, nil
	}
	if e, ok := c.entries[key]; ok && e.createIndex == m.CreateIndex && e.modifyIndex == m.ModifyIndex {
		return e.validator, nil
	}
	cfg, err := authmethod.ParseConfig(m.Config)
	if err == nil && !authmethod.IsRegisteredType(m.Type) {
		err = fmt.Errorf("Type should be one of: %v", authmethod.Types())
	}
	var v *authmethod.Validator
	if err == nil {
		v, err = authmethod.NewValidator(cfg, authmethod.WithClock(now), authmethod.WithHTTPKeyURLs(allowHTTP))
	}
	if err != nil {
		return nil, fmt.Errorf("auth method validator for %q could not be initialized: %v", m.Name, err)
	}
	if c.entries == nil || len(c.entries) >= 1024 {
		c.entries = map[string]validatorEntry{}
	}
	c.entries[key] = validatorEntry{createIndex: m.CreateIndex, modifyIndex: m.ModifyIndex, validator: v}
	return v, nil
}
