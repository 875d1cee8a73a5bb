package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

func (h *Handler) registerTokens() {
	h.handle("/v1/acl/bootstrap", methods{{http.MethodPut, h.aclBootstrap}})
	h.handle("/v1/acl/tokens", methods{{http.MethodGet, h.tokenList}})
	h.handle("/v1/acl/token", methods{{http.MethodPut, h.tokenWrite}})
	h.handle("/v1/acl/token/self", methods{{http.MethodGet, h.tokenSelf}})
	h.handle("/v1/acl/token/{id:.+}", methods{
		{http.MethodGet, h.tokenRead},
		{http.MethodPut, h.tokenWrite},
		{http.MethodDelete, h.tokenDelete},
	})
}

// duration accepts a Go duration string ("1h") or a number of nanoseconds.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q", s)
		}
		*d = duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a duration is a string such as \"1h\" or a number of nanoseconds")
	}
	*d = duration(n)
	return nil
}

// tokenRequest is the body of token create and update. The output fields
// clients send back (the official client sends the whole object) are known
// and ignored.
type tokenRequest struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []state.ACLLink
	Roles             []state.ACLLink
	ServiceIdentities []*state.ACLServiceIdentity
	NodeIdentities    []*state.ACLNodeIdentity
	Local             bool
	AuthMethod        string
	ExpirationTime    *time.Time
	ExpirationTTL     duration
	Namespace         string
	CreateTime        time.Time
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
	Name              string
	Partition         string
}

func (h *Handler) tokenList(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	filter := acl.TokenFilter{Policy: q.Get("policy"), Role: q.Get("role"), AuthMethod: q.Get("authmethod")}
	var out []*state.ACLToken
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, tokens, err := rd.Tokens(ws, filter)
		out = tokens
		return idx, true, err
	}, func() any { return out }, "")
}

func (h *Handler) tokenRead(w http.ResponseWriter, r *http.Request) (any, error) {
	accessor, err := pathID(r, "token")
	if err != nil {
		return nil, err
	}
	var out *state.ACLToken
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, t, err := rd.Token(ws, accessor)
		out = t
		return idx, t != nil, err
	}, func() any { return out }, "Requested token does not exist: ACL not found")
}

// errTokenSelfNotFound is upstream's answer to token/self with a secret
// that names no live token.
var errTokenSelfNotFound = &apiError{code: http.StatusForbidden, msg: "token does not exist: ACL not found"}

// errBlockingSelfAnonymous refuses a blocking token/self without a token.
var errBlockingSelfAnonymous = &apiError{code: http.StatusForbidden, msg: "Permission denied: a blocking token/self query needs a token; the anonymous token cannot block"}

// tokenSelf shows the caller its own token; it needs no permission. It is a
// read like the others (query options, blocking, the read headers), as
// upstream's is: the official client takes its QueryMeta from the headers.
func (h *Handler) tokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.ACLEnabled() {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "ACL support disabled"}
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.identify(r)
	if err == errACLNotFound {
		return nil, errTokenSelfNotFound
	}
	if err != nil {
		return nil, err
	}
	// token/self needs no permission, so without this anyone could hold a
	// connection and a goroutine for up to the maximum wait.
	if opts.minIndex > 0 && id.token.AccessorID == state.AnonymousTokenID {
		return nil, errBlockingSelfAnonymous
	}
	var out *state.ACLToken
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, t, err := h.services.ACL.ReadToken(ws, s, id.token.AccessorID, true)
		out = t
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if out == nil {
		return nil, errTokenSelfNotFound // deleted or expired while the query waited
	}
	return out, nil
}

func (h *Handler) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.ACLEnabled() {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "ACL support disabled"}
	}
	return h.services.ACL.Bootstrap()
}

// tokenWrite creates a token (no ID in the path) or replaces one.
func (h *Handler) tokenWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	pathVal, update := mux.Vars(r)["id"]
	if update {
		if _, err := pathID(r, "token"); err != nil {
			return nil, err
		}
	}
	caller, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var req tokenRequest
	if err := decodeBody(r, "Token", &req); err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, req.Namespace, caller, false)
	if err != nil {
		return nil, err
	}
	in := acl.TokenRequest{
		AccessorID: req.AccessorID, SecretID: req.SecretID, Description: req.Description,
		Policies: req.Policies, Roles: req.Roles,
		ServiceIdentities: req.ServiceIdentities, NodeIdentities: req.NodeIdentities,
		Local: req.Local, AuthMethod: req.AuthMethod,
		ExpirationTime: req.ExpirationTime, ExpirationTTL: time.Duration(req.ExpirationTTL),
		Namespace: ns,
	}
	if !update {
		return h.services.ACL.CreateToken(caller.caller(), in)
	}
	if req.Namespace == "" {
		in.Namespace = "" // an update keeps the token's namespace unless the body names one
	}
	return h.services.ACL.UpdateToken(caller.caller(), pathVal, in)
}

func (h *Handler) tokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	accessor, err := pathID(r, "token")
	if err != nil {
		return nil, err
	}
	caller, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if err := h.services.ACL.DeleteToken(caller.caller(), accessor); err != nil {
		return nil, err
	}
	return true, nil
}
