package state

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// runningWorld is a job with one allocation running on its node.
func runningWorld(t *testing.T) (*Store, *Allocation, *Job, *Node) {
	t.Helper()
	s, a, job := rescheduleWorld(t)
	if err := s.AllocsClientUpdate(14, a.NodeID, []*AllocClientUpdate{{ID: a.ID, ClientStatus: AllocClientStatusRunning}}, nil, time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	_, a, _ = s.Alloc(nil, a.ID)
	_, n, _ := s.Node(nil, a.NodeID)
	return s, a, job, n
}

// A node going down or disconnected changes the node only (and inserts
// the node-update evaluations with it): what becomes of its allocations
// is the scheduler's decision, as Nomad's.
func TestNodeUpdateStatusLeavesAllocations(t *testing.T) {
	for _, status := range []string{NodeStatusDown, NodeStatusDisconnected} {
		s, a, _, n := runningWorld(t)
		allocsIdx := s.AllocsIndex()
		ev := &Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "web", NodeID: n.ID,
			TriggeredBy: EvalTriggerNodeUpdate, Status: EvalStatusPending}
		if err := s.NodeUpdateStatus(30, n.ID, status, "Node heartbeat missed", []*Evaluation{ev}, 77); err != nil {
			t.Fatal(err)
		}
		_, got, _ := s.Node(nil, n.ID)
		if got.Status != status || got.StatusDescription != "Node heartbeat missed" || got.StatusUpdatedAt != 77 || got.ModifyIndex != 30 {
			t.Errorf("%s: node %+v", status, got)
		}
		_, after, _ := s.Alloc(nil, a.ID)
		if after.ClientStatus != AllocClientStatusRunning || after.DesiredStatus != AllocDesiredStatusRun ||
			after.ModifyIndex != a.ModifyIndex || after.AllocModifyIndex != a.AllocModifyIndex || len(after.AllocStates) != 0 {
			t.Errorf("%s: the FSM touched the allocation: %+v", status, after)
		}
		if s.AllocsIndex() != allocsIdx {
			t.Errorf("%s: allocs index %d → %d", status, allocsIdx, s.AllocsIndex())
		}
		if _, e, _ := s.Eval(nil, ev.ID); e == nil || e.CreateIndex != 30 {
			t.Errorf("%s: node-update evaluation %+v", status, e)
		}
		if job := mustJob(t, s); job.Status != JobStatusRunning {
			t.Errorf("%s: job %q, want running", status, job.Status)
		}
	}
}

// A plan's ClientStates mark an allocation unknown (description, AllocStates
// entry at the given time, follow-up evaluation, AllocModifyIndex so the
// client learns of it) and later running again; unknown is not terminal:
// the job stays running. A plan naming a stopped allocation is refused.
func TestApplyPlanClientStates(t *testing.T) {
	s, a, job, _ := runningWorld(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	wait := at.Add(time.Minute).UnixNano()
	ev := &Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Status: EvalStatusPending,
		TriggeredBy: EvalTriggerMaxDisconnect, WaitUntil: wait}
	repl := &Allocation{ID: uuid.NewString(), Namespace: "default", Name: a.Name, NodeID: a.NodeID, JobID: "web", TaskGroup: "web", PreviousAllocation: a.ID}
	plan := &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex, Now: at.Add(time.Second).UnixNano(),
		FollowupEvals: []*Evaluation{ev}, Placements: []*Allocation{repl},
		ClientStates: []*AllocClientState{{AllocID: a.ID, ClientStatus: AllocClientStatusUnknown,
			ClientDescription: "alloc is unknown since its node is disconnected", FollowupEvalID: ev.ID, Time: at.UnixNano()}}}
	if plan.IsNoOp() {
		t.Fatal("a plan with client states is a no-op")
	}
	if res, err := s.ApplyPlan(40, plan); err != nil || res.Refused != "" {
		t.Fatalf("disconnect plan: %v %+v", err, res)
	}
	_, got, _ := s.Alloc(nil, a.ID)
	if got.ClientStatus != AllocClientStatusUnknown || got.ClientDescription != "alloc is unknown since its node is disconnected" ||
		got.DesiredStatus != AllocDesiredStatusRun || got.FollowupEvalID != ev.ID || got.AllocModifyIndex != 40 || got.TerminalStatus() {
		t.Fatalf("unknown allocation %+v", got)
	}
	if len(got.AllocStates) != 1 || got.AllocStates[0].Field != AllocStateFieldClientStatus ||
		got.AllocStates[0].Value != AllocClientStatusUnknown || !got.AllocStates[0].Time.Equal(at) {
		t.Fatalf("AllocStates %+v", got.AllocStates[0])
	}
	if got.NextAllocation != repl.ID {
		t.Errorf("unknown allocation's NextAllocation %q, want its replacement", got.NextAllocation)
	}
	if !got.NeedsToReconnect() || !got.LastUnknown().Equal(at) {
		t.Errorf("NeedsToReconnect %v, LastUnknown %v", got.NeedsToReconnect(), got.LastUnknown())
	}
	mcd := time.Minute
	if got.Expired(&mcd, at.Add(59*time.Second)) || !got.Expired(&mcd, at.Add(time.Minute)) || got.Expired(nil, at.Add(time.Hour)) {
		t.Error("Expired: unknown for max_client_disconnect expires exactly then, and never without it")
	}
	if job := mustJob(t, s); job.Status != JobStatusRunning {
		t.Errorf("job with an unknown allocation: %q, want running", job.Status)
	}
	// The client is back: the scheduler records the allocation running again.
	if err := s.AllocsClientUpdate(41, a.NodeID, []*AllocClientUpdate{{ID: a.ID, ClientStatus: AllocClientStatusRunning}}, nil, at.UnixNano()); err != nil {
		t.Fatal(err)
	}
	back := &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex, Now: at.Add(2 * time.Minute).UnixNano(),
		Stops:        []*AllocStop{{AllocID: repl.ID, DesiredDescription: "alloc not needed due to disconnected client reconnect"}},
		ClientStates: []*AllocClientState{{AllocID: a.ID, ClientStatus: AllocClientStatusRunning, Reconnected: true}}}
	if res, err := s.ApplyPlan(42, back); err != nil || res.Refused != "" {
		t.Fatalf("reconnect plan: %v %+v", err, res)
	}
	_, got, _ = s.Alloc(nil, a.ID)
	if got.ClientStatus != AllocClientStatusRunning || len(got.AllocStates) != 2 || got.AllocStates[1].Value != AllocClientStatusRunning ||
		got.NeedsToReconnect() || got.FollowupEvalID != "" || got.NextAllocation != "" {
		t.Errorf("reconnected allocation %+v states %v", got, got.AllocStates)
	}
	// A stop that marks it lost records that too.
	lost := &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex, Now: at.Add(3 * time.Minute).UnixNano(),
		Stops: []*AllocStop{{AllocID: a.ID, DesiredDescription: "alloc is lost since its node is down", ClientStatus: AllocClientStatusLost}}}
	if res, err := s.ApplyPlan(43, lost); err != nil || res.Refused != "" {
		t.Fatalf("lost plan: %v %+v", err, res)
	}
	_, got, _ = s.Alloc(nil, a.ID)
	if n := len(got.AllocStates); n != 3 || got.AllocStates[2].Value != AllocClientStatusLost {
		t.Errorf("AllocStates after lost: %v", got.AllocStates)
	}
	res, err := s.ApplyPlan(44, &Plan{Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex,
		ClientStates: []*AllocClientState{{AllocID: a.ID, ClientStatus: AllocClientStatusUnknown}}})
	if err != nil || res.Refused == "" {
		t.Errorf("a client state for a stopped allocation was applied: %v %+v", err, res)
	}
}
