package jobs

import (
	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
)

// DefaultAffinityWeight is Nomad's weight of an affinity that gives none.
const DefaultAffinityWeight = 50

func canonicalAffinities(in []*AffinitySpec) []*state.Affinity {
	if len(in) == 0 {
		return nil
	}
	out := make([]*state.Affinity, 0, len(in))
	for _, a := range in {
		if a == nil {
			a = &AffinitySpec{}
		}
		w := int8(DefaultAffinityWeight)
		if a.Weight != nil {
			w = *a.Weight
		}
		out = append(out, &state.Affinity{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand, Weight: w})
	}
	return out
}

// checkAffinities validates a block's affinities with Nomad's texts
// (Affinity.Validate, reported as "Affinity N validation failed: …").
func checkAffinities(errs *errList, as []*state.Affinity) {
	if len(as) > MaxConstraints {
		errs.add("%d affinities: at most %d are allowed", len(as), MaxConstraints)
		return
	}
	for i, a := range as {
		if e := validateAffinity(a); len(e) > 0 {
			errs.add("Affinity %d validation failed: %s", i+1, joinErrs(e))
		}
	}
}

func validateAffinity(a *state.Affinity) errList {
	var errs errList
	if a.Operand == "" {
		errs.add("Missing affinity operand")
	}
	if len(a.LTarget) > MaxConstraintTarget || len(a.RTarget) > MaxConstraintTarget {
		errs.add("Affinity targets are at most %d characters long", MaxConstraintTarget)
		return errs
	}
	switch a.Operand {
	case scheduler.ConstraintSetContainsAll, scheduler.ConstraintSetContainsAny, scheduler.ConstraintSetContains:
		if a.RTarget == "" {
			errs.add("Set contains operators require an RTarget")
		}
	case scheduler.ConstraintRegex:
		if err := checkRegexp(a.RTarget); err != "" {
			errs.add("%s", err)
		}
	case scheduler.ConstraintVersion:
		if _, err := scheduler.CompiledVersion(a.RTarget); err != nil {
			errs.add("Version affinity is invalid: %s", capitalMalformed(err))
		}
	case scheduler.ConstraintSemver:
		if err := scheduler.ValidateSemverConstraint(a.RTarget); err != nil {
			errs.add("Semver affinity is invalid: %v", err)
		}
	case "=", "==", "is", "!=", "not", "<", "<=", ">", ">=":
		if a.RTarget == "" {
			errs.add("Operator %q requires an RTarget", a.Operand)
		}
	case "":
	default:
		errs.add("Unknown affinity operator %q", a.Operand)
	}
	if a.LTarget == "" {
		errs.add("No LTarget provided but is required")
	}
	if a.Weight == 0 {
		errs.add("Affinity weight cannot be zero")
	}
	if a.Weight > 100 || a.Weight < -100 {
		errs.add("Affinity weight must be within the range [-100,100]")
	}
	return errs
}

// DefaultSpreadWeight is Nomad's weight of a spread that gives none.
const DefaultSpreadWeight = 50

func canonicalSpreads(in []*SpreadSpec) []*state.Spread {
	if len(in) == 0 {
		return nil
	}
	out := make([]*state.Spread, 0, len(in))
	for _, sp := range in {
		if sp == nil {
			sp = &SpreadSpec{}
		}
		s := &state.Spread{Attribute: sp.Attribute, Weight: DefaultSpreadWeight}
		if sp.Weight != nil {
			s.Weight = *sp.Weight
		}
		for _, t := range sp.SpreadTarget {
			if t != nil {
				s.SpreadTarget = append(s.SpreadTarget, &state.SpreadTarget{Value: t.Value, Percent: t.Percent})
			}
		}
		out = append(out, s)
	}
	return out
}

// checkSpreads validates a block's spreads with Nomad's Spread.Validate
// texts ("Spread N validation failed: …").
func checkSpreads(errs *errList, ss []*state.Spread) {
	if len(ss) > MaxConstraints {
		errs.add("%d spreads: at most %d are allowed", len(ss), MaxConstraints)
		return
	}
	for i, s := range ss {
		var e errList
		if s.Attribute == "" {
			e.add("Missing spread attribute")
		}
		if s.Weight <= 0 || s.Weight > 100 {
			e.add("Spread stanza must have a positive weight from 0 to 100")
		}
		if len(s.SpreadTarget) > MaxConstraints {
			e.add("%d spread targets: at most %d are allowed", len(s.SpreadTarget), MaxConstraints)
		}
		seen := map[string]bool{}
		sum := 0
		for _, t := range s.SpreadTarget {
			if seen[t.Value] {
				e.add("Spread target value %q already defined", t.Value)
			}
			seen[t.Value] = true
			if t.Percent > 100 {
				e.add("Spread target percentage for value %q must be between 0 and 100", t.Value)
			}
			sum += int(t.Percent)
		}
		if sum > 100 {
			e.add("Sum of spread target percentages must not be greater than 100%%; got %d%%", sum)
		}
		if len(e) > 0 {
			errs.add("Spread %d validation failed: %s", i+1, joinErrs(e))
		}
	}
}
