package deployments_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// With a progress deadline, an unhealthy allocation whose group's
// reschedule policy (of the deployment's job version) has no attempt left
// for it fails the deployment at once, "Failed due to unhealthy
// allocations" with the rollback rule, instead of waiting for the deadline
// (Nomad's shouldFailEarly, also for a paused deployment: Active). With an
// attempt left it is marked for rescheduling and the deployment goes on.
// The clock never moves: no deadline is reached in any case.
func TestWatcherFailsEarlyWithoutRescheduleAttempts(t *testing.T) {
	const hour = time.Hour
	limited := func(attempts int) *state.ReschedulePolicy {
		return &state.ReschedulePolicy{Attempts: attempts, Interval: hour, Delay: 30 * time.Second, DelayFunction: "constant"}
	}
	unlimited := &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: hour, Unlimited: true}
	for _, c := range []struct {
		name   string
		policy *state.ReschedulePolicy
		// latest, if set, is the policy of a newer job version registered
		// after the deployment started (not the deployment's).
		latest *state.ReschedulePolicy
		// rescheduledAgo: one reschedule event per entry, that long
		// before now, in the unhealthy allocation's tracker.
		rescheduledAgo []time.Duration
		paused         bool
		autoRevert     bool
		wantFailed     bool
		wantDesc       string
	}{
		{name: "attempts 0: failed at once", policy: limited(0),
			wantFailed: true, wantDesc: "Failed due to unhealthy allocations"},
		{name: "attempts 0 with auto_revert: failed and rolled back", policy: limited(0), autoRevert: true,
			wantFailed: true, wantDesc: "Failed due to unhealthy allocations - rolling back to job version 0"},
		{name: "attempts left: marked", policy: limited(2)},
		{name: "one of two attempts used: marked", policy: limited(2), rescheduledAgo: []time.Duration{10 * time.Minute}},
		{name: "attempts used up within the interval: failed", policy: limited(2), rescheduledAgo: []time.Duration{50 * time.Minute, 10 * time.Minute},
			wantFailed: true, wantDesc: "Failed due to unhealthy allocations"},
		{name: "attempts used before the interval do not count: marked", policy: limited(1), rescheduledAgo: []time.Duration{2 * hour}},
		{name: "unlimited: marked", policy: unlimited, rescheduledAgo: []time.Duration{30 * time.Minute, 20 * time.Minute, 10 * time.Minute}},
		{name: "paused, attempts 0: failed", policy: limited(0), paused: true,
			wantFailed: true, wantDesc: "Failed due to unhealthy allocations"},
		{name: "paused, attempts left: marked, still paused", policy: limited(1), paused: true},
		{name: "the deployment's version has none left, the latest unlimited: failed", policy: limited(0), latest: unlimited,
			wantFailed: true, wantDesc: "Failed due to unhealthy allocations"},
		{name: "the deployment's version unlimited, the latest has none left: marked", policy: unlimited, latest: limited(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := deploytest.Start(t)
			g := deploytest.Group{Name: "web", Count: 2, AutoRevert: c.autoRevert, ProgressDeadline: 10 * time.Minute, Reschedule: c.policy}
			v0 := f.RegisterJob(deploytest.Job("default", "web", "v0", g))
			f.SetStable(v0, 0)
			v1 := f.RegisterJob(deploytest.Job("default", "web", "v1", g))
			var tracker *state.RescheduleTracker
			if len(c.rescheduledAgo) > 0 {
				tracker = &state.RescheduleTracker{}
				for _, ago := range c.rescheduledAgo {
					tracker.Events = append(tracker.Events, &state.RescheduleEvent{
						RescheduleTime: f.Clock.Now().Add(-ago).UnixNano(), PrevAllocID: "earlier", PrevNodeID: f.Node.ID, Delay: 30 * time.Second,
					})
				}
			}
			d, allocs := f.DeployEdited(v1, uuid.NewString(), func(a *state.Allocation) { a.RescheduleTracker = tracker.Copy() })
			if c.latest != nil {
				g.Reschedule = c.latest
				f.RegisterJob(deploytest.Job("default", "web", "v2", g))
			}
			wantStatus := state.DeploymentStatusRunning
			if c.paused {
				if _, err := deployments.New(f.Deps).Pause(acl.Internal(), d.ID, true); err != nil {
					t.Fatalf("pausing: %v", err)
				}
				wantStatus = state.DeploymentStatusPaused
			}
			f.Health(false, allocs[1].ID)
			if got := f.Deployment(d.ID); got.Status != wantStatus || got.TaskGroups["web"].UnhealthyAllocs != 1 {
				t.Fatalf("before the watcher: %s with %d unhealthy", got.Status, got.TaskGroups["web"].UnhealthyAllocs)
			}
			startWatcher(t, f)

			marked := func(s *state.Store) bool {
				_, a, _ := s.Alloc(nil, allocs[1].ID)
				return a.DesiredTransition.ShouldReschedule()
			}
			if c.wantFailed {
				waitFor(t, f, "failed on the unhealthy allocation", status(d.ID, state.DeploymentStatusFailed))
				got := f.Deployment(d.ID)
				if got.StatusDescription != c.wantDesc {
					t.Errorf("description %q, want %q", got.StatusDescription, c.wantDesc)
				}
				expectLastCause(t, f, d.ID, deployments.RuleUnhealthy)
				if marked(f.Deps.State()) {
					t.Error("the allocation with no attempt left was marked for rescheduling")
				}
				_, job, _ := f.Deps.State().Job(nil, "default", "web")
				wantVersion, wantMeta := v1.Version, "v1"
				if c.latest != nil {
					wantVersion, wantMeta = v1.Version+1, "v2"
				}
				if c.autoRevert {
					wantVersion, wantMeta = v1.Version+1, "v0"
				}
				if job.Version != wantVersion || job.Meta["v"] != wantMeta {
					t.Errorf("job after the failure: version %d meta %v, want %d %s", job.Version, job.Meta, wantVersion, wantMeta)
				}
				return
			}
			waitFor(t, f, "the unhealthy allocation marked for rescheduling", marked)
			st := f.Deps.State()
			_, a, _ := st.Alloc(nil, allocs[1].ID)
			if evals := watcherEvals(st, "web"); !hasEvalAt(evals, a.ModifyIndex) {
				t.Errorf("no evaluation written with the mark at %d: %+v", a.ModifyIndex, evals)
			}
			if _, other, _ := st.Alloc(nil, allocs[0].ID); other.DesiredTransition.ShouldReschedule() {
				t.Error("the pending allocation was marked too")
			}
			stays(t, f, "not failed with an attempt left", status(d.ID, wantStatus))
		})
	}
}

// Nomad's deadlineHit: a paused deployment is not failed by its progress
// deadline, but once that deadline has passed, a later failure on an
// unhealthy allocation is described as a progress-deadline failure (its
// watcher never resets the flag). Before the deadline the same failure is
// "Failed due to unhealthy allocations".
func TestWatcherDeadlineHitDescribesLaterFailure(t *testing.T) {
	for _, c := range []struct {
		name     string
		advance  time.Duration
		wantDesc string
	}{
		{"before the deadline", 0, "Failed due to unhealthy allocations"},
		{"the deadline passed while paused", time.Hour, "Failed due to progress deadline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := deploytest.Start(t)
			noAttempts := &state.ReschedulePolicy{Interval: time.Hour, Delay: 30 * time.Second, DelayFunction: "constant"}
			g := deploytest.Group{Name: "web", Count: 2, ProgressDeadline: time.Minute, Reschedule: noAttempts}
			v0 := f.RegisterJob(deploytest.Job("default", "web", "v0", g))
			f.SetStable(v0, 0)
			v1 := f.RegisterJob(deploytest.Job("default", "web", "v1", g))
			d, allocs := f.Deploy(v1)
			if _, err := deployments.New(f.Deps).Pause(acl.Internal(), d.ID, true); err != nil {
				t.Fatalf("pausing: %v", err)
			}
			startWatcher(t, f)
			if c.advance > 0 {
				f.Clock.Advance(c.advance)
			}
			stays(t, f, "paused", status(d.ID, state.DeploymentStatusPaused))
			f.Health(false, allocs[1].ID)
			waitFor(t, f, "failed on the unhealthy allocation", status(d.ID, state.DeploymentStatusFailed))
			if got := f.Deployment(d.ID).StatusDescription; got != c.wantDesc {
				t.Errorf("description %q, want %q", got, c.wantDesc)
			}
			expectLastCause(t, f, d.ID, deployments.RuleUnhealthy)
		})
	}
}
