// Package servicereg is the domain side of Nomad's native service
// discovery API: deleting a registration. Registrations are written by the
// state store from the allocations' and nodes' changes; reads go to the
// state directly.
package servicereg

import (
	"fmt"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
)

// Service deletes service registrations.
type Service struct {
	deps svc.Deps
}

// New returns the service registration service.
func New(deps svc.Deps) *Service { return &Service{deps: deps} }

// Delete removes registration id of service name in namespace ns (Nomad's
// ServiceRegistration.DeleteByID: submit-job in the namespace) and answers
// the Raft index.
func (s *Service) Delete(caller acl.Caller, ns, name, id string) (uint64, error) {
	if err := caller.RequireNamespace(ns, acl.CapSubmitJob); err != nil {
		return 0, err
	}
	if name == "" || id == "" {
		return 0, &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf("missing service name or ID (got %q, %q)", name, id)}
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.ServiceDelete, &fsm.ServiceDeleteRequest{Namespace: ns, ServiceName: name, ID: id})
	return res.Index, err
}
