package deployments_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// startWatcher runs a watcher on the fixture's fake clock until the test ends.
func startWatcher(t *testing.T, f *deploytest.Fixture) {
	t.Helper()
	w := deployments.NewWatcher(f.Deps)
	w.At = f.Clock.At
	runWatcher(t, w)
}

func runWatcher(t *testing.T, w *deployments.Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("watcher returned %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("watcher did not stop when its context was cancelled")
		}
	})
}

// waitFor waits (on state changes, not by polling) until cond holds for
// the current state, failing the test after 5s.
func waitFor(t *testing.T, f *deploytest.Fixture, what string, cond func(s *state.Store) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		s := f.Deps.State()
		ws := memdb.NewWatchSet()
		s.Deployments(ws, state.AllNamespaces, "")
		s.Evals(ws, state.AllNamespaces)
		if cond(s) {
			return
		}
		if ws.WatchCtx(ctx) != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// advanceUntil moves the fake clock on by step until cond holds (the
// watcher may not have seen the last change yet when the clock first
// moves), failing the test after 100 steps.
func advanceUntil(t *testing.T, f *deploytest.Fixture, step time.Duration, what string, cond func(s *state.Store) bool) {
	t.Helper()
	for range 100 {
		f.Clock.Advance(step)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		for {
			s := f.Deps.State()
			ws := memdb.NewWatchSet()
			s.Deployments(ws, state.AllNamespaces, "")
			s.Evals(ws, state.AllNamespaces)
			if cond(s) {
				cancel()
				return
			}
			if ws.WatchCtx(ctx) != nil {
				break
			}
		}
		cancel()
	}
	t.Fatalf("timed out waiting for %s", what)
}

// stays checks that cond keeps holding for a while (the watcher did nothing).
func stays(t *testing.T, f *deploytest.Fixture, what string, cond func(s *state.Store) bool) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if !cond(f.Deps.State()) {
		t.Fatalf("%s no longer holds", what)
	}
}

func status(id string, want string) func(s *state.Store) bool {
	return func(s *state.Store) bool {
		_, d, _ := s.Deployment(nil, id)
		return d != nil && d.Status == want
	}
}

func watcherEvals(s *state.Store, job string) []*state.Evaluation {
	_, evals, _ := s.EvalsByJob(nil, "default", job)
	var out []*state.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == state.EvalTriggerDeploymentWatcher {
			out = append(out, e)
		}
	}
	return out
}

func expectLastCause(t *testing.T, f *deploytest.Fixture, id, rule string) {
	t.Helper()
	_, events, _ := f.Deps.State().DeploymentHistory(nil, id)
	last := events[len(events)-1]
	if last.Cause.Kind != "watcher" || last.Cause.Rule != rule {
		t.Errorf("last history cause: %+v, want watcher %s", last.Cause, rule)
	}
}

func TestWatcherProgressDeadline(t *testing.T) {
	f := deploytest.Start(t)
	job := f.RegisterJob(deploytest.Job("default", "web", "v0",
		deploytest.Group{Name: "web", Count: 2, AutoRevert: true, ProgressDeadline: 10 * time.Minute}))
	d, allocs := f.Deploy(job)
	startWatcher(t, f)
	f.Clock.Advance(9 * time.Minute)
	stays(t, f, "running before the deadline", status(d.ID, state.DeploymentStatusRunning))
	// Progress pushes the deadline out: healthy at +9m, due at +19m.
	f.Health(true, allocs[0].ID)
	f.Clock.Advance(2 * time.Minute)
	stays(t, f, "running after progress", status(d.ID, state.DeploymentStatusRunning))
	f.Clock.Advance(8 * time.Minute)
	waitFor(t, f, "failed on the deadline", status(d.ID, state.DeploymentStatusFailed))
	got := f.Deployment(d.ID)
	if got.StatusDescription != "Failed due to progress deadline - no stable job version to auto revert to" {
		t.Errorf("description %q", got.StatusDescription)
	}
	expectLastCause(t, f, d.ID, deployments.RuleDeadline)
	evals := watcherEvals(f.Deps.State(), "web")
	if !hasEvalAt(evals, got.ModifyIndex) {
		t.Errorf("no evaluation written with the failure at %d: %+v", got.ModifyIndex, evals)
	}
}

func hasEvalAt(evals []*state.Evaluation, idx uint64) bool {
	for _, e := range evals {
		if e.CreateIndex == idx {
			return true
		}
	}
	return false
}

// A paused deployment is never failed by its deadline; resuming restarts it.
func TestWatcherDeadlinePaused(t *testing.T) {
	f := deploytest.Start(t)
	job := f.RegisterJob(deploytest.Job("default", "web", "v0", deploytest.Group{Name: "web", Count: 1, ProgressDeadline: time.Minute}))
	d, _ := f.Deploy(job)
	ops := deployments.New(f.Deps)
	if _, err := ops.Pause(acl.Internal(), d.ID, true); err != nil {
		t.Fatal(err)
	}
	startWatcher(t, f)
	f.Clock.Advance(time.Hour)
	stays(t, f, "paused past the deadline", status(d.ID, state.DeploymentStatusPaused))
	if _, err := ops.Pause(acl.Internal(), d.ID, false); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(59 * time.Second)
	stays(t, f, "running before the new deadline", status(d.ID, state.DeploymentStatusRunning))
	f.Clock.Advance(time.Second)
	waitFor(t, f, "failed on the new deadline", status(d.ID, state.DeploymentStatusFailed))
	if got := f.Deployment(d.ID); got.StatusDescription != "Failed due to progress deadline" {
		t.Errorf("description %q", got.StatusDescription)
	}
}

// Without a progress deadline the first unhealthy allocation fails the
// deployment (Nomad's rule), with the rollback rule.
func TestWatcherUnhealthyRollsBack(t *testing.T) {
	f := deploytest.Start(t)
	g := deploytest.Group{Name: "web", Count: 2, AutoRevert: true}
	v0 := f.RegisterJob(deploytest.Job("default", "web", "v0", g))
	f.SetStable(v0, 0)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v1", g)))
	startWatcher(t, f)
	f.Health(false, allocs[1].ID)
	waitFor(t, f, "failed on an unhealthy allocation", status(d.ID, state.DeploymentStatusFailed))
	got := f.Deployment(d.ID)
	if got.StatusDescription != "Failed due to unhealthy allocations - rolling back to job version 0" {
		t.Errorf("description %q", got.StatusDescription)
	}
	expectLastCause(t, f, d.ID, deployments.RuleUnhealthy)
	_, job, _ := f.Deps.State().Job(nil, "default", "web")
	if job.Version != 2 || job.Meta["v"] != "v0" || job.JobModifyIndex != got.ModifyIndex {
		t.Errorf("job after rollback: version %d meta %v", job.Version, job.Meta)
	}
}

// With a progress deadline an unhealthy allocation does not fail the
// deployment: the watcher marks it for rescheduling (one entry with an
// evaluation), and the deadline decides: "Failed due to progress deadline".
func TestWatcherUnhealthyWithDeadlineReschedules(t *testing.T) {
	f := deploytest.Start(t)
	g := deploytest.Group{Name: "web", Count: 2, AutoRevert: true, ProgressDeadline: 10 * time.Minute}
	v0 := f.RegisterJob(deploytest.Job("default", "web", "v0", g))
	f.SetStable(v0, 0)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v1", g)))
	startWatcher(t, f)
	f.Health(false, allocs[1].ID)
	waitFor(t, f, "the unhealthy allocation marked for rescheduling", func(s *state.Store) bool {
		_, a, _ := s.Alloc(nil, allocs[1].ID)
		return a.DesiredTransition.ShouldReschedule()
	})
	st := f.Deps.State()
	if _, a, _ := st.Alloc(nil, allocs[0].ID); a.DesiredTransition.ShouldReschedule() {
		t.Error("the pending allocation was marked too")
	}
	_, marked, _ := st.Alloc(nil, allocs[1].ID)
	if evals := watcherEvals(st, "web"); !hasEvalAt(evals, marked.ModifyIndex) {
		t.Errorf("no evaluation written with the mark at %d: %+v", marked.ModifyIndex, evals)
	}
	stays(t, f, "running with an unhealthy allocation and time left", status(d.ID, state.DeploymentStatusRunning))
	// Marked once: no second entry.
	if _, again, _ := f.Deps.State().Alloc(nil, allocs[1].ID); again.ModifyIndex != marked.ModifyIndex {
		t.Errorf("marked again at %d (first at %d)", again.ModifyIndex, marked.ModifyIndex)
	}
	f.Clock.Advance(10 * time.Minute)
	waitFor(t, f, "failed on the deadline", status(d.ID, state.DeploymentStatusFailed))
	if got := f.Deployment(d.ID); got.StatusDescription != "Failed due to progress deadline - rolling back to job version 0" {
		t.Errorf("description %q", got.StatusDescription)
	}
	expectLastCause(t, f, d.ID, deployments.RuleDeadline)
}

func TestWatcherUnhealthyNoRevert(t *testing.T) {
	f := deploytest.Start(t)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0", deploytest.Group{Name: "web", Count: 1})))
	startWatcher(t, f)
	f.Health(false, allocs[0].ID)
	waitFor(t, f, "failed", status(d.ID, state.DeploymentStatusFailed))
	if got := f.Deployment(d.ID); got.StatusDescription != "Failed due to unhealthy allocations" {
		t.Errorf("description %q", got.StatusDescription)
	}
}

func TestWatcherAutoPromote(t *testing.T) {
	f := deploytest.Start(t)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0",
		deploytest.Group{Name: "web", Count: 3, Canary: 2, AutoPromote: true, ProgressDeadline: 10 * time.Minute})))
	if d.StatusDescription != state.DeploymentStatusDescriptionRunningAutoPromotion {
		t.Fatalf("description %q", d.StatusDescription)
	}
	startWatcher(t, f)
	f.Health(true, allocs[0].ID)
	stays(t, f, "unpromoted with one of two canaries healthy", func(s *state.Store) bool {
		_, got, _ := s.Deployment(nil, d.ID)
		return !got.TaskGroups["web"].Promoted
	})
	f.Health(true, allocs[1].ID)
	waitFor(t, f, "promoted", func(s *state.Store) bool {
		_, got, _ := s.Deployment(nil, d.ID)
		return got.TaskGroups["web"].Promoted
	})
	got := f.Deployment(d.ID)
	if got.Status != state.DeploymentStatusRunning || got.StatusDescription != state.DeploymentStatusDescriptionRunning {
		t.Errorf("after auto-promote: %q %q", got.Status, got.StatusDescription)
	}
	expectLastCause(t, f, d.ID, deployments.RuleAutoPromote)
	if !hasEvalAt(watcherEvals(f.Deps.State(), "web"), got.ModifyIndex) {
		t.Error("auto-promotion wrote no evaluation")
	}
}

// Without AutoPromote, healthy canaries wait for a person; the watcher only
// asks the scheduler to look again.
func TestWatcherNoAutoPromote(t *testing.T) {
	f := deploytest.Start(t)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0",
		deploytest.Group{Name: "web", Count: 3, Canary: 1, ProgressDeadline: 10 * time.Minute})))
	startWatcher(t, f)
	f.Health(true, allocs[0].ID)
	advanceUntil(t, f, deployments.PerJobEvalBatch/4, "an evaluation", func(s *state.Store) bool { return len(watcherEvals(s, "web")) == 1 })
	if got := f.Deployment(d.ID); got.TaskGroups["web"].Promoted {
		t.Error("promoted without AutoPromote")
	}
}

// Allocations becoming healthy make one batched evaluation per burst; the
// batch closes on the watcher's clock, not on real time.
func TestWatcherHealthyEval(t *testing.T) {
	f := deploytest.Start(t)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0",
		deploytest.Group{Name: "web", Count: 3, ProgressDeadline: 10 * time.Minute})))
	startWatcher(t, f)
	f.Health(true, allocs[0].ID)
	f.Health(true, allocs[1].ID)
	start := f.Clock.Now()
	stays(t, f, "no evaluation while the clock stands before the batch closes", func(s *state.Store) bool { return len(watcherEvals(s, "web")) == 0 })
	advanceUntil(t, f, deployments.PerJobEvalBatch/4, "an evaluation", func(s *state.Store) bool { return len(watcherEvals(s, "web")) >= 1 })
	stays(t, f, "one evaluation for the burst", func(s *state.Store) bool { return len(watcherEvals(s, "web")) == 1 })
	e := watcherEvals(f.Deps.State(), "web")[0]
	if e.DeploymentID != d.ID || e.Status != state.EvalStatusPending || e.Type != "service" || e.Priority != 50 ||
		e.JobID != "web" || e.Namespace != "default" || e.CreateTime < start.Add(deployments.PerJobEvalBatch).UnixNano() || e.CreateTime > f.Clock.Now().UnixNano() {
		t.Errorf("eval (batch of %v from %v): %+v", deployments.PerJobEvalBatch, start, e)
	}
	hidx := f.Health(true, allocs[2].ID)
	advanceUntil(t, f, deployments.PerJobEvalBatch/4, "a second evaluation", func(s *state.Store) bool { return len(watcherEvals(s, "web")) == 2 })
	if es := watcherEvals(f.Deps.State(), "web"); es[0].CreateIndex <= hidx && es[1].CreateIndex <= hidx {
		t.Errorf("second evaluation not after the health report at %d", hidx)
	}
	// Health reported again without a change makes no evaluation.
	stays(t, f, "no more evaluations", func(s *state.Store) bool { return len(watcherEvals(s, "web")) == 2 })
}

// Canaries that wait for a manual promotion are not short of progress;
// canaries not yet healthy are.
func TestWatcherDeadlineCanaries(t *testing.T) {
	f := deploytest.Start(t)
	waiting, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "waiting", "v0",
		deploytest.Group{Name: "web", Count: 3, Canary: 1, ProgressDeadline: time.Minute})))
	short, _ := f.Deploy(f.RegisterJob(deploytest.Job("default", "short", "v0",
		deploytest.Group{Name: "web", Count: 3, Canary: 1, ProgressDeadline: time.Minute})))
	f.Health(true, allocs[0].ID)
	startWatcher(t, f)
	f.Clock.Advance(2 * time.Minute)
	waitFor(t, f, "the short canary deployment failed", status(short.ID, state.DeploymentStatusFailed))
	stays(t, f, "the deployment awaiting promotion runs on", status(waiting.ID, state.DeploymentStatusRunning))
}

// The rollback rule looks at the AutoRevert of the groups that missed the
// deadline, not of the others.
func TestWatcherDeadlineFailingGroupRevert(t *testing.T) {
	f := deploytest.Start(t)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0",
		deploytest.Group{Name: "done", Count: 1, AutoRevert: true, ProgressDeadline: time.Minute},
		deploytest.Group{Name: "slow", Count: 1, ProgressDeadline: time.Minute})))
	for _, a := range allocs {
		if a.TaskGroup == "done" {
			f.Health(true, a.ID)
		}
	}
	startWatcher(t, f)
	f.Clock.Advance(time.Minute)
	waitFor(t, f, "failed", status(d.ID, state.DeploymentStatusFailed))
	if got := f.Deployment(d.ID); got.StatusDescription != "Failed due to progress deadline" {
		t.Errorf("description %q, want no rollback suffix", got.StatusDescription)
	}
}

// racingClock is the fixture's clock, except that once armed, the next read
// returns the time and then moves the clock on: as a test's Advance landing
// between the watcher reading the clock and arming its timer.
type racingClock struct {
	*deploytest.Clock
	armed atomic.Int64 // nanoseconds to advance by on the next read
}

func (c *racingClock) Now() time.Time {
	now := c.Clock.Now()
	if d := c.armed.Swap(0); d != 0 {
		c.Clock.Advance(time.Duration(d))
	}
	return now
}

// The watcher's timers are points of its clock: a clock moved on between
// its read and the timer's arming fires the timer at once instead of
// pushing the deadline out by the move (which a duration-based timer did).
func TestWatcherDeadlineNotPushedOutByClockMove(t *testing.T) {
	f := deploytest.Start(t)
	d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0",
		deploytest.Group{Name: "web", Count: 2, ProgressDeadline: 10 * time.Minute})))
	clock := &racingClock{Clock: f.Clock}
	deps := f.Deps
	deps.Now = clock.Now
	w := deployments.NewWatcher(deps)
	w.At = f.Clock.At
	w.EvalBatch = time.Hour // no batch timer to wake it early
	runWatcher(t, w)
	stays(t, f, "running before the deadline", status(d.ID, state.DeploymentStatusRunning))

	clock.armed.Store(int64(11 * time.Minute))
	f.Health(true, allocs[0].ID) // progress: due 10m from now; wakes the watcher
	waitFor(t, f, "failed on the deadline the clock passed while the watcher armed its timer", status(d.ID, state.DeploymentStatusFailed))
	if got := f.Deployment(d.ID); got.StatusDescription != "Failed due to progress deadline" {
		t.Errorf("description %q", got.StatusDescription)
	}
}
