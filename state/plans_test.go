package state

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// planWorld is a store with one ready node and one two-group job whose
// first plan created a running deployment (with canaries in group "b").
type planWorld struct {
	t     *testing.T
	s     *Store
	idx   uint64
	node  *Node
	job   *Job
	dep   *Deployment
	alloc map[string]*Allocation // by name
}

func planID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func newPlanWorld(t *testing.T, canaries map[string]int) *planWorld {
	t.Helper()
	w := &planWorld{t: t, s: NewStore(), idx: 10, alloc: map[string]*Allocation{}}
	w.node = &Node{ID: planID(1), Name: "n1", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible,
		Resources: Resources{CPU: 10000, MemoryMB: 10000}}
	if err := w.s.NodeRegister(w.next(), w.node, nil); err != nil {
		t.Fatal(err)
	}
	job := &Job{Namespace: "default", ID: "web", Name: "web", Type: JobTypeService, Datacenters: []string{"dc1"}}
	for _, g := range []string{"a", "b"} {
		job.TaskGroups = append(job.TaskGroups, &TaskGroup{Name: g, Count: 2,
			Update: &UpdateStrategy{MaxParallel: 1, Canary: canaries[g]},
			Tasks:  []*Task{{Name: "app", Driver: "mock_driver", Resources: &Resources{CPU: 100, MemoryMB: 10}}}})
	}
	if _, err := w.s.JobRegister(w.next(), job, nil); err != nil {
		t.Fatal(err)
	}
	_, w.job, _ = w.s.Job(nil, "default", "web")
	d := &Deployment{ID: planID(900), Namespace: "default", JobID: "web", JobVersion: w.job.Version,
		JobModifyIndex: w.job.JobModifyIndex, JobCreateIndex: w.job.CreateIndex,
		Status: DeploymentStatusRunning, StatusDescription: DeploymentStatusDescriptionRunning,
		TaskGroups: map[string]*DeploymentState{}}
	plan := &Plan{EvalID: planID(800), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Deployment: d, Now: 1}
	n := 100
	for _, g := range []string{"a", "b"} {
		ds := &DeploymentState{DesiredTotal: 2, DesiredCanaries: canaries[g]}
		if canaries[g] > 0 {
			d.StatusDescription = DeploymentStatusDescriptionRunningNeedsPromotion
		}
		d.TaskGroups[g] = ds
		for i := range max(1, canaries[g]) {
			n++
			a := w.newAlloc(g, i, n, d.ID)
			if canaries[g] > 0 {
				a.DeploymentStatus = &AllocDeploymentStatus{Canary: true}
			}
			plan.Placements = append(plan.Placements, a)
		}
	}
	w.apply(plan, "")
	_, w.dep, _ = w.s.Deployment(nil, d.ID)
	return w
}

func (w *planWorld) next() uint64 { w.idx++; return w.idx }

func (w *planWorld) newAlloc(group string, i, n int, depID string) *Allocation {
	return &Allocation{ID: planID(n), Namespace: "default", EvalID: planID(800), Name: fmt.Sprintf("web.%s[%d]", group, i),
		NodeID: w.node.ID, JobID: "web", JobVersion: w.job.Version, TaskGroup: group,
		Resources: Resources{CPU: 100, MemoryMB: 10}, DeploymentID: depID}
}

// apply applies the plan and checks the refusal reason ("" for applied).
func (w *planWorld) apply(p *Plan, refused string) *PlanResult {
	w.t.Helper()
	res, err := w.s.ApplyPlan(w.next(), p)
	if err != nil {
		w.t.Fatal(err)
	}
	if res.Refused != refused {
		w.t.Fatalf("refused %q, want %q", res.Refused, refused)
	}
	if refused == "" {
		for _, a := range p.Placements {
			_, w.alloc[a.Name], _ = w.s.Alloc(nil, a.ID)
		}
	}
	return res
}

func (w *planWorld) setStatus(status, desc string) {
	w.t.Helper()
	if _, err := w.s.DeploymentUpdateStatus(w.next(), &DeploymentUpdateRequest{
		Update: DeploymentStatusUpdate{DeploymentID: w.dep.ID, Status: status, StatusDescription: desc}, Now: 2,
	}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *planWorld) health(healthy bool, names ...string) {
	w.t.Helper()
	for _, name := range names {
		h := healthy
		if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{{ID: w.alloc[name].ID, ClientStatus: AllocClientStatusRunning,
			DeploymentStatus: &AllocDeploymentStatus{Healthy: &h, Timestamp: time.Unix(3, 0)}}}, nil, 3); err != nil {
			w.t.Fatal(err)
		}
	}
}

// A plan computed while its deployment ran, whose placements belong to
// the deployment, is refused whole once the deployment was paused or
// failed meanwhile: nothing of it is applied, not even its other parts.
func TestApplyPlanRefusesPlacementsOfAStoppedDeployment(t *testing.T) {
	for _, tc := range []struct{ status, desc string }{
		{DeploymentStatusPaused, DeploymentStatusDescriptionPaused},
		{DeploymentStatusFailed, DeploymentStatusDescriptionFailedByUser},
	} {
		t.Run(tc.status, func(t *testing.T) {
			w := newPlanWorld(t, nil)
			// Computed from a snapshot in which the deployment runs...
			plan := &Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 4,
				Placements: []*Allocation{w.newAlloc("a", 1, 201, w.dep.ID)},
				Stops:      []*AllocStop{{AllocID: w.alloc["web.b[0]"].ID, DesiredDescription: "alloc not needed due to job update"}},
			}
			// ...and applied after it was paused or failed.
			w.setStatus(tc.status, tc.desc)
			before := w.s.AllocsIndex()
			w.apply(plan, fmt.Sprintf("deployment %s is not running", w.dep.ID))
			if w.s.AllocsIndex() != before {
				t.Fatal("the refused plan wrote allocations")
			}
			if _, a, _ := w.s.Alloc(nil, planID(201)); a != nil {
				t.Fatal("the refused plan's placement exists")
			}
			if _, a, _ := w.s.Alloc(nil, w.alloc["web.b[0]"].ID); a.DesiredStatus != AllocDesiredStatusRun {
				t.Fatalf("the refused plan's stop was applied: %s", a.DesiredStatus)
			}
			if _, d, _ := w.s.Deployment(nil, w.dep.ID); d.TaskGroups["a"].PlacedAllocs != 1 || d.Status != tc.status {
				t.Fatalf("deployment changed by the refused plan: %+v %+v", d, d.TaskGroups["a"])
			}
		})
	}
	// The same plan while the deployment still runs is applied.
	w := newPlanWorld(t, nil)
	w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 4,
		Placements: []*Allocation{w.newAlloc("a", 1, 201, w.dep.ID)}}, "")
	if _, d, _ := w.s.Deployment(nil, w.dep.ID); d.TaskGroups["a"].PlacedAllocs != 2 {
		t.Fatalf("PlacedAllocs %d, want 2", d.TaskGroups["a"].PlacedAllocs)
	}
	// A placement outside any deployment (a lost allocation's replacement)
	// is not held up by a paused one.
	w.setStatus(DeploymentStatusPaused, DeploymentStatusDescriptionPaused)
	w.apply(&Plan{EvalID: planID(802), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 5,
		Placements: []*Allocation{w.newAlloc("b", 1, 202, "")}}, "")
}

// Promotion needs, in every selected group with canaries, as many healthy
// live canaries as desired; All=true selects every group, and the refusal
// names each short group (in name order) and changes nothing.
func TestDeploymentPromotePreconditions(t *testing.T) {
	w := newPlanWorld(t, map[string]int{"a": 1, "b": 2})
	promote := func(all bool, groups ...string) error {
		_, err := w.s.DeploymentPromote(w.next(), &DeploymentPromoteRequest{DeploymentID: w.dep.ID, All: all, Groups: groups, Now: 5})
		return err
	}
	unchanged := func(when string) {
		t.Helper()
		_, d, _ := w.s.Deployment(nil, w.dep.ID)
		for name, g := range d.TaskGroups {
			if g.Promoted {
				t.Fatalf("%s: group %s promoted", when, name)
			}
		}
		for _, name := range []string{"web.a[0]", "web.b[0]", "web.b[1]"} {
			if _, a, _ := w.s.Alloc(nil, w.alloc[name].ID); !a.DeploymentStatus.Canary {
				t.Fatalf("%s: %s no longer a canary", when, name)
			}
		}
	}

	wantStateError(t, promote(true), ErrConflict,
		`Task group "a" has 0/1 healthy allocations; Task group "b" has 0/2 healthy allocations`)
	unchanged("nothing healthy")

	w.health(true, "web.a[0]", "web.b[0]")
	w.health(false, "web.b[1]")
	wantStateError(t, promote(true), ErrConflict, `Task group "b" has 1/2 healthy allocations`)
	unchanged("an unhealthy canary in b, All")
	wantStateError(t, promote(false, "a", "b"), ErrConflict, `Task group "b" has 1/2 healthy allocations`)
	unchanged("an unhealthy canary in b, both named")

	// A healthy canary that has since failed does not count.
	if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{{ID: w.alloc["web.a[0]"].ID, ClientStatus: AllocClientStatusFailed}}, nil, 4); err != nil {
		t.Fatal(err)
	}
	wantStateError(t, promote(true), ErrConflict,
		`Task group "a" has 0/1 healthy allocations; Task group "b" has 1/2 healthy allocations`)
	unchanged("a failed canary in a")

	// Group a alone may not be promoted either; once b's canaries are all
	// healthy, b alone may.
	wantStateError(t, promote(false, "a"), ErrConflict, `Task group "a" has 0/1 healthy allocations`)
	w.health(true, "web.b[1]")
	if err := promote(false, "b"); err != nil {
		t.Fatalf("promote b: %v", err)
	}
	_, d, _ := w.s.Deployment(nil, w.dep.ID)
	if !d.TaskGroups["b"].Promoted || d.TaskGroups["a"].Promoted || d.StatusDescription != DeploymentStatusDescriptionRunningNeedsPromotion {
		t.Fatalf("after promoting b: a %+v, b %+v, %q", d.TaskGroups["a"], d.TaskGroups["b"], d.StatusDescription)
	}
	var canary []string
	for _, name := range []string{"web.a[0]", "web.b[0]", "web.b[1]"} {
		if _, a, _ := w.s.Alloc(nil, w.alloc[name].ID); a.DeploymentStatus.Canary {
			canary = append(canary, name)
		}
	}
	if !reflect.DeepEqual(canary, []string{"web.a[0]"}) {
		t.Fatalf("canaries after promoting b: %v, want only a's", canary)
	}
	// All=true still checks a (promoted groups have nothing left to check).
	err := promote(true)
	if err == nil || !strings.Contains(err.Error(), `Task group "a" has 0/1 healthy allocations`) || strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("All after b promoted: %v", err)
	}
}
