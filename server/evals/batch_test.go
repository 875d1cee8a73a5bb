package evals_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/evals"
	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// Evaluation updates of workers that finish together share Raft entries
// (group commit), and every one of them is written.
func TestBrokerBatchesEvalUpdates(t *testing.T) {
	f := deploytest.Start(t)
	var evs []*state.Evaluation
	var ids []string
	for i := range 48 {
		ev := pending(fmt.Sprintf("job-%d", i), 50)
		evs = append(evs, ev)
		ids = append(ids, ev.ID)
	}
	write(t, f, evs...)
	// The 8 workers update their evaluations together, wave after wave: each
	// waits until the 8 in progress have arrived (a timed-out wait lets a
	// short wave go), so batching does not hang on the machine's timing.
	var mu sync.Mutex
	arrived, release := 0, make(chan struct{})
	together := func(_ hclog.Logger, _ *state.Store, p evals.Planner, _ func() time.Time) evals.Scheduler {
		return schedFunc(func(ev *state.Evaluation) error {
			mu.Lock()
			arrived++
			wave := release
			if arrived == 8 {
				close(release)
				arrived, release = 0, make(chan struct{})
			}
			mu.Unlock()
			select {
			case <-wave:
			case <-time.After(2 * time.Second):
			}
			done := *ev
			done.Status = state.EvalStatusComplete
			return p.UpdateEval(&done)
		})
	}
	b := evals.New(f.Deps, together, 8)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { b.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	got := waitDone(t, f, ids...)
	entries := map[uint64]int{}
	for id, ev := range got {
		if ev.Status != state.EvalStatusComplete {
			t.Errorf("eval %s ended %s", id, ev.Status)
		}
		entries[ev.ModifyIndex]++
	}
	// 6 waves of 8 updates at once: one entry per update would be 48.
	if len(entries) >= len(ids) {
		t.Errorf("%d evaluation updates took %d Raft entries, want fewer (batched)", len(ids), len(entries))
	}
	waitStats(t, b, func(st evals.Stats) bool { return st.Processed == uint64(len(ids)) })
}

// The service scheduler's plan and its evaluation's completion are one Raft
// entry: the evaluation is complete at the index its allocation was placed
// at, and no later.
func TestPlanAndEvalCompletionInOneEntry(t *testing.T) {
	f := deploytest.Start(t)
	factory := func(logger hclog.Logger, snap *state.Store, p evals.Planner, now func() time.Time) evals.Scheduler {
		return scheduler.NewServiceScheduler(logger, snap, p, now)
	}
	b := evals.New(f.Deps, factory, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	job := f.RegisterJob(deploytest.Job("default", "web", "1", deploytest.Group{Name: "g", Count: 2}))
	ev := pending("web", 50)
	ev.JobModifyIndex = job.JobModifyIndex
	write(t, f, ev)
	got := waitDone(t, f, ev.ID)[ev.ID]
	if got.Status != state.EvalStatusComplete {
		t.Fatalf("evaluation %s: %q", got.Status, got.StatusDescription)
	}
	_, allocs, err := f.Server.State().AllocsByJob(memdb.NewWatchSet(), "default", "web")
	if err != nil || len(allocs) != 2 {
		t.Fatalf("%d allocations (%v), want 2", len(allocs), err)
	}
	for _, a := range allocs {
		if a.CreateIndex != got.ModifyIndex {
			t.Errorf("allocation %s placed at %d, evaluation complete at %d: not one entry", a.Name, a.CreateIndex, got.ModifyIndex)
		}
		if a.EvalID != ev.ID {
			t.Errorf("allocation %s of evaluation %s", a.Name, a.EvalID)
		}
	}
	if got.DeploymentID == "" {
		t.Error("the completed evaluation names no deployment")
	}
	// A refused plan writes nothing: a plan for a job version that is no
	// longer the job's does not write the evaluation that came with it.
	stale := pending("web", 50)
	res := deploytest.Apply(f, fsm.PlanApplyEvals, &fsm.PlanApplyEvalsRequest{
		Plan:  &state.Plan{EvalID: stale.ID, Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex + 100},
		Evals: []*state.Evaluation{{ID: stale.ID, Namespace: "default", JobID: "web", Status: state.EvalStatusComplete}},
	})
	if res.Refused == "" {
		t.Fatal("a plan for another job version was applied")
	}
	if _, cur, _ := f.Server.State().Eval(nil, stale.ID); cur != nil {
		t.Errorf("the refused plan's evaluation was written: %+v", cur)
	}
}
