package scheduler

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// inplaceCase is one change between two versions of a job and which side of
// Nomad's tasksUpdated it falls on.
type inplaceCase struct {
	// fields are the struct fields the case covers, as "Type.Field".
	fields      []string
	name        string
	change      func(j *state.Job)
	destructive bool
}

// baseInplaceJob has every field of a group and a task set, so that a case
// may change, add or remove each.
func baseInplaceJob() *state.Job {
	return &state.Job{
		Namespace: "default", ID: "web", Name: "web", Type: state.JobTypeService,
		Datacenters: []string{"dc1"},
		Meta:        map[string]string{"owner": "ops"},
		TaskGroups: []*state.TaskGroup{{
			Name:             "web",
			Count:            2,
			Update:           &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthChecks, MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute},
			RestartPolicy:    &state.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"},
			ReschedulePolicy: &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true},
			Migrate:          &state.MigrateStrategy{MaxParallel: 1, HealthCheck: state.MigrateHealthChecks, MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute},
			Meta:             map[string]string{"tier": "front"},
			Tasks: []*state.Task{{
				Name: "app", Driver: "mock_driver",
				Config:      map[string]any{"run_for": "1h"},
				Env:         map[string]string{"PORT": "8080"},
				Meta:        map[string]string{"build": "1"},
				Resources:   &state.Resources{CPU: 100, MemoryMB: 64},
				KillTimeout: 5 * time.Second,
				KillSignal:  "SIGTERM",
			}, {
				Name: "sidecar", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &state.Resources{CPU: 50, MemoryMB: 32},
			}},
		}},
	}
}

// deepCopyJob copies the job through reflection so that a case may change
// any nested value without touching the base.
func deepCopyJob(j *state.Job) *state.Job {
	return deepCopy(reflect.ValueOf(j)).Interface().(*state.Job)
}

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Elem().Type())
		out.Elem().Set(deepCopy(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			out.Field(i).Set(deepCopy(v.Field(i)))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for _, k := range v.MapKeys() {
			out.SetMapIndex(k, deepCopy(v.MapIndex(k)))
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(deepCopy(v.Elem()))
		return out
	}
	return v
}

func group(j *state.Job) *state.TaskGroup { return j.TaskGroups[0] }
func task(j *state.Job) *state.Task       { return j.TaskGroups[0].Tasks[0] }

// changeEveryField returns cases that change each field of a block one at a
// time (all on the same side): a field added to the block later is covered
// by the same rule without a new row.
func changeEveryField(typ string, sample any, get func(j *state.Job) reflect.Value, destructive bool, why string) []inplaceCase {
	var out []inplaceCase
	rt := reflect.TypeOf(sample)
	for i := range rt.NumField() {
		f := rt.Field(i)
		out = append(out, inplaceCase{
			fields: []string{typ + "." + f.Name},
			name:   typ + "." + f.Name + ": " + why,
			change: func(j *state.Job) {
				fv := get(j).Field(i)
				switch fv.Kind() {
				case reflect.Bool:
					fv.SetBool(!fv.Bool())
				case reflect.Int, reflect.Int64:
					fv.SetInt(fv.Int() + 7)
				case reflect.String:
					fv.SetString(fv.String() + "x")
				default:
					panic("changeEveryField: unhandled kind " + fv.Kind().String() + " of " + f.Name)
				}
			},
			destructive: destructive,
		})
	}
	return out
}

func inplaceCases() []inplaceCase {
	cases := []inplaceCase{
		// TaskGroup
		{[]string{"TaskGroup.Name"}, "group Name is the group's identity: a version without the group replaces its allocations", func(j *state.Job) { group(j).Name = "api" }, true},
		{[]string{"TaskGroup.Count"}, "group Count is a scale change: running allocations stay and move in place", func(j *state.Job) { group(j).Count = 5 }, false},
		{[]string{"TaskGroup.Update"}, "group update block added or removed is applied in place (Nomad never compares it)", func(j *state.Job) { group(j).Update = nil }, false},
		{[]string{"TaskGroup.RestartPolicy"}, "group restart policy removed is applied in place (Nomad compares only render_templates, which we do not have)", func(j *state.Job) { group(j).RestartPolicy = nil }, false},
		{[]string{"TaskGroup.ReschedulePolicy"}, "group reschedule policy removed is applied in place (the scheduler reads it; tasks never see it)", func(j *state.Job) { group(j).ReschedulePolicy = nil }, false},
		{[]string{"TaskGroup.Migrate"}, "group migrate block removed is applied in place (the drainer reads it; tasks never see it)", func(j *state.Job) { group(j).Migrate = nil }, false},
		{[]string{"TaskGroup.MaxClientDisconnect"}, "group max_client_disconnect is applied in place (the scheduler reads it; tasks never see it)", func(j *state.Job) { d := time.Minute; group(j).MaxClientDisconnect = &d }, false},
		{[]string{"TaskGroup.Meta"}, "group Meta is part of every task's combined meta (CombinedTaskMeta): destructive", func(j *state.Job) { group(j).Meta["tier"] = "back" }, true},
		{[]string{"TaskGroup.Meta"}, "group Meta key added is destructive", func(j *state.Job) { group(j).Meta["zone"] = "a" }, true},
		{[]string{"TaskGroup.Tasks"}, "group Tasks: a task added changes the number of tasks (destructive)", func(j *state.Job) {
			group(j).Tasks = append(group(j).Tasks, &state.Task{Name: "log", Driver: "mock_driver"})
		}, true},
		{[]string{"TaskGroup.Tasks"}, "group Tasks: a task removed changes the number of tasks (destructive)", func(j *state.Job) { group(j).Tasks = group(j).Tasks[:1] }, true},
		{[]string{"TaskGroup.Tasks"}, "group Tasks in another order are the same tasks (looked up by name): in place", func(j *state.Job) {
			ts := group(j).Tasks
			ts[0], ts[1] = ts[1], ts[0]
		}, false},

		{[]string{"TaskGroup.Constraints"}, "group Constraints are not compared by tasksUpdated (Nomad re-checks the allocation's node instead): in place", func(j *state.Job) {
			group(j).Constraints = []*state.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}
		}, false},

		{[]string{"TaskGroup.Affinities"}, "group Affinities are destructive (Nomad's affinitiesUpdated)", func(j *state.Job) {
			group(j).Affinities = []*state.Affinity{{LTarget: "${node.class}", RTarget: "big", Operand: "=", Weight: 50}}
		}, true},

		{[]string{"TaskGroup.Spreads"}, "group Spreads are destructive (Nomad's spreadsUpdated)", func(j *state.Job) {
			group(j).Spreads = []*state.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
		}, true},

		{[]string{"TaskGroup.Networks"}, "a group network change is destructive (Nomad's networkUpdated)", func(j *state.Job) {
			group(j).Networks = []*state.NetworkResource{{Mode: "host", DynamicPorts: []state.Port{{Label: "http", HostNetwork: "default"}}}}
		}, true},

		{[]string{"TaskGroup.Services"}, "group services are applied in place (Nomad: only Connect services are destructive)", func(j *state.Job) {
			group(j).Services = []*state.Service{{Name: "web", Provider: "nomad", Tags: []string{"v2"}}}
		}, false},

		// Task
		{[]string{"Task.Services"}, "task services are applied in place (Nomad: only Connect services are destructive)", func(j *state.Job) {
			task(j).Services = []*state.Service{{Name: "web", Provider: "nomad"}}
		}, false},
		{[]string{"Task.Name"}, "task Name renamed: the old task is deleted (destructive)", func(j *state.Job) { task(j).Name = "server" }, true},
		{[]string{"Task.Driver"}, "task Driver is destructive", func(j *state.Job) { task(j).Driver = "raw_exec" }, true},
		{[]string{"Task.Config"}, "task Config is destructive", func(j *state.Job) { task(j).Config["run_for"] = "2h" }, true},
		{[]string{"Task.Env"}, "task Env is destructive", func(j *state.Job) { task(j).Env["PORT"] = "9090" }, true},
		{[]string{"Task.Env"}, "task Env nil and empty are equal: in place", func(j *state.Job) { j.TaskGroups[0].Tasks[1].Env = map[string]string{} }, false},
		{[]string{"Task.Meta"}, "task Meta is destructive", func(j *state.Job) { task(j).Meta["build"] = "2" }, true},
		{[]string{"Task.Resources"}, "task Resources removed (asks for nothing) is destructive", func(j *state.Job) { task(j).Resources = nil }, true},
		{[]string{"Task.KillTimeout"}, "task KillTimeout is applied in place (Nomad never compares it)", func(j *state.Job) { task(j).KillTimeout = time.Minute }, false},
		{[]string{"Task.Constraints"}, "task Constraints are not compared by tasksUpdated (the node is re-checked): in place", func(j *state.Job) {
			task(j).Constraints = []*state.Constraint{{LTarget: "${meta.rack}", Operand: "is_set"}}
		}, false},
		{[]string{"Task.Affinities"}, "task Affinities are destructive (Nomad's affinitiesUpdated)", func(j *state.Job) {
			task(j).Affinities = []*state.Affinity{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "=", Weight: -20}}
		}, true},
		{[]string{"Task.KillSignal"}, "task KillSignal is applied in place (Nomad never compares it)", func(j *state.Job) { task(j).KillSignal = "SIGINT" }, false},

		// Resources
		{[]string{"Resources.CPU"}, "task CPU is destructive", func(j *state.Job) { task(j).Resources.CPU = 200 }, true},
		{[]string{"Resources.MemoryMB"}, "task MemoryMB is destructive", func(j *state.Job) { task(j).Resources.MemoryMB = 128 }, true},

		// Job fields that reach a group
		{nil, "job Meta is part of every task's combined meta: destructive", func(j *state.Job) { j.Meta["owner"] = "dev" }, true},
		{nil, "job update block is applied in place", func(j *state.Job) { j.Update = &state.UpdateStrategy{MaxParallel: 3} }, false},
		{nil, "job Priority is applied in place", func(j *state.Job) { j.Priority = 90 }, false},
		{nil, "nothing changed: in place (or ignored when the version is the same)", func(j *state.Job) {}, false},
	}
	cases = append(cases, changeEveryField("UpdateStrategy", state.UpdateStrategy{},
		func(j *state.Job) reflect.Value { return reflect.ValueOf(group(j).Update).Elem() }, false,
		"every field of the update block is applied in place (deployments use it; tasks never see it)")...)
	cases = append(cases, changeEveryField("ReschedulePolicy", state.ReschedulePolicy{},
		func(j *state.Job) reflect.Value { return reflect.ValueOf(group(j).ReschedulePolicy).Elem() }, false,
		"every field of the reschedule policy is applied in place (Nomad never compares it)")...)
	cases = append(cases, changeEveryField("MigrateStrategy", state.MigrateStrategy{},
		func(j *state.Job) reflect.Value { return reflect.ValueOf(group(j).Migrate).Elem() }, false,
		"every field of the migrate block is applied in place (Nomad's tasksUpdated never compares it)")...)
	cases = append(cases, changeEveryField("RestartPolicy", state.RestartPolicy{},
		func(j *state.Job) reflect.Value { return reflect.ValueOf(group(j).RestartPolicy).Elem() }, false,
		"every field of the restart policy is applied in place (the client restarts by the new one)")...)
	return cases
}

// Equivalences of Nomad's comparisons: meta is compared merged (job, then
// group, then task), and empty maps equal missing ones.
func TestTasksUpdatedEquivalences(t *testing.T) {
	a := baseInplaceJob()
	a.TaskGroups[0].Tasks[1].Meta = map[string]string{"tier": "side"}
	a.TaskGroups[0].Tasks[0].Meta["tier"] = "app"
	b := deepCopyJob(a)
	group(b).Meta["tier"] = "back" // every task overrides "tier"
	if c := tasksUpdated(a, b, "web"); c.modified {
		t.Fatalf("group meta key every task overrides: %s, want in place", c)
	}
	b.Meta["tier"] = "x" // the job's, overridden by the group's
	if c := tasksUpdated(a, b, "web"); c.modified {
		t.Fatalf("job meta key the group overrides: %s, want in place", c)
	}
	b.Meta["region"] = "eu"
	if c := tasksUpdated(a, b, "web"); !c.modified || c.label != "task meta" {
		t.Fatalf("job meta key added: %s, want task meta destructive", c)
	}

	a, b = baseInplaceJob(), baseInplaceJob()
	a.TaskGroups[0].Tasks[1].Config, b.TaskGroups[0].Tasks[1].Config = nil, map[string]any{}
	group(a).Meta, group(b).Meta = nil, map[string]string{}
	a.TaskGroups[0].Tasks[1].Resources, b.TaskGroups[0].Tasks[1].Resources = nil, &state.Resources{}
	if c := tasksUpdated(a, b, "web"); c.modified {
		t.Fatalf("nil against empty config, meta and resources: %s, want in place", c)
	}
}

// Every field of a group, a task and its resources has a row naming on
// which side of Nomad's rule it falls; a field added to the model without a
// row fails here.
func TestTasksUpdatedCoversEveryField(t *testing.T) {
	cases := inplaceCases()
	covered := map[string]bool{}
	for _, c := range cases {
		for _, f := range c.fields {
			covered[f] = true
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(state.TaskGroup{}), reflect.TypeOf(state.Task{}), reflect.TypeOf(state.Resources{})} {
		for i := range typ.NumField() {
			if name := typ.Name() + "." + typ.Field(i).Name; !covered[name] {
				t.Errorf("%s has no in-place/destructive row in inplaceCases", name)
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := baseInplaceJob()
			b := deepCopyJob(a)
			c.change(b)
			if !reflect.DeepEqual(baseInplaceJob(), a) {
				t.Fatal("the case changed the base job")
			}
			got := tasksUpdated(a, b, "web")
			if got.modified != c.destructive {
				t.Fatalf("destructive=%v (%s), want %v", got.modified, got, c.destructive)
			}
			// The rule is symmetric: going back is the same kind of change.
			if back := tasksUpdated(b, a, "web"); back.modified != c.destructive {
				t.Fatalf("reverse: destructive=%v (%s), want %v", back.modified, back, c.destructive)
			}
			if got.modified && (got.label == "" || !strings.Contains(got.String(), "changed")) {
				t.Fatalf("destructive without a label: %q", got.String())
			}
		})
	}
}
