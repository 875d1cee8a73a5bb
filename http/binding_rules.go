package http

import (
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

func (h *Handler) registerBindingRules() {
	h.handle("/v1/acl/binding-rules", methods{{http.MethodGet, h.bindingRuleList}})
	h.handle("/v1/acl/binding-rule", methods{{http.MethodPut, h.bindingRuleWrite}})
	h.handle("/v1/acl/binding-rule/", methods{
		{http.MethodGet, missingBindingRuleID},
		{http.MethodPut, h.bindingRuleWrite},
		{http.MethodDelete, missingBindingRuleID},
	})
	h.handle("/v1/acl/binding-rule/{id:.+}", methods{
		{http.MethodGet, h.bindingRuleRead},
		{http.MethodPut, h.bindingRuleWrite},
		{http.MethodDelete, h.bindingRuleDelete},
	})
}

// bindingRuleRequest is the body of create and update. CreateIndex and
// ModifyIndex are known so that clients that send the whole object back
// (the official one does) are accepted; their values are ignored.
type bindingRuleRequest struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	Namespace   string
	BindVars    *struct{ Name string }
	CreateIndex uint64
	ModifyIndex uint64
}

// bindingRuleListEntry is a rule as the list shows it: Selector left out when empty.
type bindingRuleListEntry struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string `json:",omitempty"`
	BindType    string
	BindName    string
	Namespace   string
	CreateIndex uint64
	ModifyIndex uint64
}

// pathID returns the {id} path variable, which must be a full UUID.
func pathID(r *http.Request, what string) (string, error) {
	id := mux.Vars(r)["id"]
	if !isUUID(id) {
		return "", badRequest("Invalid %s ID %q: a 36-character UUID is required", what, id)
	}
	return id, nil
}

func missingBindingRuleID(http.ResponseWriter, *http.Request) (any, error) {
	return nil, badRequest("Missing binding rule ID")
}

func (h *Handler) bindingRuleRead(w http.ResponseWriter, r *http.Request) (any, error) {
	ruleID, err := pathID(r, "binding rule")
	if err != nil {
		return nil, err
	}
	var rule *state.BindingRule
	return h.aclRead(w, r, oneNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, ns string) (uint64, bool, error) {
		idx, found, err := rd.BindingRule(ws, ruleID, ns)
		rule = found
		return idx, found != nil, err
	}, func() any { return encodeOnce(rule) }, "Requested binding rule does not exist: ACL not found")
}

func (h *Handler) bindingRuleList(w http.ResponseWriter, r *http.Request) (any, error) {
	authMethod := r.URL.Query().Get("authmethod")
	var out []bindingRuleListEntry
	return h.aclRead(w, r, anyNamespace, func(ws memdb.WatchSet, rd acl.StoreReader, ns string) (uint64, bool, error) {
		idx, rules, err := rd.BindingRules(ws, ns, authMethod)
		out = make([]bindingRuleListEntry, len(rules))
		for i, rule := range rules {
			out[i] = bindingRuleListEntry(*rule)
		}
		return idx, true, err
	}, func() any { return out }, "")
}

// bindingRuleWrite creates a rule (no ID in the path) or replaces one.
func (h *Handler) bindingRuleWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	pathVal, update := mux.Vars(r)["id"]
	if update {
		if _, err := pathID(r, "binding rule"); err != nil {
			return nil, err
		}
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var req bindingRuleRequest
	if err := decodeBindingRule(r, &req); err != nil {
		return nil, err
	}
	if req.ID != "" && req.ID != pathVal {
		return nil, badRequest("BindingRule ID in URL and payload do not match")
	}
	ns, err := resolveNamespace(r, req.Namespace, id, false)
	if err != nil {
		return nil, err
	}
	return h.services.ACL.WriteBindingRule(id.caller(), pathVal, acl.BindingRuleRequest{
		Description: req.Description, AuthMethod: req.AuthMethod, Selector: req.Selector,
		BindType: req.BindType, BindName: req.BindName, Namespace: ns, HasBindVars: req.BindVars != nil,
	})
}

func (h *Handler) bindingRuleDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	ruleID, err := pathID(r, "binding rule")
	if err != nil {
		return nil, err
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, "", id, false)
	if err != nil {
		return nil, err
	}
	if err := h.services.ACL.DeleteBindingRule(id.caller(), ruleID, ns); err != nil {
		return nil, err
	}
	return true, nil
}

// isUUID says whether s is a UUID in its 36-character form (any case).
func isUUID(s string) bool { return state.IsUUID(s) }
