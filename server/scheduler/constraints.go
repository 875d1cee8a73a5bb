package scheduler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/state"
	version "github.com/hashicorp/go-version"
)

// Nomad's constraint operands.
const (
	ConstraintDistinctHosts    = "distinct_hosts"
	ConstraintDistinctProperty = "distinct_property"
	ConstraintRegex            = "regexp"
	ConstraintVersion          = "version"
	ConstraintSemver           = "semver"
	ConstraintSetContains      = "set_contains"
	ConstraintSetContainsAll   = "set_contains_all"
	ConstraintSetContainsAny   = "set_contains_any"
	ConstraintAttributeIsSet   = "is_set"
	ConstraintAttributeIsNot   = "is_not_set"
)

// resolveTarget resolves a constraint target against a node: a literal, or
// one of Nomad's interpolations. ok is false when the node has no such
// value (an unset attribute or meta key, an unknown interpolation).
func resolveTarget(target string, n *state.Node) (string, bool) {
	if !strings.HasPrefix(target, "${") {
		return target, true
	}
	switch target {
	case "${node.unique.id}":
		return n.ID, true
	case "${node.datacenter}":
		return n.Datacenter, true
	case "${node.unique.name}":
		return n.Name, true
	case "${node.class}":
		return n.NodeClass, true
	case "${node.pool}":
		return nodePool(n), true
	}
	switch {
	case strings.HasPrefix(target, "${attr."):
		v, ok := n.Attributes[strings.TrimSuffix(strings.TrimPrefix(target, "${attr."), "}")]
		return v, ok
	case strings.HasPrefix(target, "${meta."):
		v, ok := n.Meta[strings.TrimSuffix(strings.TrimPrefix(target, "${meta."), "}")]
		return v, ok
	}
	return "", false
}

// nodePool is the node's pool; nodes that name none are in "default".
func nodePool(n *state.Node) string {
	if n.NodePool == "" {
		return "default"
	}
	return n.NodePool
}

// meetsConstraint says whether the node satisfies c (distinct_hosts and
// distinct_property are not checked here: they depend on the placements).
func meetsConstraint(c *state.Constraint, n *state.Node) bool {
	l, lok := resolveTarget(c.LTarget, n)
	r, rok := resolveTarget(c.RTarget, n)
	return checkConstraint(c.Operand, l, r, lok, rok)
}

// checkConstraint is Nomad 1.6's checkConstraint over resolved targets.
func checkConstraint(op, l, r string, lok, rok bool) bool {
	switch op {
	case ConstraintDistinctHosts, ConstraintDistinctProperty:
		return true
	case "=", "==", "is":
		return lok && rok && l == r
	case "!=", "not":
		// An unset attribute differs from any value (Nomad compares the
		// resolved values, nil included).
		return lok != rok || l != r
	case "<", "<=", ">", ">=":
		return lok && rok && checkOrder(op, l, r)
	case ConstraintAttributeIsSet:
		return lok
	case ConstraintAttributeIsNot:
		return !lok
	case ConstraintVersion:
		return lok && rok && checkVersion(l, r)
	case ConstraintSemver:
		return lok && rok && checkSemver(l, r)
	case ConstraintRegex:
		if !lok || !rok {
			return false
		}
		return matchRegexp(r, l)
	case ConstraintSetContains, ConstraintSetContainsAll:
		return lok && rok && setContains(l, r, true)
	case ConstraintSetContainsAny:
		return lok && rok && setContains(l, r, false)
	}
	return false
}

// checkOrder compares as integers when both sides are, else as floats,
// else lexically (Nomad's checkOrder).
func checkOrder(op, l, r string) bool {
	var cmp int
	if li, err := strconv.ParseInt(l, 10, 64); err == nil {
		if ri, err := strconv.ParseInt(r, 10, 64); err == nil {
			cmp = compare(li, ri)
			return ordered(op, cmp)
		}
	}
	if lf, err := strconv.ParseFloat(l, 64); err == nil {
		if rf, err := strconv.ParseFloat(r, 64); err == nil {
			return ordered(op, compare(lf, rf))
		}
	}
	return ordered(op, strings.Compare(l, r))
}

func compare[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ordered(op string, cmp int) bool {
	switch op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	}
	return false
}

// checkVersion matches a version against go-version constraints (">= 1.2,
// < 2", "~> 1.4"), as Nomad's "version" operand.
func checkVersion(l, r string) bool {
	v, err := version.NewVersion(l)
	if err != nil {
		return false
	}
	c, err := CompiledVersion(r)
	if err != nil {
		return false
	}
	return c.Check(v)
}

// checkSemver matches a version against Semantic Versioning 2.0
// constraints: pre-releases order as semver says, and only the operators
// =, !=, >, >=, <, <= (Nomad's "semver" operand).
func checkSemver(l, r string) bool {
	v, err := version.NewVersion(l)
	if err != nil {
		return false
	}
	cs, err := compiledSemver(r)
	if err != nil {
		return false
	}
	for _, c := range cs {
		if !c.check(v) {
			return false
		}
	}
	return true
}

// semverConstraint is one "op version" term of a semver constraint.
type semverConstraint struct {
	op string
	v  *version.Version
}

var semverTerm = regexp.MustCompile(`^\s*(=|!=|>=|<=|>|<)?\s*(\S+)\s*$`)

// ValidateSemverConstraint checks a semver constraint, with Nomad's error
// text for a malformed term.
func ValidateSemverConstraint(s string) error {
	_, err := compiledSemver(s)
	return err
}

// parseSemverConstraint parses a comma-separated semver constraint.
func parseSemverConstraint(s string) ([]semverConstraint, error) {
	var out []semverConstraint
	for _, term := range strings.Split(s, ",") {
		m := semverTerm.FindStringSubmatch(term)
		if m == nil {
			return nil, fmt.Errorf("Malformed constraint: %s", term)
		}
		v, err := version.NewSemver(m[2])
		if err != nil {
			return nil, fmt.Errorf("Malformed constraint: %s", term)
		}
		out = append(out, semverConstraint{op: m[1], v: v})
	}
	return out, nil
}

func (c semverConstraint) check(v *version.Version) bool {
	cmp := v.Compare(c.v)
	switch c.op {
	case "", "=":
		return cmp == 0
	case "!=":
		return cmp != 0
	}
	return ordered(c.op, cmp)
}

// setContains: every (all) or any value of the comma-separated r is in the
// comma-separated l, each trimmed.
func setContains(l, r string, all bool) bool {
	have := map[string]bool{}
	for _, v := range strings.Split(l, ",") {
		have[strings.TrimSpace(v)] = true
	}
	for _, v := range strings.Split(r, ",") {
		found := have[strings.TrimSpace(v)]
		if all && !found {
			return false
		}
		if !all && found {
			return true
		}
	}
	return all
}

// groupConstraints are the constraints a group's placements must meet:
// the job's, the group's and each task's, in Nomad's order.
func groupConstraints(job *state.Job, tg *state.TaskGroup) []*state.Constraint {
	out := append([]*state.Constraint(nil), job.Constraints...)
	out = append(out, tg.Constraints...)
	for _, t := range tg.Tasks {
		out = append(out, t.Constraints...)
	}
	return out
}

// nodeMeets says whether the node meets every static constraint of the
// group (the in-place update check: Nomad re-runs feasibility on the
// allocation's node).
func nodeMeets(job *state.Job, tg *state.TaskGroup, n *state.Node) bool {
	for _, c := range groupConstraints(job, tg) {
		if !meetsConstraint(c, n) {
			return false
		}
	}
	return true
}
