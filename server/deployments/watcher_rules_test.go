package deployments_test

// Rules of the watcher that single-line mutations of the code used to
// survive (issue 32, part 7).

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
)

// hookClock is the fixture's clock, except that the first read after a
// hook is set runs the hook first: the watcher reads its clock right after
// it has listed the changed deployments, so the hook's writes land between
// its read of a deployment and its read of that deployment's allocations.
type hookClock struct {
	*deploytest.Clock
	hook atomic.Pointer[func()]
}

func (c *hookClock) Now() time.Time {
	if h := c.hook.Swap(nil); h != nil {
		(*h)()
	}
	return c.Clock.Now()
}

// reportUnhealthy is the client's report of a running, unhealthy
// allocation, as deploytest's Health, but answering its error instead of
// failing the test (it runs on the watcher's goroutine).
func reportUnhealthy(f *deploytest.Fixture, allocID string) error {
	unhealthy := false
	_, err := fsm.Apply(f.Server, fsm.AllocClientUpdate, &fsm.AllocClientUpdateRequest{
		NodeID: f.Node.ID, Now: f.Clock.Now().UnixNano(),
		Updates: []*state.AllocClientUpdate{{
			ID: allocID, ClientStatus: state.AllocClientStatusRunning,
			DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &unhealthy, Timestamp: f.Clock.Now()},
		}},
	})
	return err
}

// An unhealthy allocation is marked for rescheduling
// (DesiredTransition.Reschedule) only in a group with a progress deadline,
// where the deadline decides; in a group without one it fails the
// deployment at once and is never marked (Nomad's shouldFailEarly: such an
// allocation does not join allowReplacements). The last case is a
// deployment of both kinds whose no-deadline group turns unhealthy between
// the watcher's read of the deployment (only the deadline group unhealthy:
// it marks) and its read of the allocations.
func TestRuleWatcherMarksOnlyProgressDeadlineGroups(t *testing.T) {
	withDeadline := deploytest.Group{Name: "deadline", Count: 1, ProgressDeadline: 10 * time.Minute}
	noDeadline := deploytest.Group{Name: "nodeadline", Count: 1}
	for _, c := range []struct {
		name   string
		groups []deploytest.Group
		// unhealthy before the watcher starts; racing: reported on the
		// watcher's first look.
		unhealthy, racing []string
		wantStatus        string
		wantMarked        map[string]bool // by group
	}{
		{"no progress deadline: failed, not marked", []deploytest.Group{noDeadline}, []string{"nodeadline"}, nil,
			state.DeploymentStatusFailed, map[string]bool{"nodeadline": false}},
		{"progress deadline: marked, running on", []deploytest.Group{withDeadline}, []string{"deadline"}, nil,
			state.DeploymentStatusRunning, map[string]bool{"deadline": true}},
		{"both: the deadline group's marked, the other's not", []deploytest.Group{withDeadline, noDeadline}, []string{"deadline"}, []string{"nodeadline"},
			state.DeploymentStatusFailed, map[string]bool{"deadline": true, "nodeadline": false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := deploytest.Start(t)
			d, allocs := f.Deploy(f.RegisterJob(deploytest.Job("default", "web", "v0", c.groups...)))
			byGroup := map[string]string{}
			for _, a := range allocs {
				byGroup[a.TaskGroup] = a.ID
			}
			for _, g := range c.unhealthy {
				f.Health(false, byGroup[g])
			}
			clock := &hookClock{Clock: f.Clock}
			raced := make(chan error, 1)
			if len(c.racing) > 0 {
				hook := func() {
					var err error
					for _, g := range c.racing {
						if err == nil {
							err = reportUnhealthy(f, byGroup[g])
						}
					}
					raced <- err
				}
				clock.hook.Store(&hook)
			}
			deps := f.Deps
			deps.Now = clock.Now
			w := deployments.NewWatcher(deps)
			w.At = f.Clock.At
			runWatcher(t, w)
			if len(c.racing) > 0 {
				select {
				case err := <-raced:
					if err != nil {
						t.Fatalf("reporting on the watcher's first look: %v", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the watcher never read its clock")
				}
			}

			marked := func(group string) bool {
				_, a, _ := f.Deps.State().Alloc(nil, byGroup[group])
				return a.DesiredTransition.ShouldReschedule()
			}
			if c.wantStatus == state.DeploymentStatusFailed {
				waitFor(t, f, "failed on an unhealthy allocation", status(d.ID, state.DeploymentStatusFailed))
				if got := f.Deployment(d.ID); got.StatusDescription != state.DeploymentStatusDescriptionFailedAllocations {
					t.Errorf("description %q", got.StatusDescription)
				}
				expectLastCause(t, f, d.ID, deployments.RuleUnhealthy)
			}
			for g, want := range c.wantMarked {
				if want {
					waitFor(t, f, "the "+g+" allocation marked for rescheduling", func(*state.Store) bool { return marked(g) })
				}
			}
			for g, want := range c.wantMarked {
				if got := marked(g); got != want {
					t.Errorf("group %s: marked for rescheduling %v, want %v", g, got, want)
				}
			}
			if got := f.Deployment(d.ID); got.Status != c.wantStatus {
				t.Errorf("deployment %s (%q), want %s", got.Status, got.StatusDescription, c.wantStatus)
			}
		})
	}
}
