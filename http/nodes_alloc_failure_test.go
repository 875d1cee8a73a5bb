package http_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// TestAllocFailureEvals: a node's report makes an alloc-failure evaluation
// when Nomad 1.6's Node.UpdateAlloc does: for each newly failed allocation
// whose group's reschedule policy still allows a reschedule, one pending
// evaluation of the job's type and priority, with no node and no job
// modify index. A failure the policy does not reschedule (none, or its
// attempts used within the interval) and a completed allocation make none.
func TestAllocFailureEvals(t *testing.T) {
	env := ntStart(t, time.Minute)
	reg := ntNode("node-a")
	nc := ntRegister(t, env.client(t, ""), reg)
	run := map[string]any{"run_for": "1h"}
	once := &state.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	cases := []struct {
		name       string
		reschedule *state.ReschedulePolicy
		// rescheduled: the allocations are replacements already
		// rescheduled once, a minute ago.
		rescheduled bool
		status      string
		want        int
	}{
		{"unlimited policy", nil, false, state.AllocClientStatusFailed, 2},
		{"attempts left", once, false, state.AllocClientStatusFailed, 2},
		{"attempts used", once, true, state.AllocClientStatusFailed, 0},
		{"no rescheduling", &state.ReschedulePolicy{Attempts: 0, Interval: time.Hour}, false, state.AllocClientStatusFailed, 0},
		{"completed", nil, false, state.AllocClientStatusComplete, 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "job" + string(rune('a'+i))
			var job *state.Job
			if c.reschedule == nil {
				job = ntJob(t, env.ts, id, nil, run)
			} else {
				job = ntJobRescheduled(t, env.ts, id, nil, run, c.reschedule)
			}
			var allocs []*state.Allocation
			if c.rescheduled {
				allocs = placeRescheduled(t, env, job, reg, 2)
			} else {
				allocs, _ = ntPlace(t, env.ts, job, reg.ID, reg.Name, 2, env.clock.Now())
			}
			var updates []*api.AllocClientUpdate
			for _, a := range allocs {
				updates = append(updates, &api.AllocClientUpdate{ID: a.ID, ClientStatus: c.status,
					TaskStates: map[string]*api.TaskState{"server": {State: api.TaskStateDead, Failed: c.status == state.AllocClientStatusFailed, FinishedAt: env.clock.Now()}}})
			}
			res, err := nc.UpdateAllocations(context.Background(), reg.ID, updates)
			if err != nil {
				t.Fatal(err)
			}
			// Those the report wrote (the scheduler may add delayed follow-ups).
			var evals []*state.Evaluation
			for _, e := range ntEvals(t, env.ts, id, state.EvalTriggerRetryFailedAlloc) {
				if e.CreateIndex == res.Index {
					evals = append(evals, e)
				}
			}
			if len(evals) != c.want {
				t.Fatalf("%d alloc-failure evaluations, want %d: %+v", len(evals), c.want, evals)
			}
			// As written (the agent's scheduler may have processed them since).
			now := env.clock.Now().UnixNano()
			for _, e := range evals {
				if e.Namespace != "default" || e.Priority != 70 || e.Type != state.JobTypeService || e.JobID != id ||
					e.NodeID != "" || e.JobModifyIndex != 0 || e.WaitUntil != 0 || e.PreviousEval != "" ||
					e.CreateTime != now {
					t.Errorf("evaluation %+v (report at index %d)", e, res.Index)
				}
			}
		})
	}
}

// placeRescheduled places n allocations of job on the node as
// replacements rescheduled once, a minute before the clock's now.
func placeRescheduled(t *testing.T, env *ntEnv, job *state.Job, reg *api.NodeRegistration, n int) []*state.Allocation {
	t.Helper()
	now := env.clock.Now()
	plan := &state.Plan{EvalID: uuid.NewString(), Namespace: job.Namespace, JobID: job.ID, JobModifyIndex: job.JobModifyIndex, Now: now.UnixNano()}
	for i := range n {
		plan.Placements = append(plan.Placements, &state.Allocation{
			ID: uuid.NewString(), Namespace: job.Namespace, EvalID: plan.EvalID,
			Name: fmt.Sprintf("%s.web[%d]", job.ID, i), NodeID: reg.ID, NodeName: reg.Name,
			JobID: job.ID, JobVersion: job.Version, TaskGroup: "web", Resources: state.Resources{CPU: 100, MemoryMB: 64},
			RescheduleTracker: &state.RescheduleTracker{Events: []*state.RescheduleEvent{{
				RescheduleTime: now.Add(-time.Minute).UnixNano(), PrevAllocID: uuid.NewString(), PrevNodeID: reg.ID, Delay: 5 * time.Second}}},
		})
	}
	if res, err := fsm.Apply(env.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan}); err != nil || res.Refused != "" {
		t.Fatalf("placing: %v %+v", err, res)
	}
	out := make([]*state.Allocation, n)
	for i, a := range plan.Placements {
		if out[i] = ntAlloc(t, env.ts, a.ID); out[i].RescheduleTracker == nil {
			t.Fatalf("allocation %s has no tracker", a.ID)
		}
	}
	return out
}
