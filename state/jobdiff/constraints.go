package jobdiff

import (
	"fmt"
	"sort"

	"github.com/ctlplane/ctlplane/state"
)

// constraintDiffs diffs two constraint lists as sets, as Nomad's
// primitiveObjectSetDiff: a constraint in both is left out (even in a
// contextual diff), a changed one is one Deleted and one Added object
// named "Constraint".
func constraintDiffs(old, new []*state.Constraint, contextual bool) []*ObjectDiff {
	return setDiff(old, new, "Constraint", contextual, func(c *state.Constraint) string {
		return c.LTarget + "\x00" + c.Operand + "\x00" + c.RTarget
	}, nil)
}

// affinityDiffs diffs affinities the same way ("Affinity" objects).
func affinityDiffs(old, new []*state.Affinity, contextual bool) []*ObjectDiff {
	return setDiff(old, new, "Affinity", contextual, func(a *state.Affinity) string {
		return fmt.Sprintf("%s\x00%s\x00%s\x00%d", a.LTarget, a.Operand, a.RTarget, a.Weight)
	}, nil)
}

// spreadDiffs diffs spreads ("Spread" objects with their targets as
// "SpreadTarget" objects, as Nomad's Spread.Diff).
func spreadDiffs(old, new []*state.Spread, contextual bool) []*ObjectDiff {
	return setDiff(old, new, "Spread", contextual, func(s *state.Spread) string {
		k := fmt.Sprintf("%s\x00%d", s.Attribute, s.Weight)
		for _, t := range s.SpreadTarget {
			k += fmt.Sprintf("\x00%s=%d", t.Value, t.Percent)
		}
		return k
	}, func(d *ObjectDiff, o, n *state.Spread) {
		var ot, nt []*state.SpreadTarget
		if o != nil {
			ot = o.SpreadTarget
		}
		if n != nil {
			nt = n.SpreadTarget
		}
		d.Objects = setDiff(ot, nt, "SpreadTarget", contextual, func(t *state.SpreadTarget) string {
			return fmt.Sprintf("%s=%d", t.Value, t.Percent)
		}, nil)
	})
}

// setDiff is Nomad's primitiveObjectSetDiff over items keyed by key:
// items only in old are Deleted, only in new Added (nested objects by
// nested, when given); items in both are left out.
func setDiff[T any](old, new []*T, name string, contextual bool, key func(*T) string, nested func(d *ObjectDiff, o, n *T)) []*ObjectDiff {
	oldSet, newSet := map[string]*T{}, map[string]*T{}
	for _, c := range old {
		oldSet[key(c)] = c
	}
	for _, c := range new {
		newSet[key(c)] = c
	}
	type keyed struct {
		key string
		d   *ObjectDiff
	}
	var all []keyed
	add := func(k string, o, n *T) {
		d := primitiveObjectDiff(o, n, nil, name, contextual)
		if d == nil {
			return
		}
		if nested != nil {
			nested(d, o, n)
		}
		all = append(all, keyed{string(d.Type) + k, d})
	}
	for k, c := range oldSet {
		if _, ok := newSet[k]; !ok {
			add(k, c, nil)
		}
	}
	for k, c := range newSet {
		if _, ok := oldSet[k]; !ok {
			add(k, nil, c)
		}
	}
	// Nomad's ObjectDiffs order: by name, then type (Added before Deleted).
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	out := make([]*ObjectDiff, 0, len(all))
	for _, e := range all {
		out = append(out, e.d)
	}
	return out
}
