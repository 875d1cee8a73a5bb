package http

import (
	"encoding/json"
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// NamespaceService is what Nomad's namespace endpoints call.
type NamespaceService interface {
	Upsert(caller acl.Caller, ns *state.Namespace) (uint64, error)
	Delete(caller acl.Caller, name string) (uint64, error)
}

func (h *Handler) registerNamespaces() {
	h.handle("/v1/namespaces", methods{{http.MethodGet, h.namespaceList}})
	h.handle("/v1/namespace", methods{
		{http.MethodPut, h.namespacesService(h.namespaceUpsert)},
		{http.MethodPost, h.namespacesService(h.namespaceUpsert)},
	})
	h.handle("/v1/namespace/{name}", methods{
		{http.MethodGet, h.namespaceRead},
		{http.MethodPut, h.namespacesService(h.namespaceUpsert)},
		{http.MethodPost, h.namespacesService(h.namespaceUpsert)},
		{http.MethodDelete, h.namespacesService(h.namespaceDelete)},
	})
}

// namespacesService answers 501 while no namespace service is wired in.
func (h *Handler) namespacesService(fn apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		if h.services.Namespaces == nil {
			return nil, &apiError{code: http.StatusNotImplemented, msg: "The namespaces API is not served by this agent"}
		}
		return fn(w, r)
	}
}

// namespaceList is GET /v1/namespaces: the namespaces the token has any
// capability in (Nomad's rule), by name, `prefix` filtering.
func (h *Handler) namespaceList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	caller := id.caller()
	prefix := r.URL.Query().Get("prefix")
	var out []*state.Namespace
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, all, err := s.Namespaces(ws, prefix)
		out = make([]*state.Namespace, 0, len(all))
		for _, ns := range all {
			if namespaces.ReadNamespace(caller, ns.Name) == nil {
				out = append(out, ns)
			}
		}
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	return out, nil
}

// namespaceRead is GET /v1/namespace/:name, for a token with any
// capability in it.
func (h *Handler) namespaceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	name := mux.Vars(r)["name"]
	if err := namespaces.ReadNamespace(id.caller(), name); err != nil {
		return nil, err
	}
	var out *state.Namespace
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, ns, err := s.NamespaceByName(ws, name)
		out = ns
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if out == nil {
		return nil, notFound("Namespace not found")
	}
	return out, nil
}

// namespaceCaller resolves a namespace write's caller (the service
// checks it: management or operator:write).
func (h *Handler) namespaceCaller(r *http.Request) (acl.Caller, error) {
	id, err := h.jobIdentity(r)
	if err != nil {
		return acl.Caller{}, err
	}
	return id.caller(), nil
}

// namespaceBody is Nomad's Namespace as its client sends it; the
// Enterprise blocks are accepted and not kept.
type namespaceBody struct {
	Name                  string
	Description           string
	Quota                 string
	Capabilities          json.RawMessage
	NodePoolConfiguration json.RawMessage
	VaultConfiguration    json.RawMessage
	ConsulConfiguration   json.RawMessage
	RequiredExtraClaims   map[string]string
	OptionalExtraClaims   map[string]string
	Meta                  map[string]string
	Hash                  []byte
	CreateIndex           uint64
	ModifyIndex           uint64
}

// namespaceUpsert is PUT|POST /v1/namespace[/:name].
func (h *Handler) namespaceUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var body namespaceBody
	if err := decodeBody(r, "Namespace", &body); err != nil {
		return nil, err
	}
	if name, ok := mux.Vars(r)["name"]; ok && body.Name != name {
		return nil, badRequest("Namespace name does not match request path")
	}
	caller, err := h.namespaceCaller(r)
	if err != nil {
		return nil, err
	}
	idx, err := h.services.Namespaces.Upsert(caller, &state.Namespace{Name: body.Name, Description: body.Description, Meta: body.Meta})
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, idx)
	return nil, nil
}

// namespaceDelete is DELETE /v1/namespace/:name.
func (h *Handler) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	caller, err := h.namespaceCaller(r)
	if err != nil {
		return nil, err
	}
	idx, err := h.services.Namespaces.Delete(caller, mux.Vars(r)["name"])
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, idx)
	return nil, nil
}
