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
