// Package namespaces is the domain side of Nomad's namespace API: the
// namespaces jobs, evaluations, allocations and deployments live in.
// Binding rules and ACL objects keep their own Consul-style namespaces.
package namespaces

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
)

// nomadNameRE is Nomad's name rule; ctlplane also keeps names within the
// 64 characters every ctlplane namespace name is limited to (so that a
// namespace can be named in any request).
var nomadNameRE = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

const maxNameLength = 64

// Limits (Nomad's description limit; the meta caps are ctlplane's).
const (
	maxDescription = 256
	maxMetaKeys    = 64
	maxMetaValue   = 1024
)

// Region is the region named in Nomad's texts (ctlplane is one region).
const Region = "global"

// Service writes namespaces.
type Service struct {
	deps svc.Deps
}

// New returns the namespaces service.
func New(deps svc.Deps) *Service { return &Service{deps: deps} }

func invalid(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks a namespace as Nomad's Namespace.Validate does, with
// Nomad's text: `Invalid namespace "<name>": ` and its reasons as
// go-multierror lists them (ctlplane's own caps after Nomad's).
func Validate(ns *state.Namespace) error {
	var reasons []string
	if !nomadNameRE.MatchString(ns.Name) {
		reasons = append(reasons, fmt.Sprintf("invalid name %q. Must match regex %s", ns.Name, nomadNameRE))
	} else if len(ns.Name) > maxNameLength {
		reasons = append(reasons, fmt.Sprintf("name is %d characters long: at most %d are allowed", len(ns.Name), maxNameLength))
	}
	if len(ns.Description) > maxDescription {
		reasons = append(reasons, fmt.Sprintf("description longer than %d", maxDescription))
	}
	if len(ns.Meta) > maxMetaKeys {
		reasons = append(reasons, fmt.Sprintf("namespace meta has %d keys: at most %d are allowed", len(ns.Meta), maxMetaKeys))
	} else {
		for _, k := range slices.Sorted(maps.Keys(ns.Meta)) {
			if v := ns.Meta[k]; k == "" || len(k) > maxMetaValue || len(v) > maxMetaValue {
				reasons = append(reasons, fmt.Sprintf("namespace meta key %.40q: keys must be 1 to %d characters and values at most %d", k, maxMetaValue, maxMetaValue))
				break
			}
		}
	}
	if len(reasons) > 0 {
		return invalid("Invalid namespace %q: %s", ns.Name, state.MultiErrorText(reasons))
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
	res, err := fsm.Apply(s.deps.Raft, fsm.NamespaceDelete, &fsm.NamespaceDeleteRequest{Names: []string{name}, Region: Region})
	return res.Index, err
}
