package jobdiff

import (
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// TestDiffConstraints: constraints diff as sets at every level: a changed
// one is a Deleted and an Added "Constraint" object, an unchanged one is
// left out, even in a contextual diff.
func TestDiffConstraints(t *testing.T) {
	c := func(l, op, r string) *state.Constraint { return &state.Constraint{LTarget: l, Operand: op, RTarget: r} }
	job := func(rack string) *state.Job {
		return &state.Job{ID: "web", Constraints: []*state.Constraint{c("${attr.kernel.name}", "=", "linux")},
			TaskGroups: []*state.TaskGroup{{Name: "g", Constraints: []*state.Constraint{c("${meta.rack}", "=", rack)},
				Tasks: []*state.Task{{Name: "t", Constraints: []*state.Constraint{c("${attr.cpu.arch}", "=", "amd64")}}}}}}
	}
	d, err := Diff(job("r1"), job("r2"), true)
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != Edited || len(d.Objects) != 0 {
		t.Fatalf("job: %s, objects %+v (an unchanged job constraint is left out)", d.Type, d.Objects)
	}
	g := d.TaskGroups[0]
	if g.Type != Edited || len(g.Objects) != 2 {
		t.Fatalf("group: %s, %d objects", g.Type, len(g.Objects))
	}
	add, del := g.Objects[0], g.Objects[1] // sorted by type, as Nomad's ObjectDiffs
	if del.Type != Deleted || del.Name != "Constraint" || add.Type != Added || add.Name != "Constraint" {
		t.Fatalf("group objects %+v %+v", del, add)
	}
	fields := map[string][2]string{}
	for _, f := range append(del.Fields, add.Fields...) {
		v := fields[f.Name]
		if f.Old != "" {
			v[0] = f.Old
		}
		if f.New != "" {
			v[1] = f.New
		}
		fields[f.Name] = v
	}
	if fields["RTarget"] != [2]string{"r1", "r2"} || fields["LTarget"] != [2]string{"${meta.rack}", "${meta.rack}"} || fields["Operand"] != [2]string{"=", "="} {
		t.Fatalf("fields %v", fields)
	}
	if tk := g.Tasks[0]; tk.Type != None || len(tk.Objects) != 0 {
		t.Fatalf("task: %s %+v", tk.Type, tk.Objects)
	}

	// A task constraint added: one Added object on the task.
	b := job("r1")
	b.TaskGroups[0].Tasks[0].Constraints = append(b.TaskGroups[0].Tasks[0].Constraints, c("${attr.os.name}", "=", "ubuntu"))
	d, err = Diff(job("r1"), b, false)
	if err != nil {
		t.Fatal(err)
	}
	if tk := d.TaskGroups[0].Tasks[0]; tk.Type != Edited || len(tk.Objects) != 1 || tk.Objects[0].Type != Added {
		t.Fatalf("task %+v", tk)
	}
}

// TestDiffAffinitiesAndSpreads: affinities and spreads diff as object
// sets too; a spread carries its targets as nested objects.
func TestDiffAffinitiesAndSpreads(t *testing.T) {
	base := func() *state.Job {
		return &state.Job{ID: "web", Affinities: []*state.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: 50}},
			TaskGroups: []*state.TaskGroup{{Name: "g"}}}
	}
	b := base()
	b.Affinities[0] = &state.Affinity{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: -50}
	b.TaskGroups[0].Spreads = []*state.Spread{{Attribute: "${node.datacenter}", Weight: 50, SpreadTarget: []*state.SpreadTarget{{Value: "dc1", Percent: 70}}}}
	d, err := Diff(base(), b, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Objects) != 2 || d.Objects[0].Name != "Affinity" || d.Objects[0].Type != Added || d.Objects[1].Type != Deleted {
		t.Fatalf("job objects %+v", d.Objects)
	}
	g := d.TaskGroups[0]
	if len(g.Objects) != 1 || g.Objects[0].Name != "Spread" || g.Objects[0].Type != Added ||
		len(g.Objects[0].Objects) != 1 || g.Objects[0].Objects[0].Name != "SpreadTarget" || g.Objects[0].Objects[0].Type != Added {
		t.Fatalf("group objects %+v", g.Objects)
	}
	// Unchanged: nothing.
	if d, err := Diff(base(), base(), true); err != nil || len(d.Objects) != 0 || d.Type != None {
		t.Fatalf("unchanged: %v %+v", err, d)
	}
}
