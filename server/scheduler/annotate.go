package scheduler

import (
	"fmt"
	"strconv"

	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/jobdiff"
)

// Annotations a plan puts on a job diff (Nomad's scheduler/annotate.go).
const (
	AnnotationForcesCreate            = "forces create"
	AnnotationForcesDestroy           = "forces destroy"
	AnnotationForcesInplaceUpdate     = "forces in-place update"
	AnnotationForcesDestructiveUpdate = "forces create/destroy update"
)

// Update kinds of a group diff's Updates (Nomad's UpdateType names).
const (
	UpdateTypeIgnore            = "ignore"
	UpdateTypeCreate            = "create"
	UpdateTypeDestroy           = "destroy"
	UpdateTypeMigrate           = "migrate"
	UpdateTypeCanary            = "canary"
	UpdateTypeInplaceUpdate     = "in-place update"
	UpdateTypeDestructiveUpdate = "create/destroy update"
)

// Annotate fills a plan's job diff (from old to new; old nil for a new job)
// with what the plan does: each group's Updates from the plan's
// annotations, `forces create`/`forces destroy` on a changed Count, and on
// each changed task what it forces. Unlike Nomad, which guesses from the
// diff's field names, a task's annotation is the scheduler's own decision
// (tasksUpdated): an edit it applies in place (kill timeout or signal)
// says so, one that replaces the allocation says create/destroy.
func Annotate(d *jobdiff.JobDiff, old, new *state.Job, ann *state.PlanAnnotations) error {
	for _, g := range d.TaskGroups {
		if ann != nil {
			if u := ann.DesiredTGUpdates[g.Name]; u != nil {
				g.Updates = updates(u)
			}
		}
		if err := annotateCount(g); err != nil {
			return err
		}
		for _, t := range g.Tasks {
			annotateTask(t, g, old, new)
		}
	}
	return nil
}

func updates(u *state.DesiredUpdates) map[string]uint64 {
	out := map[string]uint64{}
	for name, n := range map[string]uint64{
		UpdateTypeIgnore: u.Ignore, UpdateTypeCreate: u.Place, UpdateTypeMigrate: u.Migrate,
		UpdateTypeDestroy: u.Stop, UpdateTypeCanary: u.Canary, UpdateTypeInplaceUpdate: u.InPlaceUpdate,
		UpdateTypeDestructiveUpdate: u.DestructiveUpdate,
	} {
		if n != 0 {
			out[name] = n
		}
	}
	return out
}

// annotateCount marks a Count change: more forces creations, fewer destroys.
func annotateCount(g *jobdiff.TaskGroupDiff) error {
	for _, f := range g.Fields {
		if f.Name != "Count" {
			continue
		}
		oldN, err := countValue(f.Old)
		if err != nil {
			return err
		}
		newN, err := countValue(f.New)
		if err != nil {
			return err
		}
		switch {
		case oldN < newN:
			f.Annotations = append(f.Annotations, AnnotationForcesCreate)
		case newN < oldN:
			f.Annotations = append(f.Annotations, AnnotationForcesDestroy)
		}
	}
	return nil
}

func countValue(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to convert count value %q to int: %w", s, err)
	}
	return n, nil
}

func annotateTask(t *jobdiff.TaskDiff, g *jobdiff.TaskGroupDiff, old, new *state.Job) {
	switch {
	case t.Type == jobdiff.None:
		return
	case (g.Type == jobdiff.Added || g.Type == jobdiff.Deleted) && t.Type == jobdiff.Added:
		t.Annotations = append(t.Annotations, AnnotationForcesCreate)
		return
	case (g.Type == jobdiff.Added || g.Type == jobdiff.Deleted) && t.Type == jobdiff.Deleted:
		t.Annotations = append(t.Annotations, AnnotationForcesDestroy)
		return
	}
	destructive := true // a task added to or removed from a group replaces it
	if t.Type == jobdiff.Edited && old != nil && new != nil {
		a, b := old.LookupTaskGroup(g.Name), new.LookupTaskGroup(g.Name)
		if a != nil && b != nil {
			at, bt := lookupTask(a, t.Name), lookupTask(b, t.Name)
			if at != nil && bt != nil {
				destructive = taskUpdated(old, a, at, new, b, bt).modified
			}
		}
	}
	if destructive {
		t.Annotations = append(t.Annotations, AnnotationForcesDestructiveUpdate)
	} else {
		t.Annotations = append(t.Annotations, AnnotationForcesInplaceUpdate)
	}
}
