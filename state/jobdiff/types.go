// Package jobdiff is Nomad's structured job diff (nomad/structs/diff.go) over
// ctlplane's jobs: what `nomad job plan` and `nomad job history -p` print.
// Field names, the flattening of maps (Meta[key], Env[key], Config's nested
// keys), the filtered bookkeeping fields and the ordering are Nomad's.
package jobdiff

import (
	"sort"
)

// Type says how an object changed (Nomad's DiffType).
type Type string

// Nomad's diff types.
const (
	None    Type = "None"
	Added   Type = "Added"
	Deleted Type = "Deleted"
	Edited  Type = "Edited"
)

// rank orders types as Nomad sorts them: Edited, Added, Deleted, None.
func (t Type) rank() int {
	switch t {
	case Edited:
		return 0
	case Added:
		return 1
	case Deleted:
		return 2
	}
	return 3
}

// JobDiff is the diff of two versions of a job.
type JobDiff struct {
	Type       Type
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the diff of one task group. Updates is filled by the
// plan's annotations (what the scheduler would do, per kind of update).
type TaskGroupDiff struct {
	Type    Type
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is the diff of one task; Annotations say what it forces.
type TaskDiff struct {
	Type        Type
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// ObjectDiff is the diff of a nested object (a block, a map, a set).
type ObjectDiff struct {
	Type    Type
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// FieldDiff is the diff of one primitive field; Old and New are printed
// values ("" for absent).
type FieldDiff struct {
	Type        Type
	Name        string
	Old, New    string
	Annotations []string
}

func compareFields(a, b *FieldDiff) int {
	switch {
	case a.Name != b.Name:
		return cmpStr(a.Name, b.Name)
	case a.Old != b.Old:
		return cmpStr(a.Old, b.Old)
	}
	return cmpStr(a.New, b.New)
}

// compareObjects orders objects by name, then type, then size, then content.
func compareObjects(a, b *ObjectDiff) int {
	if a.Name != b.Name {
		return cmpStr(a.Name, b.Name)
	}
	if a.Type != b.Type {
		return a.Type.rank() - b.Type.rank()
	}
	if len(a.Fields) != len(b.Fields) {
		return len(a.Fields) - len(b.Fields)
	}
	if len(a.Objects) != len(b.Objects) {
		return len(a.Objects) - len(b.Objects)
	}
	for i := range a.Fields {
		if c := compareFields(a.Fields[i], b.Fields[i]); c != 0 {
			return c
		}
	}
	for i := range a.Objects {
		if c := compareObjects(a.Objects[i], b.Objects[i]); c != 0 {
			return c
		}
	}
	return 0
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortFields(f []*FieldDiff) {
	sort.SliceStable(f, func(i, j int) bool { return compareFields(f[i], f[j]) < 0 })
}

func sortObjects(o []*ObjectDiff) {
	sort.SliceStable(o, func(i, j int) bool { return compareObjects(o[i], o[j]) < 0 })
}
