package jobdiff

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"

	"github.com/ctlplane/ctlplane/state"
)

// jobFilter: a job's bookkeeping fields, never part of its diff (Nomad's
// list; the job's update block lives on its groups).
var jobFilter = []string{"ID", "Status", "StatusDescription", "Version", "Stable", "CreateIndex",
	"ModifyIndex", "JobModifyIndex", "Update", "SubmitTime"}

// Diff is the diff from old to new (either may be nil: an added or a
// deleted job). contextual keeps the unchanged fields of changed objects,
// as Nomad's plan and version history ask for. Jobs with different IDs
// cannot be diffed.
func Diff(old, new *state.Job, contextual bool) (*JobDiff, error) {
	d := &JobDiff{Type: None}
	var oldFlat, newFlat map[string]string
	switch {
	case old == nil && new == nil:
		return d, nil
	case old == nil:
		old = &state.Job{}
		d.Type, d.ID = Added, new.ID
		newFlat = flatten(new, jobFilter, true)
	case new == nil:
		new = &state.Job{}
		d.Type, d.ID = Deleted, old.ID
		oldFlat = flatten(old, jobFilter, true)
	default:
		if old.ID != new.ID {
			return nil, fmt.Errorf("can not diff jobs with different IDs: %q and %q", old.ID, new.ID)
		}
		d.ID = new.ID
		oldFlat, newFlat = flatten(old, jobFilter, true), flatten(new, jobFilter, true)
	}
	d.Fields = fieldDiffs(oldFlat, newFlat, false)
	if s := stringSetDiff(old.Datacenters, new.Datacenters, "Datacenters", contextual); s != nil && s.Type != None {
		d.Objects = append(d.Objects, s)
	}
	d.Objects = append(d.Objects, constraintDiffs(old.Constraints, new.Constraints, contextual)...)
	d.Objects = append(d.Objects, affinityDiffs(old.Affinities, new.Affinities, contextual)...)
	d.Objects = append(d.Objects, spreadDiffs(old.Spreads, new.Spreads, contextual)...)
	d.TaskGroups = groupDiffs(old.TaskGroups, new.TaskGroups, contextual)
	if m := multiregionDiff(old.Multiregion, new.Multiregion, contextual); m != nil {
		d.Objects = append(d.Objects, m)
	}
	if d.Type == None && anyChanged(d) {
		d.Type = Edited
	}
	return d, nil
}

func anyChanged(d *JobDiff) bool {
	for _, f := range d.Fields {
		if f.Type != None {
			return true
		}
	}
	for _, o := range d.Objects {
		if o.Type != None {
			return true
		}
	}
	for _, g := range d.TaskGroups {
		if g.Type != None {
			return true
		}
	}
	return false
}

// groupDiffs pairs groups by name: every old group (same, edited or
// deleted), then the added ones, sorted by name.
func groupDiffs(old, new []*state.TaskGroup, contextual bool) []*TaskGroupDiff {
	oldByName := map[string]*state.TaskGroup{}
	for _, g := range old {
		oldByName[g.Name] = g
	}
	newByName := map[string]*state.TaskGroup{}
	for _, g := range new {
		newByName[g.Name] = g
	}
	var out []*TaskGroupDiff
	for name, g := range oldByName {
		out = append(out, groupDiff(g, newByName[name], contextual))
	}
	for name, g := range newByName {
		if _, ok := oldByName[name]; !ok {
			out = append(out, groupDiff(nil, g, contextual))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func groupDiff(old, new *state.TaskGroup, contextual bool) *TaskGroupDiff {
	d := &TaskGroupDiff{Type: None}
	filter := []string{"Name"}
	var oldFlat, newFlat map[string]string
	switch {
	case old == nil:
		old = &state.TaskGroup{}
		d.Type, d.Name = Added, new.Name
		newFlat = flatten(new, filter, true)
	case new == nil:
		new = &state.TaskGroup{}
		d.Type, d.Name = Deleted, old.Name
		oldFlat = flatten(old, filter, true)
	default:
		if !reflect.DeepEqual(old, new) {
			d.Type = Edited
		}
		d.Name = new.Name
		oldFlat, newFlat = flatten(old, filter, true), flatten(new, filter, true)
	}
	d.Fields = fieldDiffs(oldFlat, newFlat, false)
	// Nomad's order of a group's objects (not sorted).
	d.Objects = append(d.Objects, constraintDiffs(old.Constraints, new.Constraints, contextual)...)
	d.Objects = append(d.Objects, affinityDiffs(old.Affinities, new.Affinities, contextual)...)
	d.Objects = append(d.Objects, spreadDiffs(old.Spreads, new.Spreads, contextual)...)
	if o := primitiveObjectDiff(old.RestartPolicy, new.RestartPolicy, nil, "RestartPolicy", contextual); o != nil {
		d.Objects = append(d.Objects, o)
	}
	if o := primitiveObjectDiff(old.ReschedulePolicy, new.ReschedulePolicy, nil, "ReschedulePolicy", contextual); o != nil {
		d.Objects = append(d.Objects, o)
	}
	if o := primitiveObjectDiff(old.Update, new.Update, []string{"Stagger"}, "Update", contextual); o != nil {
		d.Objects = append(d.Objects, o)
	}
	d.Objects = append(d.Objects, networkDiffs(old.Networks, new.Networks, contextual)...)
	d.Objects = append(d.Objects, serviceDiffs(old.Services, new.Services, contextual)...)
	d.Tasks = taskDiffs(old.Tasks, new.Tasks, contextual)
	return d
}

func taskDiffs(old, new []*state.Task, contextual bool) []*TaskDiff {
	oldByName := map[string]*state.Task{}
	for _, t := range old {
		oldByName[t.Name] = t
	}
	newByName := map[string]*state.Task{}
	for _, t := range new {
		newByName[t.Name] = t
	}
	var out []*TaskDiff
	for name, t := range oldByName {
		out = append(out, taskDiff(t, newByName[name], contextual))
	}
	for name, t := range newByName {
		if _, ok := oldByName[name]; !ok {
			out = append(out, taskDiff(nil, t, contextual))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func taskDiff(old, new *state.Task, contextual bool) *TaskDiff {
	d := &TaskDiff{Type: None}
	filter := []string{"Name", "Config"}
	var oldFlat, newFlat map[string]string
	switch {
	case old == nil:
		old = &state.Task{}
		d.Type, d.Name = Added, new.Name
		newFlat = flatten(new, filter, true)
	case new == nil:
		new = &state.Task{}
		d.Type, d.Name = Deleted, old.Name
		oldFlat = flatten(old, filter, true)
	default:
		if !reflect.DeepEqual(old, new) {
			d.Type = Edited
		}
		d.Name = new.Name
		oldFlat, newFlat = flatten(old, filter, true), flatten(new, filter, true)
	}
	d.Fields = fieldDiffs(oldFlat, newFlat, false)
	d.Objects = append(d.Objects, constraintDiffs(old.Constraints, new.Constraints, contextual)...)
	d.Objects = append(d.Objects, affinityDiffs(old.Affinities, new.Affinities, contextual)...)
	if o := configDiff(old.Config, new.Config, contextual); o != nil {
		d.Objects = append(d.Objects, o)
	}
	if o := resourcesDiff(old.Resources, new.Resources, contextual); o != nil {
		d.Objects = append(d.Objects, o)
	}
	d.Objects = append(d.Objects, serviceDiffs(old.Services, new.Services, contextual)...)
	return d
}

// configDiff diffs a driver config flattened whole (nested maps and lists
// included). Empty and absent configs are the same, as the scheduler
// takes them.
func configDiff(old, new map[string]any, contextual bool) *ObjectDiff {
	if reflect.DeepEqual(old, new) || (len(old) == 0 && len(new) == 0) {
		return nil
	}
	d := &ObjectDiff{Type: Edited, Name: "Config"}
	switch {
	case len(old) == 0:
		d.Type = Added
	case len(new) == 0:
		d.Type = Deleted
	}
	d.Fields = fieldDiffs(flatten(old, nil, false), flatten(new, nil, false), contextual)
	return d
}

func resourcesDiff(old, new *state.Resources, contextual bool) *ObjectDiff {
	if reflect.DeepEqual(old, new) {
		return nil
	}
	d := &ObjectDiff{Type: Edited, Name: "Resources"}
	var oldFlat, newFlat map[string]string
	switch {
	case old == nil:
		d.Type = Added
		newFlat = flatten(new, nil, true)
	case new == nil:
		d.Type = Deleted
		oldFlat = flatten(old, nil, true)
	default:
		oldFlat, newFlat = flatten(old, nil, true), flatten(new, nil, true)
	}
	d.Fields = fieldDiffs(oldFlat, newFlat, contextual)
	return d
}

// multiregionDiff: the strategy and the regions (by name), sorted.
func multiregionDiff(old, new *state.Multiregion, contextual bool) *ObjectDiff {
	if reflect.DeepEqual(old, new) {
		return nil
	}
	d := &ObjectDiff{Type: Edited, Name: "Multiregion"}
	switch {
	case old == nil:
		// Nomad diffs against a canonical empty block.
		old = &state.Multiregion{Strategy: &state.MultiregionStrategy{}}
		d.Type = Added
	case new == nil:
		new = &state.Multiregion{}
		d.Type = Deleted
	}
	if o := primitiveObjectDiff(old.Strategy, new.Strategy, nil, "Strategy", contextual); o != nil {
		d.Objects = append(d.Objects, o)
	}
	oldByName := map[string]*state.MultiregionRegion{}
	for _, r := range old.Regions {
		oldByName[r.Name] = r
	}
	newByName := map[string]*state.MultiregionRegion{}
	for _, r := range new.Regions {
		newByName[r.Name] = r
	}
	for name, r := range oldByName {
		if o := regionDiff(r, newByName[name], contextual); o != nil {
			d.Objects = append(d.Objects, o)
		}
	}
	for name, r := range newByName {
		if _, ok := oldByName[name]; !ok {
			if o := regionDiff(nil, r, contextual); o != nil {
				d.Objects = append(d.Objects, o)
			}
		}
	}
	sortObjects(d.Objects)
	return d
}

func regionDiff(old, new *state.MultiregionRegion, contextual bool) *ObjectDiff {
	if reflect.DeepEqual(old, new) {
		return nil
	}
	d := &ObjectDiff{Name: "Region"}
	d.Fields = fieldDiffs(regionFlat(old), regionFlat(new), contextual)
	var dcOld, dcNew []string
	if old != nil {
		dcOld = old.Datacenters
	}
	if new != nil {
		dcNew = new.Datacenters
	}
	if s := stringSetDiff(dcOld, dcNew, "Datacenters", contextual); s != nil && s.Type != None {
		d.Objects = append(d.Objects, s)
	}
	if d.Type = typeOfFields(d.Fields); d.Type == None {
		return nil
	}
	return d
}

// regionFlat flattens a region as Nomad's (whose Count is a plain int).
func regionFlat(r *state.MultiregionRegion) map[string]string {
	if r == nil {
		return nil
	}
	out := flatten(r, nil, true)
	if r.Count != nil {
		out["Count"] = strconv.Itoa(*r.Count)
	}
	return out
}

// primitiveObjectDiff diffs the primitive fields of two blocks (either
// may be nil); nil when nothing changed.
func primitiveObjectDiff(old, new any, filter []string, name string, contextual bool) *ObjectDiff {
	oldFlat, newFlat := flatten(old, filter, true), flatten(new, filter, true)
	delete(oldFlat, "")
	delete(newFlat, "")
	d := &ObjectDiff{Name: name, Fields: fieldDiffs(oldFlat, newFlat, contextual)}
	if d.Type = typeOfFields(d.Fields); d.Type == None {
		return nil
	}
	return d
}

// typeOfFields: Edited when any field was edited or fields were both added
// and deleted, else Added or Deleted, else None.
func typeOfFields(fields []*FieldDiff) Type {
	var added, deleted bool
	for _, f := range fields {
		switch f.Type {
		case Edited:
			return Edited
		case Added:
			added = true
		case Deleted:
			deleted = true
		}
	}
	switch {
	case added && deleted:
		return Edited
	case added:
		return Added
	case deleted:
		return Deleted
	}
	return None
}

// stringSetDiff diffs two string sets (order and repeats do not count).
func stringSetDiff(old, new []string, name string, contextual bool) *ObjectDiff {
	oldSet, newSet := map[string]bool{}, map[string]bool{}
	for _, s := range old {
		oldSet[s] = true
	}
	for _, s := range new {
		newSet[s] = true
	}
	if reflect.DeepEqual(oldSet, newSet) && !contextual {
		return nil
	}
	d := &ObjectDiff{Name: name}
	var added, removed bool
	for s := range oldSet {
		if !newSet[s] {
			d.Fields = append(d.Fields, fieldDiff(s, "", name, contextual))
			removed = true
		} else if contextual {
			d.Fields = append(d.Fields, fieldDiff(s, s, name, contextual))
		}
	}
	for s := range newSet {
		if !oldSet[s] {
			d.Fields = append(d.Fields, fieldDiff("", s, name, contextual))
			added = true
		}
	}
	sortFields(d.Fields)
	switch {
	case added && removed:
		d.Type = Edited
	case added:
		d.Type = Added
	case removed:
		d.Type = Deleted
	case len(d.Fields) == 0:
		return nil
	default:
		d.Type = None
	}
	return d
}

// fieldDiffs diffs two flattened objects, sorted by name.
func fieldDiffs(old, new map[string]string, contextual bool) []*FieldDiff {
	var out []*FieldDiff
	for k, o := range old {
		if f := fieldDiff(o, new[k], k, contextual); f != nil {
			out = append(out, f)
		}
	}
	for k, n := range new {
		if _, ok := old[k]; !ok {
			if f := fieldDiff("", n, k, contextual); f != nil {
				out = append(out, f)
			}
		}
	}
	sortFields(out)
	return out
}

// fieldDiff: nil when unchanged (a None field when contextual); an empty
// value is an absent one.
func fieldDiff(old, new, name string, contextual bool) *FieldDiff {
	f := &FieldDiff{Type: None, Name: name}
	switch {
	case old == new:
		if !contextual {
			return nil
		}
		f.Old, f.New = old, new
	case old == "":
		f.Type, f.New = Added, new
	case new == "":
		f.Type, f.Old = Deleted, old
	default:
		f.Type, f.Old, f.New = Edited, old, new
	}
	return f
}
