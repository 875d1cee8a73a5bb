package state

import "testing"

// A job's status follows Nomad's rules as its allocations and evaluations
// change: running while one allocation is live, whatever comes after it;
// pending while an evaluation waits; dead once both are over.
func TestJobStatusRefresh(t *testing.T) {
	w := newPlanWorld(t, nil)
	status := func(want string) {
		t.Helper()
		_, j, err := w.s.Job(nil, "default", "web")
		if err != nil || j.Status != want {
			t.Fatalf("job status %q (%v), want %q", j.Status, err, want)
		}
	}
	status(JobStatusRunning)
	// One of the two stopped: still running (the other is live).
	w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 3,
		Stops: []*AllocStop{{AllocID: w.alloc["web.a[0]"].ID, DesiredDescription: "test"}}}, "")
	status(JobStatusRunning)
	// Both stopped, an evaluation waiting: pending.
	ev := &Evaluation{ID: planID(700), Namespace: "default", JobID: "web", Type: JobTypeService, Status: EvalStatusPending}
	if err := w.s.EvalsUpsert(w.next(), []*Evaluation{ev}); err != nil {
		t.Fatal(err)
	}
	w.apply(&Plan{EvalID: planID(802), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 4,
		Stops: []*AllocStop{{AllocID: w.alloc["web.b[0]"].ID, DesiredDescription: "test"}}}, "")
	status(JobStatusPending)
	// The evaluation done: dead.
	done := *ev
	done.Status = EvalStatusComplete
	if err := w.s.EvalsUpsert(w.next(), []*Evaluation{&done}); err != nil {
		t.Fatal(err)
	}
	status(JobStatusDead)
	// A new placement: running again.
	w.apply(&Plan{EvalID: planID(803), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 5,
		Placements: []*Allocation{w.newAlloc("a", 3, 500, "")}}, "")
	status(JobStatusRunning)
}
