// Package namespaces is the domain side of Nomad's namespace API: the
// namespaces jobs, evaluations, allocations and deployments live in.
// Binding rules and ACL objects keep their own Consul-style namespaces.
package namespaces

import (
	"fmt"
	"regexp"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
)

// Nomad's name rule, within the 64 characters every ctlplane namespace
// name is limited to (so that a namespace can be named in any request).
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9-]{1,64}$`)

// Limits (Nomad's description limit; the meta caps are ctlplane's).
const (
	maxDescription = 256
	maxMetaKeys    = 64
	maxMetaValue   = 1024
)

// Service writes namespaces.
type Service struct {
	deps svc.Deps
}

// New returns the namespaces service.
func New(deps svc.Deps) *Service { return &Service{deps: deps} }

func invalid(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks a namespace as Nomad's Namespace.Validate does.
func Validate(ns *state.Namespace) error {
	if !nameRE.MatchString(ns.Name) {
		return invalid("invalid name %q. Must match regex %s", ns.Name, nameRE)
	}
	if len(ns.Description) > maxDescription {
		return invalid("description longer than %d", maxDescription)
	}
	if len(ns.Meta) > maxMetaKeys {
		return invalid("namespace meta has %d keys: at most %d are allowed", len(ns.Meta), maxMetaKeys)
	}
	for k, v := range ns.Meta {
		if k == "" || len(k) > maxMetaValue || len(v) > maxMetaValue {
			return invalid("namespace meta key %q: keys must be 1 to %d characters and values at most %d", k, maxMetaValue, maxMetaValue)
		}
	}
	return nil
}

// Upsert creates or replaces a namespace and answers the Raft index.
func (s *Service) Upsert(caller acl.Caller, ns *state.Namespace) (uint64, error) {
	if err := caller.RequireOperatorWrite(); err != nil {
		return 0, err
	}
	if err := Validate(ns); err != nil {
		return 0, err
	}
	c := *ns
	c.CreateIndex, c.ModifyIndex = 0, 0
	res, err := fsm.Apply(s.deps.Raft, fsm.NamespaceUpsert, &fsm.NamespaceUpsertRequest{Namespaces: []*state.Namespace{&c}})
	return res.Index, err
}

// Delete deletes a namespace that holds no live job and answers the Raft index.
func (s *Service) Delete(caller acl.Caller, name string) (uint64, error) {
	if err := caller.RequireOperatorWrite(); err != nil {
		return 0, err
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.NamespaceDelete, &fsm.NamespaceDeleteRequest{Names: []string{name}})
	return res.Index, err
}
