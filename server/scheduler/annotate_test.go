package scheduler

import (
	"reflect"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/jobdiff"
)

func annotateJob() *state.Job {
	return &state.Job{
		ID: "web", Namespace: "default", Type: "service",
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 2,
			Tasks: []*state.Task{{Name: "t", Driver: "mock_driver", Env: map[string]string{"A": "1"},
				KillTimeout: time.Second, Resources: &state.Resources{CPU: 100, MemoryMB: 64}}},
		}},
	}
}

// TestAnnotateDiff: task annotations follow tasksUpdated, Count changes
// force creations or destructions, Updates carry the plan's counts.
func TestAnnotateDiff(t *testing.T) {
	cases := []struct {
		name      string
		edit      func(*state.Job) *state.Job
		task      []string // the task's annotations
		count     []string // the Count field's annotations (nil: no Count field)
		groupType jobdiff.Type
	}{
		{"env forces create/destroy", func(j *state.Job) *state.Job {
			j.TaskGroups[0].Tasks[0].Env = map[string]string{"A": "2"}
			return j
		}, []string{AnnotationForcesDestructiveUpdate}, nil, jobdiff.Edited},
		{"resources force create/destroy", func(j *state.Job) *state.Job {
			j.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 200, MemoryMB: 64}
			return j
		}, []string{AnnotationForcesDestructiveUpdate}, nil, jobdiff.Edited},
		{"kill timeout and signal in place", func(j *state.Job) *state.Job {
			j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute
			j.TaskGroups[0].Tasks[0].KillSignal = "SIGINT"
			return j
		}, []string{AnnotationForcesInplaceUpdate}, nil, jobdiff.Edited},
		{"count up", func(j *state.Job) *state.Job {
			j.TaskGroups[0].Count = 3
			return j
		}, nil, []string{AnnotationForcesCreate}, jobdiff.Edited},
		{"count down", func(j *state.Job) *state.Job {
			j.TaskGroups[0].Count = 1
			return j
		}, nil, []string{AnnotationForcesDestroy}, jobdiff.Edited},
		{"new job", func(j *state.Job) *state.Job { return j }, []string{AnnotationForcesCreate}, []string{AnnotationForcesCreate}, jobdiff.Added},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := annotateJob()
			new := c.edit(annotateJob())
			if c.groupType == jobdiff.Added {
				old = nil
			}
			d, err := jobdiff.Diff(old, new, true)
			if err != nil {
				t.Fatal(err)
			}
			ann := &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{"g": {Place: 1, Ignore: 2, DestructiveUpdate: 3}}}
			if err := Annotate(d, old, new, ann); err != nil {
				t.Fatal(err)
			}
			g := d.TaskGroups[0]
			if g.Type != c.groupType {
				t.Errorf("group type %s", g.Type)
			}
			if want := map[string]uint64{"create": 1, "ignore": 2, "create/destroy update": 3}; !reflect.DeepEqual(g.Updates, want) {
				t.Errorf("updates %v", g.Updates)
			}
			if got := g.Tasks[0].Annotations; !reflect.DeepEqual(got, c.task) {
				t.Errorf("task annotations %v, want %v", got, c.task)
			}
			var count []string
			for _, f := range g.Fields {
				if f.Name == "Count" {
					count = f.Annotations
				}
			}
			if !reflect.DeepEqual(count, c.count) {
				t.Errorf("count annotations %v, want %v", count, c.count)
			}
		})
	}
}

// TestAnnotateGroupMetaTaskUntouched: a task whose own diff is None gets no
// annotation even when the group changed.
func TestAnnotateGroupMetaTaskUntouched(t *testing.T) {
	old, new := annotateJob(), annotateJob()
	new.TaskGroups[0].Tasks = append(new.TaskGroups[0].Tasks, &state.Task{Name: "u", Driver: "mock_driver"})
	d, err := jobdiff.Diff(old, new, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := Annotate(d, old, new, nil); err != nil {
		t.Fatal(err)
	}
	tasks := d.TaskGroups[0].Tasks
	if tasks[0].Name != "t" || tasks[0].Annotations != nil || tasks[1].Name != "u" ||
		!reflect.DeepEqual(tasks[1].Annotations, []string{AnnotationForcesDestructiveUpdate}) || d.TaskGroups[0].Updates != nil {
		t.Fatalf("tasks %+v %+v", tasks[0], tasks[1])
	}
}
