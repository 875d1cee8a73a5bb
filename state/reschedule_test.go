package state

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// rescheduleWorld is a job with one allocation that failed on its node.
func rescheduleWorld(t *testing.T) (*Store, *Allocation, *Job) {
	t.Helper()
	s := NewStore()
	node := &Node{ID: uuid.NewString(), Name: "n1", Datacenter: "dc1", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible}
	if err := s.NodeRegister(10, node, nil); err != nil {
		t.Fatal(err)
	}
	job := &Job{Namespace: "default", ID: "web", Name: "web", Type: JobTypeService, Priority: 50,
		TaskGroups: []*TaskGroup{{Name: "web", Count: 1, Tasks: []*Task{{Name: "app", Driver: "mock_driver"}}}}}
	if _, err := s.JobRegister(11, job, nil); err != nil {
		t.Fatal(err)
	}
	_, job, _ = s.Job(nil, "default", "web")
	a := &Allocation{ID: uuid.NewString(), Namespace: "default", Name: "web.web[0]", NodeID: node.ID, JobID: "web", TaskGroup: "web"}
	if res, err := s.ApplyPlan(12, &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex, Placements: []*Allocation{a}}); err != nil || res.Refused != "" {
		t.Fatalf("placing: %v %+v", err, res)
	}
	if err := s.AllocsClientUpdate(13, node.ID, []*AllocClientUpdate{{ID: a.ID, ClientStatus: AllocClientStatusFailed}}, nil, time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	_, a, _ = s.Alloc(nil, a.ID)
	return s, a, job
}

// A plan's follow-ups link the failed allocation to a waiting evaluation
// in the same transaction; the job is pending while it waits; a second
// follow-up for the same allocation is refused as stale.
func TestApplyPlanFollowups(t *testing.T) {
	s, a, job := rescheduleWorld(t)
	if job := mustJob(t, s); job.Status != JobStatusDead {
		t.Fatalf("job with its only allocation failed: %q, want dead", job.Status)
	}
	wait := time.Now().Add(30 * time.Second).UnixNano()
	ev := &Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Status: EvalStatusPending, TriggeredBy: EvalTriggerRetryFailedAlloc, WaitUntil: wait}
	plan := &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex,
		FollowupEvals: []*Evaluation{ev}, Followups: []*AllocFollowup{{AllocID: a.ID, FollowupEvalID: ev.ID}}}
	if plan.IsNoOp() {
		t.Fatal("a plan with follow-ups is a no-op")
	}
	if res, err := s.ApplyPlan(20, plan); err != nil || res.Refused != "" {
		t.Fatalf("follow-up plan: %v %+v", err, res)
	}
	_, got, _ := s.Alloc(nil, a.ID)
	if got.FollowupEvalID != ev.ID || got.ModifyIndex != 20 || got.ModifyTime != a.ModifyTime {
		t.Errorf("alloc after the follow-up: eval %q index %d time %d (was %d)", got.FollowupEvalID, got.ModifyIndex, got.ModifyTime, a.ModifyTime)
	}
	_, stored, _ := s.Eval(nil, ev.ID)
	if stored == nil || stored.WaitUntil != wait || stored.CreateIndex != 20 {
		t.Fatalf("follow-up evaluation stored as %+v", stored)
	}
	if job := mustJob(t, s); job.Status != JobStatusPending {
		t.Errorf("job while its follow-up waits: %q, want pending", job.Status)
	}
	ev2 := &Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Status: EvalStatusPending}
	res, err := s.ApplyPlan(21, &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex,
		FollowupEvals: []*Evaluation{ev2}, Followups: []*AllocFollowup{{AllocID: a.ID, FollowupEvalID: ev2.ID}}})
	if err != nil || res.Refused == "" {
		t.Errorf("a second follow-up was applied: %v %+v", err, res)
	}
	// The follow-up completes: nothing waits, nothing runs: dead.
	done := *stored
	done.Status = EvalStatusComplete
	if err := s.EvalsUpsert(22, []*Evaluation{&done}); err != nil {
		t.Fatal(err)
	}
	if job := mustJob(t, s); job.Status != JobStatusDead {
		t.Errorf("job after its follow-up completed: %q, want dead", job.Status)
	}
}

// Desired transitions merge field by field; unknown allocations are skipped.
func TestAllocsDesiredTransition(t *testing.T) {
	s, a, _ := rescheduleWorld(t)
	yes := true
	if err := s.AllocsDesiredTransition(30, map[string]DesiredTransition{a.ID: {Reschedule: &yes}, uuid.NewString(): {Migrate: &yes}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AllocsDesiredTransition(31, map[string]DesiredTransition{a.ID: {Migrate: &yes}}, nil); err != nil {
		t.Fatal(err)
	}
	_, got, _ := s.Alloc(nil, a.ID)
	if !got.DesiredTransition.ShouldReschedule() || !got.DesiredTransition.ShouldMigrate() || got.DesiredTransition.ShouldForceReschedule() || got.ModifyIndex != 31 {
		t.Errorf("transition %+v at %d", got.DesiredTransition, got.ModifyIndex)
	}
	if s.TableIndex(allocsTable) != 31 {
		t.Errorf("allocs index %d", s.TableIndex(allocsTable))
	}
}

func mustJob(t *testing.T, s *Store) *Job {
	t.Helper()
	_, j, err := s.Job(nil, "default", "web")
	if err != nil || j == nil {
		t.Fatalf("job: %v %v", j, err)
	}
	return j
}
