package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

func (h *Handler) registerAuthMethods() {
	h.registerAuthMethodExplain()
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
	return h.aclRead(w, r, oneNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, ns string) (uint64, bool, error) {
		idx, found, err := rd.AuthMethod(ws, name)
		method = found
		return idx, found != nil && found.Namespace == ns, err
	}, func() any { return authMethodOutOf(method) }, "Requested auth method does not exist: ACL not found")
}

func (h *Handler) authMethodList(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []authMethodStub
	return h.aclRead(w, r, anyNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, ns string) (uint64, bool, error) {
		idx, all, err := rd.AuthMethods(ws)
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
	id, err := h.identify(r)
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
	stored, err := h.services.ACL.WriteAuthMethod(id.caller(), update, acl.AuthMethodRequest{
		Name: req.Name, Type: req.Type, DisplayName: req.DisplayName, Description: req.Description,
		MaxTokenTTL: time.Duration(req.MaxTokenTTL), TokenLocality: req.TokenLocality, Config: req.Config,
		Namespace: ns,
	})
	if err != nil {
		return nil, err
	}
	return authMethodOutOf(stored), nil
}

func (h *Handler) authMethodDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, "", id, false)
	if err != nil {
		return nil, err
	}
	if err := h.services.ACL.DeleteAuthMethod(id.caller(), name, ns); err != nil {
		return nil, err
	}
	return true, nil
}
