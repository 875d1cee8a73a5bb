package jobdiff

import (
	"sort"

	"github.com/ctlplane/ctlplane/state"
)

// constraintDiffs diffs two constraint lists as sets, as Nomad's
// primitiveObjectSetDiff: a constraint in both is left out (even in a
// contextual diff), a changed one is one Deleted and one Added object
// named "Constraint".
func constraintDiffs(old, new []*state.Constraint, contextual bool) []*ObjectDiff {
	key := func(c *state.Constraint) string { return c.LTarget + "\x00" + c.Operand + "\x00" + c.RTarget }
	oldSet, newSet := map[string]*state.Constraint{}, map[string]*state.Constraint{}
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
	for k, c := range oldSet {
		if _, ok := newSet[k]; ok {
			continue
		}
		if d := primitiveObjectDiff(c, nil, nil, "Constraint", contextual); d != nil {
			all = append(all, keyed{string(d.Type) + k, d})
		}
	}
	for k, c := range newSet {
		if _, ok := oldSet[k]; ok {
			continue
		}
		if d := primitiveObjectDiff(nil, c, nil, "Constraint", contextual); d != nil {
			all = append(all, keyed{string(d.Type) + k, d})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	out := make([]*ObjectDiff, 0, len(all))
	for _, e := range all {
		out = append(out, e.d)
	}
	return out
}
