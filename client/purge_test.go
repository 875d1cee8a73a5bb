package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// mockEnv is a real server with the node service (heartbeats tracked with
// a short TTL) and one client with a data directory running mock_driver
// tasks.
type mockEnv struct {
	ts     *servertest.TestServer
	client *client.Client
	nodeID string
}

func newMockEnv(t *testing.T, ttl time.Duration) *mockEnv {
	t.Helper()
	ts := servertest.Start(t)
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	ns := nodes.New(deps, nodes.Config{HeartbeatTTL: ttl})
	ctx, cancel := context.WithCancel(context.Background())
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); ns.RunHeartbeats(ctx) }()
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts), Nodes: ns}))
	c, err := client.New(client.Config{Servers: []string{hs.URL}, NodeName: "mock-1", DataDir: t.TempDir(), TestDrivers: true,
		Resources: api.Resources{CPU: 64000, MemoryMB: 256 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("client Run: %v", err)
		}
		<-hbDone
		hs.Close()
	})
	select {
	case <-c.Registered():
	case err := <-done:
		t.Fatalf("client stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the client did not register")
	}
	return &mockEnv{ts: ts, client: c, nodeID: c.NodeID()}
}

// place registers a mock_driver job (in namespace ns, created if needed)
// and places n allocations of it on the node in one plan.
func (e *mockEnv) place(t *testing.T, ns, id string, n int) []string {
	t.Helper()
	if ns != "default" {
		if _, err := fsm.Apply(e.ts.Server, fsm.NamespaceUpsert, &fsm.NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: ns}}}); err != nil {
			t.Fatal(err)
		}
	}
	job := &state.Job{Namespace: ns, ID: id, Name: id, Type: state.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{Name: "g", Count: n, Tasks: []*state.Task{{Name: "t", Driver: "mock_driver", Config: map[string]any{},
			Resources: &state.Resources{CPU: 1, MemoryMB: 10}}}}}}
	if _, err := fsm.Apply(e.ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	_, job, _ = e.ts.Server.State().Job(nil, ns, id)
	plan := &state.Plan{EvalID: uuid.NewString(), Namespace: ns, JobID: id, JobModifyIndex: job.JobModifyIndex, Now: time.Now().UnixNano()}
	ids := make([]string, n)
	for i := range n {
		a := &state.Allocation{ID: uuid.NewString(), Namespace: ns, EvalID: plan.EvalID, Name: fmt.Sprintf("%s.g[%d]", id, i),
			NodeID: e.nodeID, NodeName: "mock-1", JobID: id, JobVersion: job.Version, TaskGroup: "g"}
		plan.Placements = append(plan.Placements, a)
		ids[i] = a.ID
	}
	if res, err := fsm.Apply(e.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan}); err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %+v", err, res)
	}
	return ids
}

// countStatus counts the job's allocations whose client status is status.
func (e *mockEnv) countStatus(t *testing.T, ns, id, status string) int {
	t.Helper()
	_, allocs, err := e.ts.Server.State().AllocsByJob(nil, ns, id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range allocs {
		if a.ClientStatus == status {
			n++
		}
	}
	return n
}

// waitUntil polls cond until it holds (deadline generous for -race on a
// small shared machine).
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%s)", what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeWatch records every status other than ready the node has while it
// runs.
type nodeWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	seen []string
}

func watchNode(e *mockEnv) *nodeWatch {
	w := &nodeWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			_, n, err := e.ts.Server.State().Node(nil, e.nodeID)
			w.mu.Lock()
			switch {
			case err != nil:
				w.seen = append(w.seen, err.Error())
			case n == nil:
				w.seen = append(w.seen, "gone")
			case n.Status != state.NodeStatusReady:
				w.seen = append(w.seen, n.Status)
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *nodeWatch) end() []string {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// Issue 31: a purge of many allocations, then the change that makes the
// client drop them all (another namespace's placement). The client drops
// them without stalling: the other allocation runs, the node's heartbeats
// never lapse (a 6 s TTL), and its state DB and runners end up with the
// other allocation alone. Before, each drop rewrote the whole state under
// the client's lock: the node went down.
func TestClientLargePurgeKeepsNodeUp(t *testing.T) {
	const n = 1500
	e := newMockEnv(t, 6*time.Second)
	e.place(t, "default", "big", n)
	waitUntil(t, "every allocation running", func() (bool, string) {
		got := e.countStatus(t, "default", "big", api.AllocClientStatusRunning)
		return got == n, fmt.Sprintf("%d of %d running", got, n)
	})

	w := watchNode(e)
	if _, err := fsm.Apply(e.ts.Server, fsm.JobPurge, &fsm.JobPurgeRequest{Namespace: "default", JobID: "big"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every purged allocation complete", func() (bool, string) {
		got := e.countStatus(t, "default", "big", api.AllocClientStatusComplete)
		return got == n, fmt.Sprintf("%d of %d complete", got, n)
	})
	other := e.place(t, "other", "small", 1)
	waitUntil(t, "the other namespace's allocation running", func() (bool, string) {
		got := e.countStatus(t, "other", "small", api.AllocClientStatusRunning)
		return got == 1, fmt.Sprintf("%d running", got)
	})
	waitUntil(t, "the purged allocations dropped", func() (bool, string) {
		runners := e.client.RunnerIDs()
		saved, err := e.client.SavedAllocIDs()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Equal(runners, other) && slices.Equal(saved, other),
			fmt.Sprintf("%d runners, %d saved records", len(runners), len(saved))
	})
	if seen := w.end(); len(seen) > 0 {
		t.Fatalf("the node was not ready throughout: %v", seen)
	}
	if got := e.countStatus(t, "other", "small", api.AllocClientStatusRunning); got != 1 {
		t.Fatalf("the other allocation is no longer running (%d)", got)
	}
}

// runnerIDsUnblocked is c.RunnerIDs (it takes the client's lock), failing
// the test when the lock stays taken for a minute rather than hanging.
func runnerIDsUnblocked(t *testing.T, c *client.Client) []string {
	t.Helper()
	ch := make(chan []string, 1)
	go func() { ch <- c.RunnerIDs() }()
	select {
	case ids := <-ch:
		return ids
	case <-time.After(time.Minute):
		t.Fatal("the client's lock stayed taken while its state writes waited")
		return nil
	}
}

// Issue 31: the client's lock is not held across disk writes. With every
// state write held up (a stalled disk), the client still takes in a new
// allocation (its runner appears: reconcile took the lock) and answers its
// callers; only its report waits for the write, then goes out.
func TestClientStateWriteBlocksNoLock(t *testing.T) {
	e := newMockEnv(t, 10*time.Second)
	first := e.place(t, "default", "first", 1)
	waitUntil(t, "the first allocation running", func() (bool, string) {
		return e.countStatus(t, "default", "first", api.AllocClientStatusRunning) == 1, ""
	})

	release, err := e.client.HoldStateDB()
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	second := e.place(t, "default", "second", 1)
	want := append(slices.Clone(first), second...)
	slices.Sort(want)
	waitUntil(t, "the client taking the second allocation in while its writes wait", func() (bool, string) {
		ids := runnerIDsUnblocked(t, e.client)
		return slices.Equal(ids, want), fmt.Sprint(ids)
	})
	// A third placement too: reconcile keeps going while the writer waits.
	third := e.place(t, "default", "third", 1)
	want = append(want, third...)
	slices.Sort(want)
	waitUntil(t, "the client taking the third allocation in", func() (bool, string) {
		ids := runnerIDsUnblocked(t, e.client)
		return slices.Equal(ids, want), fmt.Sprint(ids)
	})
	// What the servers hear is saved first: no report yet.
	for _, job := range []string{"second", "third"} {
		if got := e.countStatus(t, "default", job, api.AllocClientStatusPending); got != 1 {
			t.Fatalf("%s: %d pending allocations, want 1 (reported before it was saved)", job, got)
		}
	}
	release()
	released = true
	waitUntil(t, "both reported running once the writes go through", func() (bool, string) {
		s, th := e.countStatus(t, "default", "second", api.AllocClientStatusRunning), e.countStatus(t, "default", "third", api.AllocClientStatusRunning)
		return s == 1 && th == 1, fmt.Sprintf("second %d, third %d", s, th)
	})
	waitUntil(t, "every allocation saved", func() (bool, string) {
		saved, err := e.client.SavedAllocIDs()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Equal(saved, want), fmt.Sprint(saved)
	})
}

// Issue 31: while a purge's allocations end, another allocation's start is
// reported first, not after a random share of the thousands of ends. The
// node is cut off while both are queued, then healed: the start goes out
// in the first batch, so no purged allocation's end is written before it.
func TestClientStartReportGoesBeforePurgeEnds(t *testing.T) {
	const n = 1500
	e := newMockEnv(t, 10*time.Second)
	e.place(t, "default", "big", n)
	waitUntil(t, "every allocation running", func() (bool, string) {
		got := e.countStatus(t, "default", "big", api.AllocClientStatusRunning)
		return got == n, fmt.Sprintf("%d of %d running", got, n)
	})
	e.client.SetPartitioned(true)
	if _, err := fsm.Apply(e.ts.Server, fsm.JobPurge, &fsm.JobPurgeRequest{Namespace: "default", JobID: "big"}); err != nil {
		t.Fatal(err)
	}
	other := e.place(t, "other", "small", 1)
	waitUntil(t, "the client holding the purge's ends and the start", func() (bool, string) {
		got := e.client.PendingReports()
		return got == n+1, fmt.Sprintf("%d reports pending", got)
	})
	e.client.SetPartitioned(false)
	waitUntil(t, "every report written", func() (bool, string) {
		ended := e.countStatus(t, "default", "big", api.AllocClientStatusComplete)
		started := e.countStatus(t, "other", "small", api.AllocClientStatusRunning)
		return ended == n && started == 1, fmt.Sprintf("%d of %d complete, %d started", ended, n, started)
	})
	_, a, err := e.ts.Server.State().Alloc(nil, other[0])
	if err != nil || a == nil {
		t.Fatalf("the other allocation: %v", err)
	}
	_, purged, err := e.ts.Server.State().AllocsByJob(nil, "default", "big")
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, p := range purged {
		if p.ModifyIndex < a.ModifyIndex {
			before++
		}
	}
	if before > 0 {
		t.Fatalf("%d of the %d ends were written before the start (index %d)", before, n, a.ModifyIndex)
	}
}
