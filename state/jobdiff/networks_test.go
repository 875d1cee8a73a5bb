package jobdiff

import (
	"encoding/json"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// TestDiffNetworks: a group's network diffs as Nomad's "Network" objects
// with "Static Port" and "Dynamic Port" objects (a dynamic port's Value
// left out); a changed network is one Deleted and one Added network.
func TestDiffNetworks(t *testing.T) {
	job := func(nets ...*state.NetworkResource) *state.Job {
		return &state.Job{ID: "web", TaskGroups: []*state.TaskGroup{{Name: "g", Networks: nets}}}
	}
	web := &state.NetworkResource{Mode: "host",
		ReservedPorts: []state.Port{{Label: "db", Value: 5432, To: 5432, HostNetwork: "default"}},
		DynamicPorts:  []state.Port{{Label: "http", HostNetwork: "default"}}}
	d, err := Diff(job(), job(web), false)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(d.TaskGroups[0].Objects)
	want := `[{"Type":"Added","Name":"Network","Fields":[{"Type":"Added","Name":"Mode","Old":"","New":"host","Annotations":null}],"Objects":[` +
		`{"Type":"Added","Name":"Static Port","Fields":[` +
		`{"Type":"Added","Name":"HostNetwork","Old":"","New":"default","Annotations":null},` +
		`{"Type":"Added","Name":"Label","Old":"","New":"db","Annotations":null},` +
		`{"Type":"Added","Name":"To","Old":"","New":"5432","Annotations":null},` +
		`{"Type":"Added","Name":"Value","Old":"","New":"5432","Annotations":null}],"Objects":null},` +
		`{"Type":"Added","Name":"Dynamic Port","Fields":[` +
		`{"Type":"Added","Name":"HostNetwork","Old":"","New":"default","Annotations":null},` +
		`{"Type":"Added","Name":"Label","Old":"","New":"http","Annotations":null},` +
		`{"Type":"Added","Name":"To","Old":"","New":"0","Annotations":null}],"Objects":null}]}]`
	if string(got) != want {
		t.Fatalf("added network:\n%s\nwant\n%s", got, want)
	}
	if len(d.TaskGroups[0].Fields) != 0 || d.TaskGroups[0].Type != Edited {
		t.Fatalf("group %+v", d.TaskGroups[0])
	}

	moved := *web
	moved.ReservedPorts = []state.Port{{Label: "db", Value: 6432, To: 5432, HostNetwork: "default"}}
	d, err = Diff(job(web), job(&moved), false)
	if err != nil {
		t.Fatal(err)
	}
	objs := d.TaskGroups[0].Objects
	if len(objs) != 2 || objs[0].Name != "Network" || objs[0].Type != Added || objs[1].Type != Deleted {
		t.Fatalf("changed network %+v", objs)
	}
	if d, err := Diff(job(web), job(web), true); err != nil || d.Type != None || len(d.TaskGroups[0].Objects) != 0 {
		t.Fatalf("unchanged: %v %+v", err, d)
	}
}
