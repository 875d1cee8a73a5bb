// Package nodepools is the domain side of Nomad 1.6's node pool API:
// validation, permissions and the Raft writes of pools.
package nodepools

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

// NameRE is Nomad's node pool name rule.
var NameRE = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)

// Limits: Nomad's description limit; the meta caps are ctlplane's (as for
// namespaces).
const (
	maxDescription = 256
	maxMetaKeys    = 64
	maxMetaValue   = 1024
)

// Region is the region named in Nomad's texts (ctlplane is one region).
const Region = "global"

// Service writes node pools.
type Service struct {
	deps svc.Deps
}

// New returns the node pools service.
func New(deps svc.Deps) *Service { return &Service{deps: deps} }

func invalid(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks a pool as Nomad's NodePool.Validate does; the message is
// Nomad's `invalid node pool "<name>": ` and its reasons as go-multierror
// lists them (the meta caps, ctlplane's, after Nomad's own).
func Validate(p *state.NodePool) error {
	var reasons []string
	if !NameRE.MatchString(p.Name) {
		reasons = append(reasons, fmt.Sprintf("invalid name %q, must match regex %s", p.Name, NameRE))
	}
	if len(p.Description) > maxDescription {
		reasons = append(reasons, fmt.Sprintf("description longer than %d", maxDescription))
	}
	if p.SchedulerConfiguration != nil && !validAlgorithm(p.SchedulerConfiguration.SchedulerAlgorithm) {
		reasons = append(reasons, fmt.Sprintf("invalid scheduler algorithm %q: must be binpack or spread", p.SchedulerConfiguration.SchedulerAlgorithm))
	}
	if len(p.Meta) > maxMetaKeys {
		reasons = append(reasons, fmt.Sprintf("meta has %d keys: at most %d are allowed", len(p.Meta), maxMetaKeys))
	} else {
		for _, k := range slices.Sorted(maps.Keys(p.Meta)) {
			if v := p.Meta[k]; k == "" || len(k) > maxMetaValue || len(v) > maxMetaValue {
				reasons = append(reasons, fmt.Sprintf("meta key %.40q: keys must be 1 to %d characters and values at most %d", k, maxMetaValue, maxMetaValue))
				break
			}
		}
	}
	if len(reasons) > 0 {
		return invalid("invalid node pool %q: %s", p.Name, state.MultiErrorText(reasons))
	}
	if state.IsBuiltInNodePool(p.Name) {
		return invalid("modifying node pool %q is not allowed", p.Name)
	}
	return nil
}

func validAlgorithm(a string) bool { return a == "" || a == "binpack" || a == "spread" }

// Upsert creates or replaces a pool and answers the Raft index.
func (s *Service) Upsert(caller acl.Caller, p *state.NodePool) (uint64, error) {
	if err := caller.RequireOperatorWrite(); err != nil {
		return 0, err
	}
	if err := Validate(p); err != nil {
		return 0, err
	}
	c := *p
	c.CreateIndex, c.ModifyIndex = 0, 0
	if c.Meta == nil {
		c.Meta = map[string]string{}
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.NodePoolUpsert, &fsm.NodePoolUpsertRequest{NodePools: []*state.NodePool{&c}})
	return res.Index, err
}

// Delete deletes a pool no node and no live job uses, and answers the
// Raft index.
func (s *Service) Delete(caller acl.Caller, name string) (uint64, error) {
	if err := caller.RequireOperatorWrite(); err != nil {
		return 0, err
	}
	if name == "" {
		return 0, invalid("node pool name is empty")
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.NodePoolDelete, &fsm.NodePoolDeleteRequest{Names: []string{name}, Region: Region})
	return res.Index, err
}
