package http

import (
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

func (h *Handler) registerPolicies() {
	h.handle("/v1/acl/policies", methods{{http.MethodGet, h.policyList}})
	h.handle("/v1/acl/policy", methods{{http.MethodPut, h.policyWrite}})
	h.handle("/v1/acl/policy/name/{name:.+}", methods{{http.MethodGet, h.policyReadByName}})
	h.handle("/v1/acl/policy/{id:.+}", methods{
		{http.MethodGet, h.policyRead},
		{http.MethodPut, h.policyWrite},
		{http.MethodDelete, h.policyDelete},
	})
}

// policyRequest is the body of policy create and update; the output fields
// clients send back are known and ignored.
type policyRequest struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string
	Hash        []byte
	Namespace   string
	CreateIndex uint64
	ModifyIndex uint64
}

// policyListEntry is a policy as the list shows it: without its rules
// (upstream's ACLPolicyListStub, Datacenters always present).
type policyListEntry struct {
	ID          string
	Name        string
	Description string
	Datacenters []string
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

func (h *Handler) policyList(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []policyListEntry
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, policies, err := rd.Policies(ws)
		out = make([]policyListEntry, len(policies))
		for i, p := range policies {
			out[i] = policyListEntry{p.ID, p.Name, p.Description, p.Datacenters, p.Hash, p.CreateIndex, p.ModifyIndex}
		}
		return idx, true, err
	}, func() any { return out }, "")
}

func (h *Handler) policyRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := pathID(r, "policy")
	if err != nil {
		return nil, err
	}
	var out *state.ACLPolicy
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, p, err := rd.Policy(ws, id)
		out = p
		return idx, p != nil, err
	}, func() any { return out }, "Requested policy does not exist: ACL not found")
}

func (h *Handler) policyReadByName(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	var out *state.ACLPolicy
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, _ string) (uint64, bool, error) {
		idx, p, err := rd.PolicyByName(ws, name)
		out = p
		return idx, p != nil, err
	}, func() any { return out }, "Requested policy does not exist: ACL not found")
}

func (h *Handler) policyWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	pathVal, update := mux.Vars(r)["id"]
	if update {
		if _, err := pathID(r, "policy"); err != nil {
			return nil, err
		}
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var req policyRequest
	if err := decodeBody(r, "Policy", &req); err != nil {
		return nil, err
	}
	return h.services.ACL.WritePolicy(id.caller(), pathVal, acl.PolicyRequest{
		ID: req.ID, Name: req.Name, Description: req.Description, Rules: req.Rules, Datacenters: req.Datacenters,
	})
}

func (h *Handler) policyDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := pathID(r, "policy")
	if err != nil {
		return nil, err
	}
	caller, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if err := h.services.ACL.DeletePolicy(caller.caller(), id); err != nil {
		return nil, err
	}
	return true, nil
}
