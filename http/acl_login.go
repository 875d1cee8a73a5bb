package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// loginHandler serves login, logout and explain. It keeps one validator per
// auth method (configuration), so that JWKS keys are cached across logins.
type loginHandler struct {
	h          *Handler
	validators authValidatorCache
}

func (h *Handler) registerLogin() {
	l := &loginHandler{h: h}
	h.handle("/v1/acl/login", methods{{http.MethodPost, l.login}})
	h.handle("/v1/acl/logout", methods{{http.MethodPost, l.logout}})
	h.handle("/v1/acl/login/explain", methods{{http.MethodPost, l.explain}})
}

// loginRequest is the body of a login.
type loginRequest struct {
	AuthMethod  string
	BearerToken string
	Meta        map[string]string
}

// explainRequest is the body of an explain: the method and exactly one of a
// bearer token or an identity (field path to value).
type explainRequest struct {
	AuthMethod  string
	BearerToken string
	Identity    map[string]any
	Meta        map[string]string
}

// explainRule is one binding rule's verdict.
type explainRule struct {
	ID           string
	Selector     string
	BindType     string
	BindName     string
	Matched      bool
	RenderedName string
	SkipReason   string
}

// explainToken is the token a login would create, without its secrets.
type explainToken struct {
	Description       string
	Roles             []state.ACLLink             `json:",omitempty"`
	ServiceIdentities []*state.ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []*state.ACLNodeIdentity    `json:",omitempty"`
	Local             bool
	AuthMethod        string
	ExpirationTime    *time.Time `json:",omitempty"`
	Namespace         string
}

// explainResponse says what a login would do: LoginStatus and LoginError
// are the status and message login would answer with (200 and no error when
// it would mint Token).
type explainResponse struct {
	AuthMethod   string
	Namespace    string
	Identity     map[string]any
	BindingRules []explainRule
	Token        *explainToken
	LoginStatus  int
	LoginError   string `json:",omitempty"`
}

var (
	errLoginPermissionDenied = &apiError{code: http.StatusForbidden, msg: "Permission denied"}
	// errLoginACLDisabled: with access control off a token means nothing,
	// so login and logout refuse as upstream does.
	errLoginACLDisabled = &apiError{code: http.StatusUnauthorized, msg: "ACL support disabled"}
)

func authMethodNotFound(name string) error {
	return &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("ACL not found: auth method %q not found", name)}
}

// decodeLoginBody decodes a login or explain body strictly, with the
// upstream login message for a body that does not decode.
func decodeLoginBody(r *http.Request, out any) error {
	return decodeStrict(r, "Failed to decode request body", out)
}

// login validates a bearer token with an auth method, binds the identity
// through the method's binding rules and mints a token. No token is needed
// (any sent is ignored).
func (l *loginHandler) login(w http.ResponseWriter, r *http.Request) (any, error) {
	if !l.h.backend.ACLEnabled() {
		return nil, errLoginACLDisabled
	}
	var req loginRequest
	if err := decodeLoginBody(r, &req); err != nil {
		return nil, err
	}
	method, ns, v, err := l.method(r, req.AuthMethod)
	if err != nil {
		return nil, err
	}
	id, err := validateBearer(r.Context(), v, req.BearerToken)
	if err != nil {
		return nil, err
	}
	plan, err := l.bind(method, ns, id, req.Meta)
	if err != nil {
		return nil, err
	}
	tok := *plan.token
	tok.AccessorID = uuid.NewString()
	tok.SecretID = uuid.NewString()
	out, err := l.h.backend.Apply(fsm.ACLTokenSetType, &fsm.ACLTokenSetRequest{Token: tok, Create: true})
	var se *state.Error
	if errors.As(err, &se) && se.Code == state.ErrNotFound {
		// The method was deleted since it was read: nothing was minted.
		return nil, authMethodNotFound(req.AuthMethod)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// logout deletes the request's token, which must have been created by login.
func (l *loginHandler) logout(w http.ResponseWriter, r *http.Request) (any, error) {
	if !l.h.backend.ACLEnabled() {
		return nil, errLoginACLDisabled
	}
	secret := requestToken(r)
	if secret == "" {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "Supplied token does not exist"}
	}
	tok, _, err := l.h.resolver.Resolve(l.h.backend.State(), secret)
	if errors.Is(err, acl.ErrTokenNotFound) {
		return nil, errACLNotFound
	}
	if err != nil {
		return nil, err
	}
	if tok.AuthMethod == "" {
		return nil, &apiError{code: http.StatusForbidden, msg: "Permission denied: token wasn't created via login"}
	}
	_, err = l.h.backend.Apply(fsm.ACLTokenDeleteType, &fsm.ACLTokenDeleteRequest{AccessorID: tok.AccessorID})
	var se *state.Error
	if errors.As(err, &se) && se.Code == state.ErrNotFound {
		return nil, errACLNotFound // logged out concurrently
	}
	if err != nil {
		return nil, err
	}
	return true, nil
}

// explain answers what a login would do, without minting anything. It runs
// the same steps as login (method, validation, bind) and reports the
// verdict of each. With access control off it still evaluates the rules,
// and says that login would be refused.
func (l *loginHandler) explain(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := l.h.require(r, permACLRead); err != nil {
		return nil, err
	}
	var req explainRequest
	if err := decodeLoginBody(r, &req); err != nil {
		return nil, err
	}
	if (req.BearerToken == "") == (req.Identity == nil) {
		return nil, badRequest("Explain needs exactly one of BearerToken or Identity")
	}
	out := &explainResponse{AuthMethod: req.AuthMethod, BindingRules: []explainRule{}}
	verdict := func(err error) (any, error) {
		code, msg := errorStatus(err)
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			return nil, err // not a login verdict: the explain request failed
		}
		if !l.h.backend.ACLEnabled() {
			code, msg = errLoginACLDisabled.code, errLoginACLDisabled.msg
		}
		out.LoginStatus, out.LoginError = code, msg
		return out, nil
	}
	if ns, explicit, err := loginNamespace(r); err != nil {
		return nil, err
	} else if explicit {
		out.Namespace = ns
	}
	method, ns, v, err := l.method(r, req.AuthMethod)
	if err != nil {
		return verdict(err)
	}
	out.AuthMethod, out.Namespace = method.Name, ns
	var id *authmethod.Identity
	if req.Identity != nil {
		if id, err = v.Config().IdentityFromFields(req.Identity); err != nil {
			return nil, badRequest("Invalid Identity: %v", err)
		}
	} else if id, err = validateBearer(r.Context(), v, req.BearerToken); err != nil {
		return verdict(err)
	}
	out.Identity = id.Fields()
	plan, err := l.bind(method, ns, id, req.Meta)
	if plan != nil {
		for _, vd := range plan.bindings.Verdicts {
			out.BindingRules = append(out.BindingRules, explainRule{
				ID: vd.Rule.ID, Selector: vd.Rule.Selector, BindType: vd.Rule.BindType, BindName: vd.Rule.BindName,
				Matched: vd.Matched, RenderedName: vd.RenderedName, SkipReason: vd.SkipReason,
			})
		}
	}
	if err != nil {
		return verdict(err)
	}
	if !l.h.backend.ACLEnabled() {
		return verdict(errLoginACLDisabled)
	}
	t := plan.token
	out.Token = &explainToken{
		Description: t.Description, Roles: t.Roles, ServiceIdentities: t.ServiceIdentities,
		NodeIdentities: t.NodeIdentities, Local: t.Local, AuthMethod: t.AuthMethod,
		ExpirationTime: t.ExpirationTime, Namespace: t.Namespace,
	}
	out.LoginStatus = http.StatusOK
	return out, nil
}

// loginNamespace is the namespace a login names (ns query parameter, then
// the X-Service-Namespace header); explicit is false when it names none.
// The caller's token plays no part: login needs none.
func loginNamespace(r *http.Request) (ns string, explicit bool, err error) {
	if r.URL.Query().Get("ns") == "" && r.Header.Get(servicePrefix+"Namespace") == "" {
		return "", false, nil
	}
	ns, err = resolveNamespace(r, "", &identity{}, false)
	return ns, true, err
}

// method finds the auth method of a login and its validator, and the
// namespace the login happens in: the method's. A login that names another
// namespace does not find the method there (403, upstream's text).
func (l *loginHandler) method(r *http.Request, name string) (*state.ACLAuthMethod, string, *authmethod.Validator, error) {
	reqNS, explicit, err := loginNamespace(r)
	if err != nil {
		return nil, "", nil, err
	}
	_, method, err := l.h.backend.State().ACLAuthMethod(memdb.NewWatchSet(), name)
	if err != nil {
		return nil, "", nil, err
	}
	ns := state.DefaultNamespace
	if method != nil && method.Namespace != "" {
		ns = method.Namespace
	}
	if method == nil || (explicit && reqNS != ns) {
		return nil, "", nil, authMethodNotFound(name)
	}
	v, err := l.validators.get(method)
	if err != nil {
		return nil, "", nil, err
	}
	return method, ns, v, nil
}

// validateBearer validates a bearer token: a token that fails is 401 with
// the validator's message; keys that cannot be fetched are the server's
// problem (500).
func validateBearer(ctx context.Context, v *authmethod.Validator, bearer string) (*authmethod.Identity, error) {
	id, err := v.ValidateLogin(ctx, bearer)
	if err == nil {
		return id, nil
	}
	var fetch *authmethod.FetchError
	if errors.As(err, &fetch) {
		return nil, &apiError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	return nil, &apiError{code: http.StatusUnauthorized, msg: err.Error()}
}

// loginPlan is what a login binds and the token it would mint (no
// AccessorID, no SecretID).
type loginPlan struct {
	bindings *authmethod.Bindings
	token    *state.ACLToken
}

// bind evaluates the method's binding rules in the login's namespace (by ID)
// against the identity (authmethod.Bind decides) and builds the token. When
// nothing is bound the plan (with its verdicts) comes back together with
// 403 Permission denied.
func (l *loginHandler) bind(method *state.ACLAuthMethod, ns string, id *authmethod.Identity, meta map[string]string) (*loginPlan, error) {
	s := l.h.backend.State()
	ws := memdb.NewWatchSet()
	// Method names are case-insensitive: a rule that names the method in
	// another case is the method's too (as upstream, and as the delete
	// cascade has it).
	_, all, err := s.BindingRules(ws, ns, "")
	if err != nil {
		return nil, err
	}
	var rules []*state.BindingRule
	for _, r := range all {
		if strings.EqualFold(r.AuthMethod, method.Name) {
			rules = append(rules, r)
		}
	}
	b, err := authmethod.Bind(id, rules, l.h.backend.Datacenter(), func(name string) (*state.ACLRole, error) {
		_, role, err := s.ACLRoleByName(ws, name)
		return role, err
	})
	if err != nil {
		return nil, err
	}
	plan := &loginPlan{bindings: b}
	if b.None() {
		return plan, errLoginPermissionDenied
	}
	desc := "token created via login"
	if len(meta) > 0 {
		buf, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		desc += ": " + string(buf)
	}
	now := time.Now().UTC()
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
	tok.Hash = loginTokenHash(tok)
	plan.token = tok
	return plan, nil
}

// loginTokenHash hashes what a login token grants.
func loginTokenHash(t *state.ACLToken) []byte {
	fields := []string{t.Description, t.AuthMethod, t.Namespace, fmt.Sprint(t.Local)}
	for _, r := range t.Roles {
		fields = append(fields, "role:"+r.ID)
	}
	for _, s := range t.ServiceIdentities {
		fields = append(fields, "service:"+s.ServiceName)
	}
	for _, n := range t.NodeIdentities {
		fields = append(fields, "node:"+n.NodeName+"@"+n.Datacenter)
	}
	return state.HashOf(fields...)
}

// authValidatorCache keeps a validator per auth method, rebuilt when the
// method is replaced (its indexes change).
type authValidatorCache struct {
	mu      sync.Mutex
	entries map[string]authValidatorEntry
}

type authValidatorEntry struct {
	createIndex, modifyIndex uint64
	validator                *authmethod.Validator
}

func (c *authValidatorCache) get(m *state.ACLAuthMethod) (*authmethod.Validator, error) {
	key := strings.ToLower(m.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok && e.createIndex == m.CreateIndex && e.modifyIndex == m.ModifyIndex {
		return e.validator, nil
	}
	cfg, err := authmethod.ParseConfig(m.Config)
	if err == nil && !authmethod.IsRegisteredType(m.Type) {
		err = fmt.Errorf("Type should be one of: %v", authmethod.Types())
	}
	var v *authmethod.Validator
	if err == nil {
		v, err = authmethod.NewValidator(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("auth method validator for %q could not be initialized: %v", m.Name, err)
	}
	if c.entries == nil || len(c.entries) >= 1024 {
		c.entries = map[string]authValidatorEntry{}
	}
	c.entries[key] = authValidatorEntry{createIndex: m.CreateIndex, modifyIndex: m.ModifyIndex, validator: v}
	return v, nil
}
