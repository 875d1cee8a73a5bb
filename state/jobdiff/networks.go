package jobdiff

import (
	"fmt"

	"github.com/ctlplane/ctlplane/state"
)

// networkDiffs diffs a group's networks as Nomad's networkResourceDiffs:
// as a set, a changed network being one Deleted and one Added "Network"
// object, each with its ports as "Static Port" and "Dynamic Port" objects
// (a dynamic port's Value left out).
func networkDiffs(old, new []*state.NetworkResource, contextual bool) []*ObjectDiff {
	return setDiff(old, new, "Network", contextual, func(n *state.NetworkResource) string {
		return fmt.Sprintf("%s\x00%v\x00%v", n.Mode, n.ReservedPorts, n.DynamicPorts)
	}, func(d *ObjectDiff, o, n *state.NetworkResource) {
		var or, od, nr, nd []state.Port
		if o != nil {
			or, od = o.ReservedPorts, o.DynamicPorts
		}
		if n != nil {
			nr, nd = n.ReservedPorts, n.DynamicPorts
		}
		d.Objects = append(portDiffs(or, nr, false, contextual), portDiffs(od, nd, true, contextual)...)
	})
}

// portDiffs diffs ports by label (Nomad's portDiffs).
func portDiffs(old, new []state.Port, dynamic, contextual bool) []*ObjectDiff {
	name, filter := "Static Port", []string(nil)
	if dynamic {
		name, filter = "Dynamic Port", []string{"Value"}
	}
	byLabel := func(ports []state.Port) map[string]*state.Port {
		m := map[string]*state.Port{}
		for i := range ports {
			m[ports[i].Label] = &ports[i]
		}
		return m
	}
	om, nm := byLabel(old), byLabel(new)
	var out []*ObjectDiff
	for label, o := range om {
		var n any
		if p := nm[label]; p != nil {
			n = p
		}
		if d := primitiveObjectDiff(o, n, filter, name, contextual); d != nil {
			out = append(out, d)
		}
	}
	for label, n := range nm {
		if om[label] == nil {
			if d := primitiveObjectDiff(nil, n, filter, name, contextual); d != nil {
				out = append(out, d)
			}
		}
	}
	sortObjects(out)
	return out
}
