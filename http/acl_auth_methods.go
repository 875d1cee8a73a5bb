package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

func (h *Handler) registerAuthMethods() {
	h.handle("/v1/acl/auth-methods", methods{{http.MethodGet, h.authMethodList}})
	h.handle("/v1/acl/auth-method", methods{{http.MethodPut, h.authMethodWrite}})
	h.handle("/v1/acl/auth-method/", methods{
		{http.MethodGet, missingAuthMethodName},
		{http.MethodPut, h.authMethodWrite},
		{http.MethodDelete, missingAuthMethodName},
	})
	h.handle("/v1/acl/auth-method/{name:.+}", methods{
		{http.MethodGet, h.authMethodRead},
		{http.MethodPut, h.authMethodWrite},
		{http.MethodDelete, h.authMethodDelete},
	})
}

// authMethodNameRE is upstream's auth method name rule.
var authMethodNameRE = regexp.MustCompile(`^[A-Za-z0-9\-_]{1,128}$`)

// MaxTokenTTL bounds (upstream's defaults for the token expiration TTL):
// 0 (no expiry) or between the two. The minimum is lowered by tests only.
const authMethodMaxTTL = 24 * time.Hour

var authMethodMinTTL atomic.Int64

func init() { authMethodMinTTL.Store(int64(time.Minute)) }

// authMethodTTL is MaxTokenTTL as clients send it: a Go duration string or
// a number of nanoseconds.
type authMethodTTL time.Duration

func (d *authMethodTTL) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*d = 0
	case string:
		if v == "" {
			*d = 0
			return nil
		}
		parsed, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*d = authMethodTTL(parsed)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			*d = authMethodTTL(n)
			return nil
		}
		f, err := v.Float64()
		if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
			return errors.New("MaxTokenTTL is out of range")
		}
		*d = authMethodTTL(f)
	default:
		return errors.New("MaxTokenTTL must be a duration string or a number of nanoseconds")
	}
	return nil
}

// authMethodRequest is the body of create and update. CreateIndex and
// ModifyIndex are known so that clients that send the whole object back
// (the official one does) are accepted; their values are ignored.
type authMethodRequest struct {
	Name          string
	Type          string
	DisplayName   string
	Description   string
	MaxTokenTTL   authMethodTTL
	TokenLocality string
	Config        map[string]any
	Namespace     string
	CreateIndex   uint64
	ModifyIndex   uint64
}

// authMethodOut is a method as create, read and update show it: MaxTokenTTL
// as a duration string ("1h0m0s"), left out when 0, like upstream.
type authMethodOut struct {
	Name          string
	Type          string
	DisplayName   string `json:",omitempty"`
	Description   string `json:",omitempty"`
	MaxTokenTTL   string `json:",omitempty"`
	TokenLocality string `json:",omitempty"`
	Config        map[string]any
	Namespace     string
	CreateIndex   uint64
	ModifyIndex   uint64
}

// authMethodStub is a list entry (upstream's ACLAuthMethodListStub): no Config.
type authMethodStub struct {
	Name          string
	Type          string
	DisplayName   string `json:",omitempty"`
	Description   string `json:",omitempty"`
	MaxTokenTTL   string `json:",omitempty"`
	TokenLocality string `json:",omitempty"`
	Namespace     string
	CreateIndex   uint64
	ModifyIndex   uint64
}

func ttlString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func authMethodOutOf(m *state.ACLAuthMethod) *authMethodOut {
	return &authMethodOut{
		Name: m.Name, Type: m.Type, DisplayName: m.DisplayName, Description: m.Description,
		MaxTokenTTL: ttlString(m.MaxTokenTTL), TokenLocality: m.TokenLocality, Config: m.Config,
		Namespace: m.Namespace, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex,
	}
}

func missingAuthMethodName(http.ResponseWriter, *http.Request) (any, error) {
	return nil, badRequest("Missing auth method name")
}

func (h *Handler) authMethodRead(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	var method *state.ACLAuthMethod
	return h.aclRead(w, r, oneNamespace, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, bool, error) {
		idx, found, err := s.ACLAuthMethod(ws, name)
		method = found
		return idx, found != nil && found.Namespace == ns, err
	}, func() any { return authMethodOutOf(method) }, "Requested auth method does not exist: ACL not found")
}

func (h *Handler) authMethodList(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []authMethodStub
	return h.aclRead(w, r, anyNamespace, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, bool, error) {
		idx, all, err := s.ACLAuthMethods(ws)
		out = []authMethodStub{}
		for _, m := range all {
			if ns != state.AllNamespaces && m.Namespace != ns {
				continue
			}
			out = append(out, authMethodStub{
				Name: m.Name, Type: m.Type, DisplayName: m.DisplayName, Description: m.Description,
				MaxTokenTTL: ttlString(m.MaxTokenTTL), TokenLocality: m.TokenLocality,
				Namespace: m.Namespace, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex,
			})
		}
		return idx, true, err
	}, func() any { return out }, "")
}

// authMethodWrite creates a method (no name in the path) or replaces one,
// with upstream's checks in upstream's order.
func (h *Handler) authMethodWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	pathName, update := mux.Vars(r)["name"]
	id, err := h.require(r, permACLWrite)
	if err != nil {
		return nil, err
	}
	var req authMethodRequest
	if err := decodeBody(r, "AuthMethod", &req); err != nil {
		return nil, err
	}
	if update {
		if req.Name == "" {
			req.Name = pathName
		} else if req.Name != pathName {
			return nil, badRequest("AuthMethod Name in URL and payload do not match")
		}
	}
	ns, err := resolveNamespace(r, req.Namespace, id, false)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, badRequest("Invalid Auth Method: no Name is set")
	}
	if !authMethodNameRE.MatchString(req.Name) {
		return nil, badRequest("Invalid Auth Method: invalid Name. Only alphanumeric characters, '-' and '_' are allowed")
	}
	if update {
		_, existing, err := h.backend.State().ACLAuthMethod(memdb.NewWatchSet(), req.Name)
		if err != nil {
			return nil, err
		}
		if existing == nil || existing.Namespace != ns {
			return nil, notFound(fmt.Sprintf("cannot find auth method %q", req.Name))
		}
		if req.Type == "" {
			req.Type = existing.Type
		} else if req.Type != existing.Type {
			return nil, badRequest("the Type field of an Auth Method is immutable")
		}
	}
	if !authmethod.IsRegisteredType(req.Type) {
		return nil, badRequest("Invalid Auth Method: Type should be one of: %v", authmethod.Types())
	}
	ttl := time.Duration(req.MaxTokenTTL)
	if minTTL := time.Duration(authMethodMinTTL.Load()); ttl != 0 {
		if ttl > authMethodMaxTTL {
			return nil, badRequest("MaxTokenTTL %s cannot be more than %s", ttl, authMethodMaxTTL)
		} else if ttl < minTTL {
			return nil, badRequest("MaxTokenTTL %s cannot be less than %s", ttl, minTTL)
		}
	}
	switch req.TokenLocality {
	case "", "local", "global":
	default:
		return nil, badRequest("Invalid Auth Method: TokenLocality should be one of 'local' or 'global'")
	}
	if _, err := authmethod.ParseConfig(req.Config); err != nil {
		return nil, badRequest("Invalid Auth Method: %v", err)
	}
	set := fsm.ACLAuthMethodSetRequest{
		Method: state.ACLAuthMethod{
			Name:          req.Name,
			Type:          req.Type,
			DisplayName:   req.DisplayName,
			Description:   req.Description,
			MaxTokenTTL:   ttl,
			TokenLocality: req.TokenLocality,
			Config:        req.Config,
			Namespace:     ns,
		},
		Create: !update,
	}
	out, err := h.backend.Apply(fsm.ACLAuthMethodSetType, &set)
	if err != nil {
		return nil, err
	}
	stored, ok := out.(*state.ACLAuthMethod)
	if !ok {
		return nil, errors.New("unexpected result of the auth method write")
	}
	return authMethodOutOf(stored), nil
}

func (h *Handler) authMethodDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	id, err := h.require(r, permACLWrite)
	if err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, "", id, false)
	if err != nil {
		return nil, err
	}
	errMissing := notFound("Cannot find auth method to delete")
	_, method, err := h.backend.State().ACLAuthMethod(memdb.NewWatchSet(), name)
	if err != nil {
		return nil, err
	}
	if method == nil || method.Namespace != ns {
		return nil, errMissing
	}
	_, err = h.backend.Apply(fsm.ACLAuthMethodDeleteType, &fsm.ACLAuthMethodDeleteRequest{Name: method.Name})
	var se *state.Error
	if errors.As(err, &se) && se.Code == state.ErrNotFound {
		return nil, errMissing
	}
	if err != nil {
		return nil, err
	}
	return true, nil
}

// checkBindingRuleMethod checks a binding rule's Selector fields and
// BindName variables against its auth method's identity when that method
// exists (design §3); a rule may name a method that does not exist yet. An
// update that omits AuthMethod is checked against the stored rule's method.
func (h *Handler) checkBindingRuleMethod(methodName, ruleID, ns, selector, bindType, bindName string) error {
	s := h.backend.State()
	ws := memdb.NewWatchSet()
	if methodName == "" && ruleID != "" {
		_, rule, err := s.BindingRule(ws, ruleID, ns)
		if err != nil {
			return err
		}
		if rule == nil {
			return nil // the write itself reports the missing rule
		}
		methodName = rule.AuthMethod
	}
	_, method, err := s.ACLAuthMethod(ws, methodName)
	if err != nil || method == nil {
		return err
	}
	cfg, err := authmethod.ParseConfig(method.Config)
	if err != nil {
		return fmt.Errorf("auth method validator for %q could not be initialized: %v", method.Name, err)
	}
	if err := cfg.ValidateBindingRule(selector, bindType, bindName); err != nil {
		return badRequest("%s", err.Error())
	}
	return nil
}
