package http

import (
	"net/http"
	"strings"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
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

// roleView resolves the role's policy names and drops links to deleted policies.
func roleView(s *state.Store, role *state.ACLRole) *state.ACLRole {
	out := *role
	out.Policies = nil
	for _, l := range role.Policies {
		if _, p, err := s.ACLPolicy(memdb.NewWatchSet(), l.ID); err == nil && p != nil {
			out.Policies = append(out.Policies, state.ACLLink{ID: p.ID, Name: p.Name})
		}
	}
	return &out
}

func (h *Handler) roleList(w http.ResponseWriter, r *http.Request) (any, error) {
	policy := r.URL.Query().Get("policy")
	var out []*state.ACLRole
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, s *state.Store, _ string) (uint64, bool, error) {
		idx, roles, err := s.ACLRoles(ws, func(role *state.ACLRole) bool { return policy == "" || hasLink(role.Policies, policy) })
		out = make([]*state.ACLRole, len(roles))
		for i, role := range roles {
			out[i] = roleView(s, role)
		}
		return idx, true, err
	}, func() any { return out }, "")
}

func (h *Handler) roleRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := pathID(r, "role")
	if err != nil {
		return nil, err
	}
	return h.roleReadBy(w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, *state.ACLRole, error) {
		return s.ACLRole(ws, id)
	})
}

func (h *Handler) roleReadByName(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	return h.roleReadBy(w, r, func(ws memdb.WatchSet, s *state.Store) (uint64, *state.ACLRole, error) {
		return s.ACLRoleByName(ws, name)
	})
}

func (h *Handler) roleReadBy(w http.ResponseWriter, r *http.Request, get func(memdb.WatchSet, *state.Store) (uint64, *state.ACLRole, error)) (any, error) {
	var out *state.ACLRole
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, s *state.Store, _ string) (uint64, bool, error) {
		idx, role, err := get(ws, s)
		if role != nil {
			out = roleView(s, role)
		}
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
	if _, err := h.require(r, permACLWrite); err != nil {
		return nil, err
	}
	var req roleRequest
	if err := decodeBody(r, "Role", &req); err != nil {
		return nil, err
	}
	if req.ID != "" && !strings.EqualFold(req.ID, pathVal) {
		return nil, badRequest("Role ID in URL and payload do not match")
	}
	if req.Name == "" {
		return nil, badRequest("Invalid Role: no Name is set")
	}
	if !aclNameRE.MatchString(req.Name) {
		return nil, badRequest("Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed")
	}
	s := h.backend.State()
	role := state.ACLRole{Name: req.Name, Description: req.Description, ServiceIdentities: req.ServiceIdentities, NodeIdentities: req.NodeIdentities}
	var err error
	if role.Policies, err = resolveLinks(req.Policies, "policy", findPolicy(s)); err != nil {
		return nil, err
	}
	if err := validateIdentities(role.ServiceIdentities, role.NodeIdentities, "role"); err != nil {
		return nil, err
	}
	if update {
		_, existing, err := s.ACLRole(memdb.NewWatchSet(), pathVal)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, notFound("Cannot find role " + pathVal)
		}
		role.ID = existing.ID
	} else {
		role.ID = uuid.NewString()
	}
	fields := []string{role.Name, role.Description}
	for _, l := range role.Policies {
		fields = append(fields, "p:"+l.ID)
	}
	role.Hash = state.HashOf(fields...)
	resp, err := h.backend.Apply(fsm.ACLRoleSetType, &fsm.ACLRoleSetRequest{Role: role})
	if err != nil {
		return nil, err
	}
	return roleView(h.backend.State(), resp.(*state.ACLRole)), nil
}

func (h *Handler) roleDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := pathID(r, "role")
	if err != nil {
		return nil, err
	}
	if _, err := h.require(r, permACLWrite); err != nil {
		return nil, err
	}
	if _, err := h.backend.Apply(fsm.ACLRoleDeleteType, &fsm.ACLRoleDeleteRequest{ID: id}); err != nil {
		if isNotFound(err) {
			return nil, notFound("Cannot find role to delete")
		}
		return nil, err
	}
	return true, nil
}
