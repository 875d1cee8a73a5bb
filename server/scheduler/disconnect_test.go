package scheduler

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

func withMaxClientDisconnect(d time.Duration) jobOpt {
	return func(j *state.Job) { j.TaskGroups[0].MaxClientDisconnect = &d }
}

// nodeStatus sets a node's status as the heartbeater's Raft entry does
// (the node only: its allocations are the scheduler's business).
func (h *harness) nodeStatus(id, status string) {
	h.t.Helper()
	if err := h.store.NodeUpdateStatus(h.next(), id, status, "Node heartbeat missed", nil, h.now.UnixNano()); err != nil {
		h.t.Fatal(err)
	}
}

// followups lists the job's evaluations triggered by trigger.
func (h *harness) evalsBy(jobID, trigger string) []*state.Evaluation {
	h.t.Helper()
	_, evals, err := h.store.EvalsByJob(nil, "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*state.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == trigger {
			out = append(out, e)
		}
	}
	return out
}

// replacementOf is the allocation placed in place of prev (nil if none).
func (h *harness) replacementOf(prev *state.Allocation) *state.Allocation {
	for _, a := range h.allocs("web") {
		if a.PreviousAllocation == prev.ID {
			return a
		}
	}
	return nil
}

func lastState(a *state.Allocation) string {
	if len(a.AllocStates) == 0 {
		return ""
	}
	return a.AllocStates[len(a.AllocStates)-1].Value
}

// disconnectWorld is a settled job of one allocation, running, on one of
// two nodes; its node then misses its heartbeat and goes status, and the
// node-update evaluation runs. It answers the original allocation.
func disconnectWorld(t *testing.T, status string, opts ...jobOpt) (*harness, *state.Allocation) {
	h := newHarness(t)
	h.nodes(2, 0, 0)
	h.process(h.register(testJob("web", 1, opts...)))
	h.settle("web")
	orig := h.live("web")[0]
	h.nodeStatus(orig.NodeID, status)
	h.run("web", state.EvalTriggerNodeUpdate)
	return h, orig
}

// Nomad's disconnected clients (filterByTainted, createTimeoutLaterEvals,
// reconcileReconnecting), decided by the scheduler from the node's status.
func TestDisconnectedClients(t *testing.T) {
	const mcd = 5 * time.Minute
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"without max_client_disconnect a down node's allocation is lost (alloc is lost since its node is down) and replaced at once on another node", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDown)
			a := h.alloc(orig.ID)
			if a.ClientStatus != state.AllocClientStatusLost || a.DesiredStatus != state.AllocDesiredStatusStop ||
				a.DesiredDescription != allocLost || lastState(a) != state.AllocClientStatusLost {
				t.Fatalf("original %s/%s %q states %v", a.ClientStatus, a.DesiredStatus, a.DesiredDescription, a.AllocStates)
			}
			r := h.replacementOf(orig)
			if r == nil || r.NodeID == orig.NodeID || r.Name != orig.Name || r.DesiredStatus != state.AllocDesiredStatusRun || a.NextAllocation != r.ID {
				t.Fatalf("replacement %+v", r)
			}
			if n := len(h.evalsBy("web", state.EvalTriggerMaxDisconnect)); n != 0 {
				t.Errorf("%d max-disconnect-timeout evaluations without max_client_disconnect", n)
			}
		}},
		{"without max_client_disconnect a disconnected node's allocation is lost too (only groups with it may be unknown)", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDisconnected)
			if a := h.alloc(orig.ID); a.ClientStatus != state.AllocClientStatusLost || a.DesiredDescription != allocLost {
				t.Fatalf("original %s %q", a.ClientStatus, a.DesiredDescription)
			}
			if h.replacementOf(orig) == nil {
				t.Fatal("no replacement")
			}
		}},
		{"with max_client_disconnect the allocation becomes unknown (alloc is unknown since its node is disconnected), stays desired to run, is replaced at once, and a max-disconnect-timeout evaluation waits until the disconnect plus max_client_disconnect", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDisconnected, withMaxClientDisconnect(mcd))
			a := h.alloc(orig.ID)
			if a.ClientStatus != state.AllocClientStatusUnknown || a.DesiredStatus != state.AllocDesiredStatusRun || a.ClientDescription != allocUnknown {
				t.Fatalf("original %s/%s %q", a.ClientStatus, a.DesiredStatus, a.ClientDescription)
			}
			if len(a.AllocStates) != 1 || a.AllocStates[0].Value != state.AllocClientStatusUnknown {
				t.Fatalf("AllocStates %v", a.AllocStates)
			}
			fu := h.evalsBy("web", state.EvalTriggerMaxDisconnect)
			if len(fu) != 1 || fu[0].ID != a.FollowupEvalID || fu[0].StatusDescription != descFollowupDisconnect ||
				fu[0].Status != state.EvalStatusPending || fu[0].WaitUntil != a.AllocStates[0].Time.Add(mcd).UnixNano() {
				t.Fatalf("follow-up %+v (alloc's FollowupEvalID %s)", fu, a.FollowupEvalID)
			}
			r := h.replacementOf(orig)
			if r == nil || r.NodeID == orig.NodeID || r.Name != orig.Name || a.NextAllocation != r.ID ||
				r.RescheduleTracker == nil || len(r.RescheduleTracker.Events) != 1 || r.RescheduleTracker.Events[0].PrevAllocID != orig.ID {
				t.Fatalf("replacement %+v", r)
			}
			if j := h.job("web"); j.Status != state.JobStatusRunning {
				t.Errorf("job %q, want running", j.Status)
			}
			// Another evaluation while the node is away changes nothing.
			plans := len(h.plans)
			h.run("web", state.EvalTriggerNodeUpdate)
			if len(h.plans) != plans || len(h.live("web")) != 2 {
				t.Errorf("a second evaluation made %d plans, %d live", len(h.plans)-plans, len(h.live("web")))
			}
		}},
		{"node back within max_client_disconnect: the original is kept, the replacement stopped (alloc not needed due to disconnected client reconnect), and the original's running recorded once its client reports", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDisconnected, withMaxClientDisconnect(mcd))
			r := h.replacementOf(orig)
			h.report([]*state.Allocation{r}, state.AllocClientStatusRunning, nil)
			h.nodeStatus(orig.NodeID, state.NodeStatusReady)
			h.run("web", state.EvalTriggerNodeUpdate)
			if got := h.alloc(r.ID); got.DesiredStatus != state.AllocDesiredStatusStop || got.DesiredDescription != allocReconnected {
				t.Fatalf("replacement %s %q", got.DesiredStatus, got.DesiredDescription)
			}
			if a := h.alloc(orig.ID); a.DesiredStatus != state.AllocDesiredStatusRun || a.NextAllocation != "" {
				t.Fatalf("original %s %q next %q", a.DesiredStatus, a.DesiredDescription, a.NextAllocation)
			}
			// Its client reports it running: the reconnect evaluation records it.
			h.report([]*state.Allocation{orig}, state.AllocClientStatusRunning, nil)
			h.run("web", state.EvalTriggerReconnect)
			a := h.alloc(orig.ID)
			if a.ClientStatus != state.AllocClientStatusRunning || lastState(a) != state.AllocClientStatusRunning || a.NeedsToReconnect() {
				t.Fatalf("reconnected original %s states %v", a.ClientStatus, a.AllocStates)
			}
			// The timeout passes: nothing is lost.
			h.runDue("web")
			if live := h.live("web"); len(live) != 1 || live[0].ID != orig.ID || h.alloc(orig.ID).ClientStatus != state.AllocClientStatusRunning {
				t.Fatalf("after the timeout: live %v, original %s", names(live), h.alloc(orig.ID).ClientStatus)
			}
			// Failing later, it gets a delayed reschedule of its own.
			h.report([]*state.Allocation{orig}, state.AllocClientStatusFailed, nil)
			h.run("web", state.EvalTriggerRetryFailedAlloc)
			fu := h.eval(h.alloc(orig.ID).FollowupEvalID)
			if fu.TriggeredBy != state.EvalTriggerRetryFailedAlloc || fu.Status != state.EvalStatusPending || fu.WaitUntil == 0 {
				t.Fatalf("follow-up of the later failure %+v", fu)
			}
		}},
		{"node back after the max-disconnect-timeout evaluation ran: the allocation was marked lost (alloc is lost since its node is down) then and stays lost; the replacement stays", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDisconnected, withMaxClientDisconnect(mcd))
			r := h.replacementOf(orig)
			if n := h.runDue("web"); n != 1 {
				t.Fatalf("%d follow-ups ran", n)
			}
			a := h.alloc(orig.ID)
			if a.ClientStatus != state.AllocClientStatusLost || a.DesiredStatus != state.AllocDesiredStatusStop || a.DesiredDescription != allocLost ||
				lastState(a) != state.AllocClientStatusLost {
				t.Fatalf("after the timeout %s/%s %q states %v", a.ClientStatus, a.DesiredStatus, a.DesiredDescription, a.AllocStates)
			}
			h.nodeStatus(orig.NodeID, state.NodeStatusReady)
			h.run("web", state.EvalTriggerNodeUpdate)
			if a := h.alloc(orig.ID); a.ClientStatus != state.AllocClientStatusLost || a.DesiredStatus != state.AllocDesiredStatusStop {
				t.Fatalf("after the node came back %s/%s", a.ClientStatus, a.DesiredStatus)
			}
			if live := h.live("web"); len(live) != 1 || live[0].ID != r.ID {
				t.Fatalf("live after the node came back: %v", live)
			}
		}},
		{"an allocation that failed while its node was disconnected is stopped on reconnect (alloc was rescheduled because it failed); the replacement stays", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDisconnected, withMaxClientDisconnect(mcd))
			r := h.replacementOf(orig)
			h.nodeStatus(orig.NodeID, state.NodeStatusReady)
			h.report([]*state.Allocation{orig}, state.AllocClientStatusFailed, nil)
			h.run("web", state.EvalTriggerReconnect)
			a := h.alloc(orig.ID)
			if a.DesiredStatus != state.AllocDesiredStatusStop || a.DesiredDescription != allocRescheduled || a.ClientStatus != state.AllocClientStatusFailed {
				t.Fatalf("failed original %s/%s %q", a.ClientStatus, a.DesiredStatus, a.DesiredDescription)
			}
			if live := h.live("web"); len(live) != 1 || live[0].ID != r.ID {
				t.Fatalf("live: %v", names(live))
			}
		}},
		{"a job updated while the node was away: the reconnecting original of the older version is stopped (alloc not needed due to job update)", func(t *testing.T) {
			h, orig := disconnectWorld(t, state.NodeStatusDisconnected, withMaxClientDisconnect(mcd))
			h.process(h.register(testJob("web", 1, withMaxClientDisconnect(mcd), withSpec("2"))))
			h.settle("web")
			h.nodeStatus(orig.NodeID, state.NodeStatusReady)
			h.report([]*state.Allocation{orig}, state.AllocClientStatusRunning, nil)
			h.run("web", state.EvalTriggerReconnect)
			if a := h.alloc(orig.ID); a.DesiredStatus != state.AllocDesiredStatusStop || a.DesiredDescription != allocNotNeeded {
				t.Fatalf("original %s %q", a.DesiredStatus, a.DesiredDescription)
			}
			if live := h.live("web"); len(live) != 1 || live[0].JobVersion != 1 {
				t.Fatalf("live %v", live)
			}
		}},
		{"a pending allocation on a disconnected node is lost even with max_client_disconnect (it never ran there)", func(t *testing.T) {
			h := newHarness(t)
			h.nodes(2, 0, 0)
			h.process(h.register(testJob("web", 1, withMaxClientDisconnect(mcd))))
			orig := h.live("web")[0]
			h.nodeStatus(orig.NodeID, state.NodeStatusDisconnected)
			h.run("web", state.EvalTriggerNodeUpdate)
			if a := h.alloc(orig.ID); a.ClientStatus != state.AllocClientStatusLost || a.DesiredDescription != allocLost {
				t.Fatalf("pending original %s %q", a.ClientStatus, a.DesiredDescription)
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}
