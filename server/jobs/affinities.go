package jobs

import (
	"regexp"

	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
	version "github.com/hashicorp/go-version"
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
		if _, err := regexp.Compile(a.RTarget); err != nil {
			errs.add("Regular expression failed to compile: %v", err)
		}
	case scheduler.ConstraintVersion:
		if _, err := version.NewConstraint(a.RTarget); err != nil {
			errs.add("Version affinity is invalid: %s", capitalMalformed(err))
		}
	case scheduler.ConstraintSemver:
		if _, err := scheduler.ParseSemverConstraint(a.RTarget); err != nil {
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
