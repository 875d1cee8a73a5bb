package authmethod

import (
	"fmt"

	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/ctlplane/ctlplane/state"
)

// Skip reasons of a rule that binds nothing.
const (
	SkipSelector = "selector did not match"
)

// RuleVerdict is what one binding rule did with an identity.
type RuleVerdict struct {
	Rule *state.BindingRule
	// Matched says whether the Selector matched.
	Matched bool
	// RenderedName is the computed BindName (set when the selector matched
	// and the name rendered).
	RenderedName string
	// SkipReason says why the rule binds nothing ("" when it binds).
	SkipReason string
	// NameErr is set when the selector matched but BindName did not render
	// to a valid name: login is refused then.
	NameErr error
}

// Bound says whether the rule contributes to the token.
func (v *RuleVerdict) Bound() bool { return v.Matched && v.SkipReason == "" }

// Bindings is what an identity gets through a method's binding rules.
type Bindings struct {
	// Verdicts has one entry per rule, in the rules' order.
	Verdicts          []RuleVerdict
	ServiceIdentities []*state.ACLServiceIdentity
	NodeIdentities    []*state.ACLNodeIdentity
	Roles             []state.ACLLink
}

// None says whether nothing was bound: login is then refused.
func (b *Bindings) None() bool {
	return len(b.ServiceIdentities) == 0 && len(b.NodeIdentities) == 0 && len(b.Roles) == 0
}

// RoleLookup finds a role by name (nil when there is none).
type RoleLookup func(name string) (*state.ACLRole, error)

// Bind evaluates every rule against the identity, as login does, and
// collects what the matching rules bind. It is the one place that decides:
// login mints what it returns, explain shows it.
//
//   - A rule whose Selector is empty or matches is considered; a selector
//     that fails to evaluate does not match (as upstream).
//   - Its BindName is rendered with the identity's values lowercased and
//     checked against the bind type's name rule. A name that fails binds
//     nothing and sets the verdict's NameErr: login is then refused, as
//     upstream's is, and explain shows the rule as skipped with the reason.
//   - service: a ServiceIdentity; node: a NodeIdentity in datacenter;
//     role: a link to the role of that name, skipped when there is none.
//
// Identities and roles are deduplicated. Only a failing role lookup is an error.
func Bind(id *Identity, rules []*state.BindingRule, datacenter string, roleByName RoleLookup) (*Bindings, error) {
	b := &Bindings{Verdicts: make([]RuleVerdict, 0, len(rules))}
	vars := id.ProjectedVars()
	seenService := map[string]bool{}
	seenNode := map[string]bool{}
	seenRole := map[string]bool{}
	for _, rule := range rules {
		v := RuleVerdict{Rule: rule}
		matched, err := Match(rule.Selector, id)
		switch {
		case err != nil:
			v.SkipReason = fmt.Sprintf("%s: %v", SkipSelector, err)
		case !matched:
			v.SkipReason = SkipSelector
		default:
			v.Matched = true
			v.RenderedName, err = bindrule.ComputeBindName(rule.BindType, rule.BindName, vars)
			if err != nil {
				v.RenderedName = ""
				v.NameErr = err
				v.SkipReason = fmt.Sprintf("bind name invalid: %v", err)
				break
			}
			switch rule.BindType {
			case state.BindTypeService:
				if !seenService[v.RenderedName] {
					seenService[v.RenderedName] = true
					b.ServiceIdentities = append(b.ServiceIdentities, &state.ACLServiceIdentity{ServiceName: v.RenderedName})
				}
			case state.BindTypeNode:
				if !seenNode[v.RenderedName] {
					seenNode[v.RenderedName] = true
					b.NodeIdentities = append(b.NodeIdentities, &state.ACLNodeIdentity{NodeName: v.RenderedName, Datacenter: datacenter})
				}
			case state.BindTypeRole:
				role, err := roleByName(v.RenderedName)
				if err != nil {
					return nil, err
				}
				if role == nil {
					v.SkipReason = fmt.Sprintf("role %q does not exist", v.RenderedName)
					break
				}
				if !seenRole[role.ID] {
					seenRole[role.ID] = true
					b.Roles = append(b.Roles, state.ACLLink{ID: role.ID, Name: role.Name})
				}
			default:
				v.SkipReason = fmt.Sprintf("unknown BindType %q", rule.BindType)
			}
		}
		b.Verdicts = append(b.Verdicts, v)
	}
	return b, nil
}
