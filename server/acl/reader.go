package acl

import (
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// Reader reads ACL objects for a caller that may read them: Service.Reader
// decides once, before a blocking query starts waiting, so a refused caller
// neither waits nor learns an index.
type Reader struct {
	s      *Service
	caller Caller
}

// Reader refuses unless caller holds acl:read, and answers the reads it may make.
func (s *Service) Reader(caller Caller) (*Reader, error) {
	if err := caller.RequireACLRead(); err != nil {
		return nil, err
	}
	return &Reader{s: s, caller: caller}, nil
}

// On binds the reader to the store one run of a blocking query reads
// (the store changes on snapshot restore).
func (r *Reader) On(st *state.Store) StoreReader { return StoreReader{r: r, st: st} }

// StoreReader is a Reader over one state store.
type StoreReader struct {
	r  *Reader
	st *state.Store
}

// BindingRule is the rule with that ID in namespace ns, or nil.
func (sr StoreReader) BindingRule(ws memdb.WatchSet, id, ns string) (uint64, *state.BindingRule, error) {
	return sr.st.BindingRule(ws, id, ns)
}

// BindingRules lists the rules of namespace ns ("*" for all), of authMethod when not "".
func (sr StoreReader) BindingRules(ws memdb.WatchSet, ns, authMethod string) (uint64, []*state.BindingRule, error) {
	return sr.st.BindingRules(ws, ns, authMethod)
}

// AuthMethod is the auth method of that name, or nil.
func (sr StoreReader) AuthMethod(ws memdb.WatchSet, name string) (uint64, *state.ACLAuthMethod, error) {
	return sr.st.ACLAuthMethod(ws, name)
}

// AuthMethods lists every auth method.
func (sr StoreReader) AuthMethods(ws memdb.WatchSet) (uint64, []*state.ACLAuthMethod, error) {
	return sr.st.ACLAuthMethods(ws)
}

// Policy is the policy with that ID, or nil.
func (sr StoreReader) Policy(ws memdb.WatchSet, id string) (uint64, *state.ACLPolicy, error) {
	return sr.st.ACLPolicy(ws, id)
}

// PolicyByName is the policy of that name, or nil.
func (sr StoreReader) PolicyByName(ws memdb.WatchSet, name string) (uint64, *state.ACLPolicy, error) {
	return sr.st.ACLPolicyByName(ws, name)
}

// Policies lists every policy.
func (sr StoreReader) Policies(ws memdb.WatchSet) (uint64, []*state.ACLPolicy, error) {
	return sr.st.ACLPolicies(ws)
}

// Role is the role with that ID as shown (RoleView), or nil.
func (sr StoreReader) Role(ws memdb.WatchSet, id string) (uint64, *state.ACLRole, error) {
	return sr.roleView(ws)(sr.st.ACLRole(ws, id))
}

// RoleByName is the role of that name as shown, or nil.
func (sr StoreReader) RoleByName(ws memdb.WatchSet, name string) (uint64, *state.ACLRole, error) {
	return sr.roleView(ws)(sr.st.ACLRoleByName(ws, name))
}

func (sr StoreReader) roleView(ws memdb.WatchSet) func(uint64, *state.ACLRole, error) (uint64, *state.ACLRole, error) {
	return func(idx uint64, role *state.ACLRole, err error) (uint64, *state.ACLRole, error) {
		if err != nil || role == nil {
			return idx, nil, err
		}
		role, err = RoleView(ws, sr.st, role)
		return idx, role, err
	}
}

// Roles lists the roles (those linking policy, when not ""), as shown.
func (sr StoreReader) Roles(ws memdb.WatchSet, policy string) (uint64, []*state.ACLRole, error) {
	return ListRoles(ws, sr.st, policy)
}

// showSecrets: only a caller that may change tokens sees their secrets.
func (sr StoreReader) showSecrets() bool { return sr.r.caller.authz().ACLWrite() }

// Tokens lists the live tokens f accepts (ListTokens), secrets shown to
// acl:write only.
func (sr StoreReader) Tokens(ws memdb.WatchSet, f TokenFilter) (uint64, []*state.ACLToken, error) {
	return sr.r.s.ListTokens(ws, sr.st, f, sr.showSecrets())
}

// Token is the live token with that AccessorID (ReadToken), or nil; its
// secret shown to acl:write only.
func (sr StoreReader) Token(ws memdb.WatchSet, accessor string) (uint64, *state.ACLToken, error) {
	return sr.r.s.ReadToken(ws, sr.st, accessor, sr.showSecrets())
}
