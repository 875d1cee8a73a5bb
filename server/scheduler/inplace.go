package scheduler

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/ctlplane/ctlplane/state"
)

// comparison is the first destructive difference tasksUpdated found between
// two versions of a group (modified false: none), with what differed, for
// debugging (Nomad's shape).
type comparison struct {
	modified      bool
	label         string
	before, after any
}

func difference(label string, before, after any) comparison {
	return comparison{modified: true, label: label, before: before, after: after}
}

func (c comparison) String() string {
	if !c.modified {
		return "no destructive change"
	}
	return fmt.Sprintf("%s changed; before: %#v, after: %#v", c.label, c.before, c.after)
}

// same: no destructive difference.
var same = comparison{}

// tasksUpdated says whether group taskGroup must be replaced (a destructive
// update) to go from jobA's version to jobB's, as Nomad's tasksUpdated
// (scheduler/util.go): what a running task cannot take on without being
// restarted from scratch. Tasks (their number and names), driver, config,
// env, resources and the meta a task sees (job, group and task meta merged)
// are destructive. Everything else of our model — the update block, the
// restart policy, kill timeout and signal, Count — is applied in place:
// the allocation keeps its ID and moves to the new version.
func tasksUpdated(jobA, jobB *state.Job, taskGroup string) comparison {
	a, b := jobA.LookupTaskGroup(taskGroup), jobB.LookupTaskGroup(taskGroup)
	if a == nil || b == nil {
		return difference("task group", a != nil, b != nil)
	}
	if la, lb := len(a.Tasks), len(b.Tasks); la != lb {
		return difference("number of tasks", la, lb)
	}
	if aa, ba := allAffinities(jobA, a), allAffinities(jobB, b); !reflect.DeepEqual(aa, ba) {
		return difference("affinities", aa, ba)
	}
	// Nomad's spreadsUpdated: the job's and the group's spreads.
	if sa, sb := append(append([]*state.Spread(nil), jobA.Spreads...), a.Spreads...), append(append([]*state.Spread(nil), jobB.Spreads...), b.Spreads...); !reflect.DeepEqual(sa, sb) {
		return difference("spreads", sa, sb)
	}
	// Nomad's networkUpdated: any change of the group's network (mode,
	// ports, labels, to) needs new ports, so a new allocation.
	if !reflect.DeepEqual(a.Networks, b.Networks) {
		return difference("network", a.Networks, b.Networks)
	}
	for _, at := range a.Tasks {
		bt := lookupTask(b, at.Name)
		if bt == nil {
			return difference("task deleted", at.Name, "(nil)")
		}
		if c := taskUpdated(jobA, a, at, jobB, b, bt); c.modified {
			return c
		}
	}
	return same
}

// taskUpdated is tasksUpdated's rule for one task present in both versions.
func taskUpdated(jobA *state.Job, a *state.TaskGroup, at *state.Task, jobB *state.Job, b *state.TaskGroup, bt *state.Task) comparison {
	if at.Driver != bt.Driver {
		return difference("task driver", at.Driver, bt.Driver)
	}
	if !opaqueMapsEqual(at.Config, bt.Config) {
		return difference("task config", at.Config, bt.Config)
	}
	if !maps.Equal(at.Env, bt.Env) {
		return difference("task env", at.Env, bt.Env)
	}
	ma, mb := combinedTaskMeta(jobA, a, at), combinedTaskMeta(jobB, b, bt)
	if !maps.Equal(ma, mb) {
		return difference("task meta", ma, mb)
	}
	return resourcesUpdated(at.Resources, bt.Resources)
}

// resourcesUpdated compares what a task asks for (nil asks for nothing).
func resourcesUpdated(a, b *state.Resources) comparison {
	var ra, rb state.Resources
	if a != nil {
		ra = *a
	}
	if b != nil {
		rb = *b
	}
	switch {
	case ra.CPU != rb.CPU:
		return difference("task cpu", ra.CPU, rb.CPU)
	case ra.MemoryMB != rb.MemoryMB:
		return difference("task memory", ra.MemoryMB, rb.MemoryMB)
	}
	return same
}

func lookupTask(tg *state.TaskGroup, name string) *state.Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// combinedTaskMeta is the meta a task sees: the job's, overridden by the
// group's, overridden by the task's (Nomad's Job.CombinedTaskMeta). So a
// group meta key a task overrides changes nothing for that task.
func combinedTaskMeta(job *state.Job, tg *state.TaskGroup, t *state.Task) map[string]string {
	out := make(map[string]string, len(job.Meta)+len(tg.Meta)+len(t.Meta))
	maps.Copy(out, job.Meta)
	maps.Copy(out, tg.Meta)
	maps.Copy(out, t.Meta)
	return out
}

// opaqueMapsEqual compares driver configs: empty and nil are the same
// (Nomad's helper.OpaqueMapsEqual).
func opaqueMapsEqual(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// allAffinities are the job's, the group's and its tasks' affinities, in
// that order: Nomad's affinitiesUpdated compares them whole (a change is
// destructive, so that placements are scored again).
func allAffinities(job *state.Job, tg *state.TaskGroup) []*state.Affinity {
	out := append(append([]*state.Affinity(nil), job.Affinities...), tg.Affinities...)
	for _, t := range tg.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}
