package acl

import (
	"errors"
	"fmt"

	"github.com/ctlplane/ctlplane/state"
)

// Caller is who asks a domain service to act: the authorizer resolved from
// the caller's token (ManageAll with ACLs off) and the token's accessor,
// recorded where an operation keeps its cause. Services check a Caller
// themselves, so no caller can skip the check by not coming through HTTP.
type Caller struct {
	Authz      *Authorizer
	AccessorID string
}

// Internal is the servers' own routines acting (watchers, the scheduler):
// everything is allowed and nothing is recorded as an operator's act.
func Internal() Caller { return Caller{Authz: ManageAll()} }

// ErrPermissionDenied is every refusal of a Caller: Nomad's and Consul's
// text, 403 over HTTP.
var ErrPermissionDenied = &state.Error{Code: state.ErrForbidden, Msg: "Permission denied"}

// IsPermissionDenied says whether err is a Caller's refusal.
func IsPermissionDenied(err error) bool {
	var d *DeniedError
	return err == ErrPermissionDenied || errors.As(err, &d)
}

// authz is the caller's authorizer; a Caller built without one allows
// nothing (a forgotten field fails closed).
func (c Caller) authz() *Authorizer {
	if c.Authz == nil {
		return DenyAll()
	}
	return c.Authz
}

// RequireNamespace refuses unless capability is granted in namespace ns.
func (c Caller) RequireNamespace(ns, capability string) error {
	if !c.authz().NamespaceCapability(ns, capability) {
		return ErrPermissionDenied
	}
	return nil
}

// RequireAnyInNamespace refuses unless the caller holds some capability
// in namespace ns.
func (c Caller) RequireAnyInNamespace(ns string) error {
	if !c.authz().AllowsNamespace(ns) {
		return ErrPermissionDenied
	}
	return nil
}

// RequireNodeRead refuses unless the caller may read client nodes.
func (c Caller) RequireNodeRead() error {
	if !c.authz().NodeRead() {
		return ErrPermissionDenied
	}
	return nil
}

// RequireNodeWrite refuses unless the caller holds node:write (an
// operator's capability: drain, eligibility; an introduction token).
func (c Caller) RequireNodeWrite() error {
	if !c.authz().NodeWrite() {
		return ErrPermissionDenied
	}
	return nil
}

// DeniedError is a refusal of Consul's ACL API, whose 403 names the
// permission lacked and the token that lacked it (the transport words it).
type DeniedError struct {
	// Perm is the permission lacked, as the deny texts name it: "acl:read",
	// "acl:write".
	Perm string
	// AccessorID is the refused caller's token.
	AccessorID string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission '%s'", e.AccessorID, e.Perm)
}

// Permissions of the ACL API, named as in its deny texts.
const (
	PermACLRead  = "acl:read"
	PermACLWrite = "acl:write"
	// PermManagement is a management token's: snapshot, forced GC.
	PermManagement = "management"
	// PermOperatorRead and PermOperatorWrite are the operator endpoints'
	// (Raft configuration and peers, metrics, the agent's description).
	PermOperatorRead  = "operator:read"
	PermOperatorWrite = "operator:write"
)

func (c Caller) denied(perm string) error { return &DeniedError{Perm: perm, AccessorID: c.AccessorID} }

// RequireACLRead refuses unless the caller may read ACL objects.
func (c Caller) RequireACLRead() error {
	if !c.authz().ACLRead() {
		return c.denied(PermACLRead)
	}
	return nil
}

// RequireACLWrite refuses unless the caller may change ACL objects.
func (c Caller) RequireACLWrite() error {
	if !c.authz().ACLWrite() {
		return c.denied(PermACLWrite)
	}
	return nil
}

// RequireManagement refuses unless the caller is management (a
// DeniedError naming "management", as Consul's deny text does).
func (c Caller) RequireManagement() error {
	if !c.authz().IsManagement() {
		return c.denied(PermManagement)
	}
	return nil
}

// RequireOperatorRead refuses unless the caller holds operator:read (a
// DeniedError naming it, as Consul's operator endpoints word it).
func (c Caller) RequireOperatorRead() error {
	if !c.authz().OperatorRead() {
		return c.denied(PermOperatorRead)
	}
	return nil
}

// RequireRaftWrite refuses unless the caller holds operator:write (a
// DeniedError naming it): changing Raft's peers, Consul's operator write.
// RequireOperatorWrite is the same permission with Nomad's bare refusal.
func (c Caller) RequireRaftWrite() error {
	if !c.authz().OperatorWrite() {
		return c.denied(PermOperatorWrite)
	}
	return nil
}

// RequireOperatorWrite refuses unless the caller holds operator:write or
// is management: the cluster-wide writes of namespaces and node pools
// (Nomad asks management; ctlplane's ACL model has no node_pool rules).
func (c Caller) RequireOperatorWrite() error {
	if a := c.authz(); !a.IsManagement() && !a.OperatorWrite() {
		return ErrPermissionDenied
	}
	return nil
}

// ReadIn decides a read over namespace ns, which may be state.AllNamespaces:
// one namespace where may is false is refused; over every namespace
// nothing is refused and visible (may) says which objects' namespaces the
// caller sees, as Nomad filters such lists rather than refusing them.
func ReadIn(ns string, may func(ns string) bool) (visible func(ns string) bool, err error) {
	if ns != state.AllNamespaces && !may(ns) {
		return nil, ErrPermissionDenied
	}
	return may, nil
}
