package agent_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

func readAlloc(t *testing.T, ts *servertest.TestServer, id string) *state.Allocation {
	t.Helper()
	var a state.Allocation
	ts.Do(t, http.MethodGet, "/v1/allocation/"+id, "").JSON(t, &a)
	return &a
}

func readNode(t *testing.T, ts *servertest.TestServer, id string) *state.Node {
	t.Helper()
	var n state.Node
	ts.Do(t, http.MethodGet, "/v1/node/"+id, "").JSON(t, &n)
	return &n
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A simulated node cut off from the servers misses its heartbeats: with
// max_client_disconnect it goes disconnected (not down), its allocation
// becomes unknown and is replaced on the other node; back within the
// window, it keeps its allocation (same ID, running again, a Reconnected
// task event) and the replacement is stopped with Nomad's text.
func TestE2EDisconnectedNodeReconnectsWithinMaxClientDisconnect(t *testing.T) {
	ts := devAgent(t, servertest.DevNodes(2), servertest.HeartbeatTTL(500*time.Millisecond))
	register(t, ts, jobSpec{count: 1, update: update(nil),
		group: map[string]any{"MaxClientDisconnect": int64(time.Minute)}})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	orig := allocs(t, ts)[0]
	var cut *client.Client
	for _, c := range ts.DevNodes() {
		if c.NodeID() == orig.NodeID {
			cut = c
		}
	}
	if cut == nil {
		t.Fatalf("no dev node runs %s (node %s)", orig.ID, orig.NodeID)
	}

	cut.SetPartitioned(true)
	waitFor(t, "the node disconnected", 10*time.Second, func() bool {
		return readNode(t, ts, orig.NodeID).Status == state.NodeStatusDisconnected
	})
	if n := readNode(t, ts, orig.NodeID); n.StatusDescription != "Node heartbeat missed" {
		t.Errorf("disconnected node: %q", n.StatusDescription)
	}
	var repl *state.Allocation
	waitFor(t, "the allocation unknown and a replacement running", 10*time.Second, func() bool {
		for _, a := range allocs(t, ts) {
			if a.PreviousAllocation == orig.ID && a.ClientStatus == state.AllocClientStatusRunning {
				repl = a
			}
		}
		return repl != nil && readAlloc(t, ts, orig.ID).ClientStatus == state.AllocClientStatusUnknown
	})
	a := readAlloc(t, ts, orig.ID)
	if a.DesiredStatus != state.AllocDesiredStatusRun || a.ClientDescription != "alloc is unknown since its node is disconnected" || a.FollowupEvalID == "" {
		t.Fatalf("unknown allocation %s %q follow-up %q", a.DesiredStatus, a.ClientDescription, a.FollowupEvalID)
	}
	if repl.NodeID == orig.NodeID {
		t.Fatalf("replacement placed on the disconnected node")
	}
	var fu api.Evaluation
	ts.Do(t, http.MethodGet, "/v1/evaluation/"+a.FollowupEvalID, "").JSON(t, &fu)
	if fu.TriggeredBy != state.EvalTriggerMaxDisconnect || fu.Status != state.EvalStatusPending ||
		time.Until(fu.WaitUntil) < 30*time.Second {
		t.Errorf("follow-up evaluation %s %s wait until %v", fu.TriggeredBy, fu.Status, fu.WaitUntil)
	}
	var job state.Job
	ts.Do(t, http.MethodGet, "/v1/job/web", "").JSON(t, &job)
	if job.Status != state.JobStatusRunning {
		t.Errorf("job while disconnected: %q", job.Status)
	}

	cut.SetPartitioned(false)
	waitFor(t, "the original running again and the replacement stopped", 10*time.Second, func() bool {
		a := readAlloc(t, ts, orig.ID)
		r := readAlloc(t, ts, repl.ID)
		return a.ClientStatus == state.AllocClientStatusRunning && !a.NeedsToReconnect() && r.DesiredStatus == state.AllocDesiredStatusStop
	})
	if n := readNode(t, ts, orig.NodeID); n.Status != state.NodeStatusReady {
		t.Errorf("node after reconnect: %s", n.Status)
	}
	a = readAlloc(t, ts, orig.ID)
	if a.DesiredStatus != state.AllocDesiredStatusRun || a.NextAllocation != "" || a.FollowupEvalID != "" || len(a.AllocStates) != 2 ||
		a.AllocStates[0].Value != state.AllocClientStatusUnknown || a.AllocStates[1].Value != state.AllocClientStatusRunning {
		t.Errorf("kept allocation %s states %+v", a.DesiredStatus, a.AllocStates)
	}
	reconnected := false
	for _, ts := range a.TaskStates {
		for _, e := range ts.Events {
			reconnected = reconnected || e.Type == state.TaskClientReconnected
		}
	}
	if !reconnected {
		t.Errorf("no %q task event on the kept allocation", state.TaskClientReconnected)
	}
	if r := readAlloc(t, ts, repl.ID); r.DesiredDescription != "alloc not needed due to disconnected client reconnect" {
		t.Errorf("replacement stopped with %q", r.DesiredDescription)
	}
	// Only the timeout's follow-up (due in a minute) may still wait.
	waitFor(t, "the evaluations done", 10*time.Second, func() bool {
		for _, e := range jobEvals(t, ts) {
			if e.Status == state.EvalStatusPending && e.WaitUntil.IsZero() {
				return false
			}
		}
		return true
	})
	liveNow := 0
	for _, x := range allocs(t, ts) {
		if !x.TerminalStatus() {
			liveNow++
			if x.ID != orig.ID {
				t.Errorf("live allocation %s is not the original", x.ID)
			}
		}
	}
	if liveNow != 1 {
		t.Errorf("%d live allocations, want the original only", liveNow)
	}
}

// Cut off for longer than max_client_disconnect: the timeout's follow-up
// evaluation marks the unknown allocation lost, the heartbeater then takes
// the node from disconnected to down (nothing on it may outlive the
// disconnect any more), and when the node comes back the allocation stays
// lost and the replacement stays.
func TestE2EDisconnectedNodeBackAfterMaxClientDisconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t, servertest.DevNodes(2), servertest.HeartbeatTTL(500*time.Millisecond))
	register(t, ts, jobSpec{count: 1, update: update(nil),
		group: map[string]any{"MaxClientDisconnect": int64(2 * time.Second)}})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	orig := allocs(t, ts)[0]
	var cut *client.Client
	for _, c := range ts.DevNodes() {
		if c.NodeID() == orig.NodeID {
			cut = c
		}
	}
	if cut == nil {
		t.Fatalf("no dev node runs %s", orig.ID)
	}
	cut.SetPartitioned(true)
	waitFor(t, "the allocation unknown", 10*time.Second, func() bool {
		return readAlloc(t, ts, orig.ID).ClientStatus == state.AllocClientStatusUnknown
	})
	waitFor(t, "the allocation lost at the timeout and the node down", 15*time.Second, func() bool {
		return readAlloc(t, ts, orig.ID).ClientStatus == state.AllocClientStatusLost &&
			readNode(t, ts, orig.NodeID).Status == state.NodeStatusDown
	})
	a := readAlloc(t, ts, orig.ID)
	if a.DesiredStatus != state.AllocDesiredStatusStop || a.DesiredDescription != "alloc is lost since its node is down" {
		t.Errorf("lost allocation %s %q", a.DesiredStatus, a.DesiredDescription)
	}
	if n := len(a.AllocStates); n != 2 || a.AllocStates[1].Value != state.AllocClientStatusLost {
		t.Errorf("AllocStates %+v", a.AllocStates)
	}
	var fu api.Evaluation
	ts.Do(t, http.MethodGet, "/v1/evaluation/"+a.FollowupEvalID, "").JSON(t, &fu)
	if fu.TriggeredBy != state.EvalTriggerMaxDisconnect || fu.Status != state.EvalStatusComplete {
		t.Errorf("follow-up %s %s", fu.TriggeredBy, fu.Status)
	}

	cut.SetPartitioned(false)
	waitFor(t, "the node ready again", 10*time.Second, func() bool {
		return readNode(t, ts, orig.NodeID).Status == state.NodeStatusReady
	})
	waitFor(t, "the evaluations done", 10*time.Second, func() bool {
		for _, e := range jobEvals(t, ts) {
			if e.Status == state.EvalStatusPending {
				return false
			}
		}
		return true
	})
	if a := readAlloc(t, ts, orig.ID); a.ClientStatus != state.AllocClientStatusLost || a.DesiredStatus != state.AllocDesiredStatusStop {
		t.Errorf("after the node came back: %s/%s", a.ClientStatus, a.DesiredStatus)
	}
	liveNow := 0
	for _, x := range allocs(t, ts) {
		if !x.TerminalStatus() {
			liveNow++
			if x.PreviousAllocation != orig.ID {
				t.Errorf("live allocation %s is not the replacement", x.ID)
			}
		}
	}
	if liveNow != 1 {
		t.Errorf("%d live allocations, want the replacement only", liveNow)
	}
}
