package jobs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
)

// ctlplane's caps on constraints (Nomad has none; a job is one Raft entry).
const (
	MaxConstraints      = 64
	MaxConstraintTarget = 1024
)

func canonicalConstraints(in []*ConstraintSpec) []*state.Constraint {
	if len(in) == 0 {
		return nil
	}
	out := make([]*state.Constraint, 0, len(in))
	for _, c := range in {
		if c == nil {
			c = &ConstraintSpec{}
		}
		out = append(out, &state.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand})
	}
	return out
}

// checkConstraints validates a block's constraints with Nomad's texts
// (Job.Validate, TaskGroup.Validate, Task.Validate around
// Constraint.Validate); task says whether the block is a task's, where
// distinct_hosts and distinct_property are not allowed.
func checkConstraints(errs *errList, cs []*state.Constraint, task bool) {
	if len(cs) > MaxConstraints {
		errs.add("%d constraints: at most %d are allowed", len(cs), MaxConstraints)
		return
	}
	for i, c := range cs {
		if e := validateConstraint(c); len(e) > 0 {
			errs.add("Constraint %d validation failed: %s", i+1, joinErrs(e))
		}
		if task && (c.Operand == scheduler.ConstraintDistinctHosts || c.Operand == scheduler.ConstraintDistinctProperty) {
			errs.add("Constraint %d has disallowed Operand at task level: %s", i+1, c.Operand)
		}
	}
}

// validateConstraint is Nomad's Constraint.Validate.
func validateConstraint(c *state.Constraint) errList {
	var errs errList
	if c.Operand == "" {
		errs.add("Missing constraint operand")
	}
	if len(c.LTarget) > MaxConstraintTarget || len(c.RTarget) > MaxConstraintTarget {
		errs.add("Constraint targets are at most %d characters long", MaxConstraintTarget)
		return errs
	}
	requireLTarget := true
	switch c.Operand {
	case scheduler.ConstraintDistinctHosts:
		requireLTarget = false
	case scheduler.ConstraintSetContainsAll, scheduler.ConstraintSetContainsAny, scheduler.ConstraintSetContains:
		if c.RTarget == "" {
			errs.add("Set contains constraint requires an RTarget")
		}
	case scheduler.ConstraintRegex:
		if err := checkRegexp(c.RTarget); err != "" {
			errs.add("%s", err)
		}
	case scheduler.ConstraintVersion:
		if _, err := scheduler.CompiledVersion(c.RTarget); err != nil {
			errs.add("Version constraint is invalid: %s", capitalMalformed(err))
		}
	case scheduler.ConstraintSemver:
		if err := scheduler.ValidateSemverConstraint(c.RTarget); err != nil {
			errs.add("Semver constraint is invalid: %v", err)
		}
	case scheduler.ConstraintDistinctProperty:
		if c.RTarget != "" {
			count, err := strconv.ParseUint(c.RTarget, 10, 64)
			if err != nil {
				errs.add("Failed to convert RTarget %q to uint64: %v", c.RTarget, err)
			} else if count < 1 {
				errs.add("Distinct Property must have an allowed count of 1 or greater: %d < 1", count)
			}
		}
	case scheduler.ConstraintAttributeIsSet, scheduler.ConstraintAttributeIsNot:
		if c.RTarget != "" {
			errs.add("Operator %q does not support an RTarget", c.Operand)
		}
	case "=", "==", "is", "!=", "not", "<", "<=", ">", ">=":
		if c.RTarget == "" {
			errs.add("Operator %q requires an RTarget", c.Operand)
		}
	case "":
	default:
		errs.add("Unknown constraint type %q", c.Operand)
	}
	if requireLTarget && c.LTarget == "" {
		errs.add("No LTarget provided but is required by constraint")
	}
	return errs
}

// joinErrs is a nested multierror: one problem alone, several counted.
func joinErrs(l errList) string {
	if len(l) == 1 {
		return l[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors occurred:", len(l))
	for _, e := range l {
		b.WriteString("\n\t* " + e)
	}
	return b.String()
}

// capitalMalformed is a go-version error as go-version 1.6 (Nomad 1.6's)
// wrote it: "Malformed constraint: …".
func capitalMalformed(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "malformed"); ok {
		msg = "Malformed" + rest
	}
	return msg
}
