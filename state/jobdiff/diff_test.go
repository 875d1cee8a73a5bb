package jobdiff

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

func baseJob() *state.Job {
	return &state.Job{
		Region: "global", Namespace: "default", ID: "web", Name: "web", Type: "service", Priority: 50,
		Datacenters: []string{"dc1"}, Meta: map[string]string{"owner": "ops"},
		Status: "running", Version: 3, JobModifyIndex: 40, CreateIndex: 10, ModifyIndex: 41, SubmitTime: 99,
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 2,
			Update:        &state.UpdateStrategy{Stagger: 30 * time.Second, MaxParallel: 1, HealthCheck: "checks"},
			RestartPolicy: &state.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			Tasks: []*state.Task{{
				Name: "t", Driver: "mock_driver", KillTimeout: 5 * time.Second,
				Config:    map[string]any{"run_for": "1h", "args": []any{"-v"}, "opts": map[string]any{"a": 1.0}},
				Env:       map[string]string{"PORT": "8080"},
				Resources: &state.Resources{CPU: 100, MemoryMB: 300},
			}},
		}},
	}
}

// deepCopy copies a job through JSON (the diff must not see shared maps).
func deepCopy(t *testing.T, j *state.Job) *state.Job {
	t.Helper()
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var out state.Job
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// render prints a diff compactly, one line per field and object, so that
// expectations read as Nomad's GoString does.
func render(d *JobDiff) string {
	var b strings.Builder
	b.WriteString("Job " + d.ID + " " + string(d.Type) + "\n")
	fields(&b, "  ", d.Fields)
	objects(&b, "  ", d.Objects)
	for _, g := range d.TaskGroups {
		b.WriteString("  Group " + g.Name + " " + string(g.Type) + "\n")
		fields(&b, "    ", g.Fields)
		objects(&b, "    ", g.Objects)
		for _, t := range g.Tasks {
			b.WriteString("    Task " + t.Name + " " + string(t.Type) + "\n")
			fields(&b, "      ", t.Fields)
			objects(&b, "      ", t.Objects)
		}
	}
	return b.String()
}

func fields(b *strings.Builder, ind string, fs []*FieldDiff) {
	for _, f := range fs {
		b.WriteString(ind + f.Name + " " + string(f.Type) + " " + f.Old + "=>" + f.New)
		if len(f.Annotations) > 0 {
			b.WriteString(" (" + strings.Join(f.Annotations, ",") + ")")
		}
		b.WriteString("\n")
	}
}

func objects(b *strings.Builder, ind string, os []*ObjectDiff) {
	for _, o := range os {
		b.WriteString(ind + "{" + o.Name + " " + string(o.Type) + "\n")
		fields(b, ind+"  ", o.Fields)
		objects(b, ind+"  ", o.Objects)
	}
}

// TestDiffTable: added, deleted, edited and unchanged jobs over every
// diffed field, contextual as Nomad's plan asks.
func TestDiffTable(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(old, new *state.Job) (*state.Job, *state.Job)
		expect string
	}{
		{"bookkeeping only is None", func(o, n *state.Job) (*state.Job, *state.Job) {
			n.Version, n.Status, n.JobModifyIndex, n.SubmitTime, n.Stable = 4, "pending", 50, 100, true
			return o, n
		}, "Job web None\n  Group g None\n    Task t None\n"},
		{"job fields, meta keys, datacenters", func(o, n *state.Job) (*state.Job, *state.Job) {
			n.Priority = 70
			n.Meta = map[string]string{"owner": "dev", "team": "x"}
			n.Datacenters = []string{"dc2", "dc1"}
			return o, n
		}, `Job web Edited
  Meta[owner] Edited ops=>dev
  Meta[team] Added =>x
  Priority Edited 50=>70
  {Datacenters Added
    Datacenters Added =>dc2
    Datacenters None dc1=>dc1
  Group g None
    Task t None
`},
		{"group count, blocks and task fields", func(o, n *state.Job) (*state.Job, *state.Job) {
			g := n.TaskGroups[0]
			g.Count = 3
			g.Update.MaxParallel = 2
			g.RestartPolicy.Attempts = 5
			tk := g.Tasks[0]
			tk.Env = map[string]string{"PORT": "9090", "DEBUG": "1"}
			tk.Config["opts"] = map[string]any{"a": 2.0}
			tk.Resources.CPU = 200
			tk.KillSignal = "SIGINT"
			return o, n
		}, `Job web Edited
  Group g Edited
    Count Edited 2=>3
    {RestartPolicy Edited
      Attempts Edited 2=>5
      Delay None 1000000000=>1000000000
      Interval None 60000000000=>60000000000
      Mode None fail=>fail
    {Update Edited
      AutoPromote None false=>false
      AutoRevert None false=>false
      Canary None 0=>0
      HealthCheck None checks=>checks
      HealthyDeadline None 0=>0
      MaxParallel Edited 1=>2
      MinHealthyTime None 0=>0
      ProgressDeadline None 0=>0
    Task t Edited
      Env[DEBUG] Added =>1
      Env[PORT] Edited 8080=>9090
      KillSignal Added =>SIGINT
      {Config Edited
        args[0] None -v=>-v
        opts[a] Edited 1=>2
        run_for None 1h=>1h
      {Resources Edited
        CPU Edited 100=>200
        MemoryMB None 300=>300
`},
		{"group and task added and deleted", func(o, n *state.Job) (*state.Job, *state.Job) {
			n.TaskGroups[0].Tasks = append(n.TaskGroups[0].Tasks, &state.Task{Name: "side", Driver: "raw_exec"})
			n.TaskGroups = append(n.TaskGroups, &state.TaskGroup{Name: "api", Count: 1})
			o.TaskGroups = append(o.TaskGroups, &state.TaskGroup{Name: "old", Count: 1, Meta: map[string]string{"k": "v"}})
			return o, n
		}, `Job web Edited
  Group api Added
    Count Added =>1
  Group g Edited
    Task side Added
      Driver Added =>raw_exec
      KillTimeout Added =>0
    Task t None
  Group old Deleted
    Count Deleted 1=>
    Meta[k] Deleted v=>
`},
		{"new job", func(o, n *state.Job) (*state.Job, *state.Job) {
			n.TaskGroups[0].RestartPolicy = nil
			n.TaskGroups[0].Update = nil
			n.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "1h"}
			n.TaskGroups[0].Tasks[0].Env = nil
			return nil, n
		}, `Job web Added
  Meta[owner] Added =>ops
  Name Added =>web
  Namespace Added =>default
  Priority Added =>50
  Region Added =>global
  Stop Added =>false
  Type Added =>service
  {Datacenters Added
    Datacenters Added =>dc1
  Group g Added
    Count Added =>2
    Task t Added
      Driver Added =>mock_driver
      KillTimeout Added =>5000000000
      {Config Added
        run_for Added =>1h
      {Resources Added
        CPU Added =>100
        MemoryMB Added =>300
`},
		{"deleted job", func(o, n *state.Job) (*state.Job, *state.Job) {
			o.TaskGroups = nil
			o.Meta = nil
			return o, nil
		}, `Job web Deleted
  Name Deleted web=>
  Namespace Deleted default=>
  Priority Deleted 50=>
  Region Deleted global=>
  Stop Deleted false=>
  Type Deleted service=>
  {Datacenters Deleted
    Datacenters Deleted dc1=>
`},
		{"multiregion added", func(o, n *state.Job) (*state.Job, *state.Job) {
			one := 1
			n.Multiregion = &state.Multiregion{
				Strategy: &state.MultiregionStrategy{MaxParallel: 1, OnFailure: "fail_all"},
				Regions:  []*state.MultiregionRegion{{Name: "east", Count: &one, Datacenters: []string{"e1"}}},
			}
			return o, n
		}, `Job web Edited
  {Multiregion Added
    {Region Added
      Count Added =>1
      Name Added =>east
      {Datacenters Added
        Datacenters Added =>e1
    {Strategy Edited
      MaxParallel Edited 0=>1
      OnFailure Added =>fail_all
  Group g None
    Task t None
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, new := c.edit(deepCopy(t, baseJob()), deepCopy(t, baseJob()))
			// JSON turns the config's numbers into float64, as the parser does.
			d, err := Diff(old, new, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(d); got != c.expect {
				t.Errorf("diff:\n%s\nwant:\n%s", got, c.expect)
			}
		})
	}
}

// TestDiffNotContextual: without context an edited block shows only what
// changed, and a set that did not change is left out.
func TestDiffNotContextual(t *testing.T) {
	old, new := deepCopy(t, baseJob()), deepCopy(t, baseJob())
	new.TaskGroups[0].Tasks[0].Resources.MemoryMB = 512
	d, err := Diff(old, new, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "Job web Edited\n  Group g Edited\n    Task t Edited\n      {Resources Edited\n        MemoryMB Edited 300=>512\n"
	if got := render(d); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
}

func TestDiffDifferentIDs(t *testing.T) {
	other := baseJob()
	other.ID = "api"
	if _, err := Diff(baseJob(), other, true); err == nil || err.Error() != `can not diff jobs with different IDs: "web" and "api"` {
		t.Fatalf("err = %v", err)
	}
	if d, err := Diff(nil, nil, true); err != nil || d.Type != None {
		t.Fatalf("nil, nil: %+v %v", d, err)
	}
}

// TestFlatten: Nomad's flatmap keys for nested configs and primitive-only walks.
func TestFlatten(t *testing.T) {
	cfg := map[string]any{
		"args": []any{"a", "b"}, "ports": []any{map[string]any{"http": 80.0}},
		"none": nil, "flag": true, "empty": []any(nil),
	}
	want := map[string]string{
		"args[0]": "a", "args[1]": "b", "ports[0][http]": "80", "none": "nil", "flag": "true", "empty": "nil",
	}
	if got := flatten(cfg, nil, false); !reflect.DeepEqual(got, want) {
		t.Errorf("config: %v", got)
	}
	task := &state.Task{Name: "t", Driver: "d", Config: cfg, Env: map[string]string{"A": "1"}, Resources: &state.Resources{CPU: 1}}
	want = map[string]string{"Driver": "d", "Env[A]": "1", "KillTimeout": "0", "KillSignal": ""}
	if got := flatten(task, []string{"Name"}, true); !reflect.DeepEqual(got, want) {
		t.Errorf("task: %v", got)
	}
	if flatten(nil, nil, true) != nil {
		t.Error("nil flattens to a map")
	}
}
