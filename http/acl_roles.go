package http

import (
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

func (h *Handler) registerRoles() {
	h.handle("/v1/acl/roles", methods{{http.MethodGet, h.roleList}})
	h.handle("/v1/acl/role", methods{{http.MethodPut, h.roleWrite}})
	h.handle("/v1/acl/role/name/{name:.+}", methods{{http.MethodGet, h.roleReadByName}})
	h.handle("/v1/acl/role/{id:.+}", methods{
		{http.MethodGet, h.roleRead},
		{http.MethodPut, h.roleWrite},
		{http.MethodDelete, h.roleDelete},
	})
}

// roleRequest is the body of role create and update.
type roleRequest struct {
	ID                string
	Name              string
	Description       string
	Policies          []state.ACLLink
	ServiceIdentities []*state.ACLServiceIdentity
	NodeIdentities    []*state.ACLNodeIdentity
	Namespace         string
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
}

func (h *Handler) roleList(w http.ResponseWriter, r *http.Request) (any, error) {
	policy := r.URL.Query().Get("policy")
	var out []*state.ACLRole
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, roles, err := rd.Roles(ws, policy)
		out = roles
		return idx, true, err
	}, func() any { return out }, "")
}

func (h *Handler) roleRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := pathID(r, "role")
	if err != nil {
		return nil, err
	}
	return h.roleReadBy(w, r, func(ws memdb.WatchSet, rd acl.StoreReader) (uint64, *state.ACLRole, error) {
		return rd.Role(ws, id)
	})
}

func (h *Handler) roleReadByName(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	return h.roleReadBy(w, r, func(ws memdb.WatchSet, rd acl.StoreReader) (uint64, *state.ACLRole, error) {
		return rd.RoleByName(ws, name)
	})
}

func (h *Handler) roleReadBy(w http.ResponseWriter, r *http.Request, get func(memdb.WatchSet, acl.StoreReader) (uint64, *state.ACLRole, error)) (any, error) {
	var out *state.ACLRole
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, role, err := get(ws, rd)
		out = role
		return idx, role != nil, err
	}, func() any { return out }, "Requested role does not exist: ACL not found")
}

func (h *Handler) roleWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	pathVal, update := mux.Vars(r)["id"]
	if update {
		if _, err := pathID(r, "role"); err != nil {
			return nil, err
		}
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var req roleRequest
	if err := decodeBody(r, "Role", &req); err != nil {
		return nil, err
	}
	return h.services.ACL.WriteRole(id.caller(), pathVal, acl.RoleRequest{
		ID: req.ID, Name: req.Name, Description: req.Description, Policies: req.Policies,
		ServiceIdentities: req.ServiceIdentities, NodeIdentities: req.NodeIdentities,
	})
}

func (h *Handler) roleDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := pathID(r, "role")
	if err != nil {
		return nil, err
	}
	caller, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if err := h.services.ACL.DeleteRole(caller.caller(), id); err != nil {
		return nil, err
	}
	return true, nil
}
