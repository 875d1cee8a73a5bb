package jobdiff

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// TestDiffServices: services diff by name as Nomad's "Service" objects
// with "Tags" sets and "Check" objects (by check name, with "Header" and
// "CheckRestart"), at group and task level, and nowhere in the fields.
func TestDiffServices(t *testing.T) {
	svc := func(tags []string, path string) *state.Service {
		return &state.Service{Name: "web", PortLabel: "http", Provider: "nomad", Tags: tags,
			Checks: []*state.ServiceCheck{{Name: "alive", Type: "http", Path: path, Interval: time.Second, Timeout: time.Second,
				Header: map[string][]string{"X-A": {"1"}}}}}
	}
	job := func(group, task *state.Service) *state.Job {
		tg := &state.TaskGroup{Name: "g", Tasks: []*state.Task{{Name: "t"}}}
		if group != nil {
			tg.Services = []*state.Service{group}
		}
		if task != nil {
			tg.Tasks[0].Services = []*state.Service{task}
		}
		return &state.Job{ID: "web", TaskGroups: []*state.TaskGroup{tg}}
	}
	d, err := Diff(job(svc([]string{"v1"}, "/"), nil), job(svc([]string{"v2"}, "/health"), svc(nil, "/")), false)
	if err != nil {
		t.Fatal(err)
	}
	g := d.TaskGroups[0]
	got, _ := json.Marshal(g.Objects)
	want := `[{"Type":"Edited","Name":"Service","Fields":null,"Objects":[` +
		`{"Type":"Edited","Name":"Tags","Fields":[{"Type":"Added","Name":"Tags","Old":"","New":"v2","Annotations":null},{"Type":"Deleted","Name":"Tags","Old":"v1","New":"","Annotations":null}],"Objects":null},` +
		`{"Type":"Edited","Name":"Check","Fields":[{"Type":"Edited","Name":"Path","Old":"/","New":"/health","Annotations":null}],"Objects":null}]}]`
	if string(got) != want || len(g.Fields) != 0 {
		t.Fatalf("group services:\n%s\nwant\n%s\nfields %+v", got, want, g.Fields)
	}
	task, _ := json.Marshal(g.Tasks[0].Objects)
	if !strings.HasPrefix(string(task), `[{"Type":"Added","Name":"Service","Fields":[`) ||
		!strings.Contains(string(task), `{"Type":"Added","Name":"Check","Fields":[`) ||
		!strings.Contains(string(task), `{"Type":"Added","Name":"Header","Fields":[{"Type":"Added","Name":"X-A","Old":"","New":"1","Annotations":null}]`) ||
		len(g.Tasks[0].Fields) != 0 {
		t.Fatalf("task services: %s, fields %+v", task, g.Tasks[0].Fields)
	}
	if d, _ := Diff(job(svc([]string{"v1"}, "/"), nil), job(svc([]string{"v1"}, "/"), nil), false); d.TaskGroups[0].Type != None {
		t.Fatalf("unchanged: %+v", d.TaskGroups[0])
	}
}
