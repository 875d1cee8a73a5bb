package acl

import (
	"strings"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// PolicyRequest is a policy create or update as a client asks for it.
type PolicyRequest struct {
	// ID is the ID in the body ("" or the one being updated).
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string
}

// WritePolicy creates a policy (id "") or replaces the one with that ID.
func (s *Service) WritePolicy(caller Caller, id string, req PolicyRequest) (*state.ACLPolicy, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	if req.ID != "" && !strings.EqualFold(req.ID, id) {
		return nil, invalid("Policy ID in URL and payload do not match")
	}
	if req.Name == "" {
		return nil, invalid("Invalid Policy: no Name is set")
	}
	if err := checkNameAndDescription("Invalid Policy", req.Name, req.Description); err != nil {
		return nil, err
	}
	if err := checkPolicyRules(req.Rules); err != nil {
		return nil, err
	}
	if !aclNameRE.MatchString(req.Name) {
		return nil, invalid("Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed")
	}
	if _, err := Parse(req.Rules); err != nil {
		return nil, invalid("%s", err.Error())
	}
	policy := state.ACLPolicy{ID: id, Name: req.Name, Description: req.Description, Rules: req.Rules, Datacenters: req.Datacenters}
	if id != "" {
		_, existing, err := s.deps.State().ACLPolicy(memdb.NewWatchSet(), id)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, notFound("Cannot find policy %s", id)
		}
		policy.ID = existing.ID
		if existing.ID == state.GlobalManagementPolicyID {
			if req.Rules != existing.Rules {
				return nil, invalid("Changing the Rules for the builtin global-management policy is not permitted")
			}
			if len(req.Datacenters) != 0 {
				return nil, invalid("Changing the Datacenters of the builtin global-management policy is not permitted")
			}
		}
	} else {
		policy.ID = uuid.NewString()
	}
	policy.Hash = PolicyHash(&policy)
	return fsm.Apply(s.deps.Raft, fsm.ACLPolicySet, &fsm.ACLPolicySetRequest{Policy: policy})
}

// DeletePolicy deletes a policy; the built-in one cannot be deleted.
func (s *Service) DeletePolicy(caller Caller, id string) error {
	if err := caller.RequireACLWrite(); err != nil {
		return err
	}
	if strings.EqualFold(id, state.GlobalManagementPolicyID) {
		return invalid("Delete operation not permitted on the builtin global-management policy")
	}
	_, err := fsm.Apply(s.deps.Raft, fsm.ACLPolicyDelete, &fsm.ACLPolicyDeleteRequest{ID: id})
	if IsNotFound(err) {
		return notFound("Cannot find policy to delete")
	}
	return err
}

// RoleRequest is a role create or update as a client asks for it.
type RoleRequest struct {
	// ID is the ID in the body ("" or the one being updated).
	ID                string
	Name              string
	Description       string
	Policies          []state.ACLLink
	ServiceIdentities []*state.ACLServiceIdentity
	NodeIdentities    []*state.ACLNodeIdentity
}

// RoleView resolves a role's policy names and drops links to deleted
// policies, watching them in ws.
func RoleView(ws memdb.WatchSet, st *state.Store, role *state.ACLRole) (*state.ACLRole, error) {
	out := *role
	var err error
	if out.Policies, err = currentLinks(role.Policies, policyName(ws, st)); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRoles lists the roles (those linking policy, when not ""), as shown.
func ListRoles(ws memdb.WatchSet, st *state.Store, policy string) (uint64, []*state.ACLRole, error) {
	idx, roles, err := st.ACLRoles(ws, func(r *state.ACLRole) bool { return policy == "" || HasLink(r.Policies, policy) })
	if err != nil {
		return 0, nil, err
	}
	out := make([]*state.ACLRole, len(roles))
	for i, r := range roles {
		if out[i], err = RoleView(ws, st, r); err != nil {
			return 0, nil, err
		}
	}
	return idx, out, nil
}

// WriteRole creates a role (id "") or replaces the one with that ID.
func (s *Service) WriteRole(caller Caller, id string, req RoleRequest) (*state.ACLRole, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	if req.ID != "" && !strings.EqualFold(req.ID, id) {
		return nil, invalid("Role ID in URL and payload do not match")
	}
	if req.Name == "" {
		return nil, invalid("Invalid Role: no Name is set")
	}
	if err := checkNameAndDescription("Invalid Role", req.Name, req.Description); err != nil {
		return nil, err
	}
	if !aclNameRE.MatchString(req.Name) {
		return nil, invalid("Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed")
	}
	st := s.deps.State()
	role := state.ACLRole{Name: req.Name, Description: req.Description, ServiceIdentities: req.ServiceIdentities, NodeIdentities: req.NodeIdentities}
	var err error
	if role.Policies, err = resolveLinks(req.Policies, "policy", findPolicy(st)); err != nil {
		return nil, err
	}
	if err := validateIdentities(role.ServiceIdentities, role.NodeIdentities, "role"); err != nil {
		return nil, err
	}
	if id != "" {
		_, existing, err := st.ACLRole(memdb.NewWatchSet(), id)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, notFound("Cannot find role %s", id)
		}
		role.ID = existing.ID
	} else {
		role.ID = uuid.NewString()
	}
	role.Hash = RoleHash(&role)
	stored, err := fsm.Apply(s.deps.Raft, fsm.ACLRoleSet, &fsm.ACLRoleSetRequest{Role: role})
	if err != nil {
		return nil, err
	}
	return RoleView(memdb.NewWatchSet(), s.deps.State(), stored)
}

// DeleteRole deletes a role.
func (s *Service) DeleteRole(caller Caller, id string) error {
	if err := caller.RequireACLWrite(); err != nil {
		return err
	}
	_, err := fsm.Apply(s.deps.Raft, fsm.ACLRoleDelete, &fsm.ACLRoleDeleteRequest{ID: id})
	if IsNotFound(err) {
		return notFound("Cannot find role to delete")
	}
	return err
}
