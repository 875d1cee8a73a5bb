package acl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// BindingRuleRequest is a binding rule create or update as a client asks
// for it, in namespace Namespace (already resolved).
type BindingRuleRequest struct {
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	Namespace   string
	// HasBindVars: the body set BindVars, which only templated-policy rules may.
	HasBindVars bool
}

// newIDAttempts bounds the search for an unused ID, so that a store that
// keeps failing is an error and not an endless loop.
const newIDAttempts = 8

// WriteBindingRule creates a rule (id "") or replaces the one with that ID
// in req.Namespace.
func (s *Service) WriteBindingRule(caller Caller, id string, req BindingRuleRequest) (*state.BindingRule, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	update := id != ""
	if !update && req.AuthMethod == "" {
		return nil, invalid("Invalid Binding Rule: no AuthMethod is set")
	}
	if err := checkLen("Invalid Binding Rule", "AuthMethod", req.AuthMethod, MaxNameLength); err != nil {
		return nil, err
	}
	if err := checkLen("Invalid Binding Rule", "Description", req.Description, MaxDescriptionLength); err != nil {
		return nil, err
	}
	if err := bindrule.ValidateFields(req.Selector, req.BindType, req.BindName); err != nil {
		return nil, invalid("%s", err.Error())
	}
	if req.HasBindVars {
		return nil, invalid("invalid Binding Rule: BindVars cannot be set when bind type is not templated-policy.")
	}
	if err := s.checkBindingRuleMethod(req.AuthMethod, id, req.Namespace, req.Selector, req.BindType, req.BindName); err != nil {
		return nil, err
	}
	set := fsm.BindingRuleSetRequest{
		Rule: state.BindingRule{
			ID:          id,
			Description: req.Description,
			AuthMethod:  req.AuthMethod,
			Selector:    req.Selector,
			BindType:    req.BindType,
			BindName:    req.BindName,
			Namespace:   req.Namespace,
		},
		Create: !update,
	}
	if !update {
		return s.createBindingRule(set)
	}
	return fsm.Apply(s.deps.Raft, fsm.BindingRuleSet, &set)
}

// createBindingRule applies a create under a new random ID. The FSM refuses
// an ID that a rule has (ErrConflict, only on a UUID collision or a test's
// candidates): then another is tried, up to newIDAttempts. Looking each
// candidate up first cost a look-up in the ID index on every create (5% of
// its CPU in a large table) for a collision that practically never happens.
func (s *Service) createBindingRule(set fsm.BindingRuleSetRequest) (*state.BindingRule, error) {
	for range newIDAttempts {
		set.Rule.ID = s.newID()
		rule, err := fsm.Apply(s.deps.Raft, fsm.BindingRuleSet, &set)
		if !hasCode(err, state.ErrConflict) {
			return rule, err
		}
	}
	return nil, errors.New("could not find an unused binding rule ID: every candidate was taken")
}

// checkBindingRuleMethod checks a binding rule's Selector fields and
// BindName variables against its auth method's identity when that method
// exists (design §3); a rule may name a method that does not exist yet. An
// update that omits AuthMethod is checked against the stored rule's method.
func (s *Service) checkBindingRuleMethod(methodName, ruleID, ns, selector, bindType, bindName string) error {
	st := s.deps.State()
	var ws memdb.WatchSet // nil: nothing watches a write's checks
	if methodName == "" && ruleID != "" {
		_, rule, err := st.BindingRule(ws, ruleID, ns)
		if err != nil {
			return err
		}
		if rule == nil {
			return nil // the write itself reports the missing rule
		}
		methodName = rule.AuthMethod
	}
	_, method, err := st.ACLAuthMethod(ws, methodName)
	if err != nil || method == nil {
		return err
	}
	cfg, err := s.configs.get(st, method)
	if err != nil {
		return fmt.Errorf("auth method validator for %q could not be initialized: %v", method.Name, err)
	}
	if err := cfg.ValidateBindingRule(selector, bindType, bindName); err != nil {
		return invalid("%s", err.Error())
	}
	return nil
}

// DeleteBindingRule deletes the rule with that ID from namespace ns.
func (s *Service) DeleteBindingRule(caller Caller, id, ns string) error {
	if err := caller.RequireACLWrite(); err != nil {
		return err
	}
	_, err := fsm.Apply(s.deps.Raft, fsm.BindingRuleDelete, &fsm.BindingRuleDeleteRequest{ID: id, Namespace: ns})
	if IsNotFound(err) {
		return notFound("Cannot find binding rule to delete")
	}
	return err
}

// Auth method MaxTokenTTL bounds (upstream's defaults): 0 (no expiry) or
// between the two.
const (
	authMethodMinTTL = time.Minute
	authMethodMaxTTL = 24 * time.Hour
)

// AuthMethodRequest is an auth method create or update as a client asks
// for it, in namespace Namespace (already resolved).
type AuthMethodRequest struct {
	Name          string
	Type          string
	DisplayName   string
	Description   string
	MaxTokenTTL   time.Duration
	TokenLocality string
	Config        map[string]any
	Namespace     string
}

// WriteAuthMethod creates a method or (update) replaces the one named
// req.Name, with upstream's checks in upstream's order.
func (s *Service) WriteAuthMethod(caller Caller, update bool, req AuthMethodRequest) (*state.ACLAuthMethod, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, invalid("Invalid Auth Method: no Name is set")
	}
	if err := checkNameAndDescription("Invalid Auth Method", req.Name, req.Description); err != nil {
		return nil, err
	}
	if err := checkLen("Invalid Auth Method", "DisplayName", req.DisplayName, MaxDisplayNameLength); err != nil {
		return nil, err
	}
	if err := checkAuthMethodConfig(req.Config); err != nil {
		return nil, err
	}
	if !aclNameRE.MatchString(req.Name) {
		return nil, invalid("Invalid Auth Method: invalid Name. Only alphanumeric characters, '-' and '_' are allowed")
	}
	if update {
		_, existing, err := s.deps.State().ACLAuthMethod(memdb.NewWatchSet(), req.Name)
		if err != nil {
			return nil, err
		}
		if existing == nil || existing.Namespace != req.Namespace {
			return nil, notFound("cannot find auth method %q", req.Name)
		}
		if req.Type == "" {
			req.Type = existing.Type
		} else if req.Type != existing.Type {
			return nil, invalid("the Type field of an Auth Method is immutable")
		}
	}
	if !authmethod.IsRegisteredType(req.Type) {
		return nil, invalid("Invalid Auth Method: Type should be one of: %v", authmethod.Types())
	}
	if ttl := req.MaxTokenTTL; ttl != 0 {
		if ttl > authMethodMaxTTL {
			return nil, invalid("MaxTokenTTL %s cannot be more than %s", ttl, authMethodMaxTTL)
		} else if ttl < authMethodMinTTL {
			return nil, invalid("MaxTokenTTL %s cannot be less than %s", ttl, authMethodMinTTL)
		}
	}
	switch req.TokenLocality {
	case "", "local", "global":
	default:
		return nil, invalid("Invalid Auth Method: TokenLocality should be one of 'local' or 'global'")
	}
	cfg, err := authmethod.ParseConfig(req.Config)
	if err != nil {
		return nil, invalid("Invalid Auth Method: %v", err)
	}
	if !s.allowHTTPKeyURLs {
		if err := cfg.RequireHTTPS(); err != nil {
			return nil, invalid("Invalid Auth Method: %v", err)
		}
	}
	set := fsm.ACLAuthMethodSetRequest{
		Method: state.ACLAuthMethod{
			Name:          req.Name,
			Type:          req.Type,
			DisplayName:   req.DisplayName,
			Description:   req.Description,
			MaxTokenTTL:   req.MaxTokenTTL,
			TokenLocality: req.TokenLocality,
			Config:        req.Config,
			Namespace:     req.Namespace,
		},
		Create: !update,
	}
	return fsm.Apply(s.deps.Raft, fsm.ACLAuthMethodSet, &set)
}

// DeleteAuthMethod deletes the method named name in namespace ns, with its
// binding rules and the tokens it minted.
func (s *Service) DeleteAuthMethod(caller Caller, name, ns string) error {
	if err := caller.RequireACLWrite(); err != nil {
		return err
	}
	errMissing := notFound("Cannot find auth method to delete")
	_, method, err := s.deps.State().ACLAuthMethod(memdb.NewWatchSet(), name)
	if err != nil {
		return err
	}
	if method == nil || method.Namespace != ns {
		return errMissing
	}
	_, err = fsm.Apply(s.deps.Raft, fsm.ACLAuthMethodDelete, &fsm.ACLAuthMethodDeleteRequest{Name: method.Name})
	if IsNotFound(err) {
		return errMissing
	}
	return err
}

// methodNamespace is the namespace a method's logins happen in.
func methodNamespace(m *state.ACLAuthMethod) string {
	if m.Namespace != "" {
		return m.Namespace
	}
	return state.DefaultNamespace
}

// sameMethod says whether a rule names the method: method names are
// case-insensitive, as upstream and the delete cascade have them.
func sameMethod(rule *state.BindingRule, name string) bool {
	return strings.EqualFold(rule.AuthMethod, name)
}
