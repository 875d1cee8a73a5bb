package jobdiff

import (
	"reflect"
	"sort"
	"strings"

	"github.com/ctlplane/ctlplane/state"
)

// serviceDiffs diffs services by name as Nomad's serviceDiffs: "Service"
// objects with their primitive fields, "CanaryTags" and "Tags" sets and
// "Check" objects.
func serviceDiffs(old, new []*state.Service, contextual bool) []*ObjectDiff {
	return keyedDiffs(old, new, func(s *state.Service) string { return s.Name }, func(o, n *state.Service) *ObjectDiff {
		d := keyedObject("Service", o, n, contextual)
		if d == nil {
			return nil
		}
		var ot, nt, oc, nc []string
		var ochecks, nchecks []*state.ServiceCheck
		if o != nil {
			ot, oc, ochecks = o.Tags, o.CanaryTags, o.Checks
		}
		if n != nil {
			nt, nc, nchecks = n.Tags, n.CanaryTags, n.Checks
		}
		if s := stringSetDiff(oc, nc, "CanaryTags", contextual); s != nil {
			d.Objects = append(d.Objects, s)
		}
		if s := stringSetDiff(ot, nt, "Tags", contextual); s != nil {
			d.Objects = append(d.Objects, s)
		}
		d.Objects = append(d.Objects, checkDiffs(ochecks, nchecks, contextual)...)
		return d
	})
}

// checkDiffs diffs checks by name (Nomad's serviceCheckDiffs): "Check"
// objects with a "Header" and a "CheckRestart" object.
func checkDiffs(old, new []*state.ServiceCheck, contextual bool) []*ObjectDiff {
	return keyedDiffs(old, new, func(c *state.ServiceCheck) string { return c.Name }, func(o, n *state.ServiceCheck) *ObjectDiff {
		d := keyedObject("Check", o, n, contextual)
		if d == nil {
			return nil
		}
		var oh, nh map[string][]string
		var ocr, ncr *state.CheckRestart
		if o != nil {
			oh, ocr = o.Header, o.CheckRestart
		}
		if n != nil {
			nh, ncr = n.Header, n.CheckRestart
		}
		if h := headerDiff(oh, nh, contextual); h != nil {
			d.Objects = append(d.Objects, h)
		}
		if cr := primitiveObjectDiff(ocr, ncr, nil, "CheckRestart", contextual); cr != nil {
			d.Objects = append(d.Objects, cr)
		}
		return d
	})
}

// headerDiff is Nomad's checkHeaderDiff: one field per header, its
// values joined by commas.
func headerDiff(old, new map[string][]string, contextual bool) *ObjectDiff {
	flat := func(m map[string][]string) map[string]string {
		if m == nil {
			return nil
		}
		out := map[string]string{}
		for k, v := range m {
			out[k] = strings.Join(v, ",")
		}
		return out
	}
	d := &ObjectDiff{Name: "Header", Fields: fieldDiffs(flat(old), flat(new), contextual)}
	if d.Type = typeOfFields(d.Fields); d.Type == None {
		return nil
	}
	return d
}

// keyedObject is the object of one keyed element (nil: unchanged): its
// primitive fields, Added or Deleted when one side is missing.
func keyedObject[T any](name string, o, n *T, contextual bool) *ObjectDiff {
	if reflect.DeepEqual(o, n) {
		return nil
	}
	var oldFlat, newFlat map[string]string
	d := &ObjectDiff{Name: name, Type: Edited}
	switch {
	case o == nil:
		d.Type = Added
		newFlat = flatten(n, nil, true)
	case n == nil:
		d.Type = Deleted
		oldFlat = flatten(o, nil, true)
	default:
		oldFlat, newFlat = flatten(o, nil, true), flatten(n, nil, true)
	}
	delete(oldFlat, "")
	delete(newFlat, "")
	d.Fields = fieldDiffs(oldFlat, newFlat, contextual)
	return d
}

// keyedDiffs diffs two lists matched by key (the deleted and edited, then
// the added), sorted as Nomad sorts objects.
func keyedDiffs[T any](old, new []*T, key func(*T) string, diff func(o, n *T) *ObjectDiff) []*ObjectDiff {
	om, nm := map[string]*T{}, map[string]*T{}
	for _, o := range old {
		om[key(o)] = o
	}
	for _, n := range new {
		nm[key(n)] = n
	}
	keys := make([]string, 0, len(om)+len(nm))
	for k := range om {
		keys = append(keys, k)
	}
	for k := range nm {
		if _, ok := om[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []*ObjectDiff
	for _, k := range keys {
		if d := diff(om[k], nm[k]); d != nil {
			out = append(out, d)
		}
	}
	sortObjects(out)
	return out
}
