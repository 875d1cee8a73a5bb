package agent_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// gcClock runs with real time plus an offset that tests move forward, so
// that garbage-collection thresholds pass without waiting while the client
// node and its tasks keep their real timers.
type gcClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *gcClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *gcClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// withGC gives the agent the clock and a short collection interval.
func withGC(clock *gcClock, interval time.Duration) servertest.Option {
	return func(c *server.Config) {
		if clock != nil {
			c.Now = clock.Now
		}
		c.GCInterval = interval
	}
}

// status of GET path.
func statusOf(t *testing.T, ts *servertest.TestServer, path string) int {
	t.Helper()
	return ts.Do(t, http.MethodGet, path, "").Status
}

// waitStatus waits until GET path answers want.
func waitStatus(t *testing.T, ts *servertest.TestServer, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if statusOf(t, ts, path) == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("GET %s: still not %d", path, want)
}

// finished waits until every allocation of the job has ended on its client.
func finished(t *testing.T, ts *servertest.TestServer) []*state.Allocation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		all := allocs(t, ts)
		done := 0
		for _, a := range all {
			if a.TerminalStatus() && a.ClientTerminalStatus() {
				done++
			}
		}
		if done == len(all) {
			return all
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("allocations still running")
	return nil
}

// A deployed job's history through the periodic collector: nothing goes
// before its threshold; after it, the replaced allocation, the finished
// evaluations and the older deployment (with its history) go while the
// live allocation and the latest deployment stay, and a blocked list of
// deployments wakes; once the job is stopped and the job threshold has
// passed, the job goes with its versions, evaluations, allocations,
// deployments and history. A snapshot taken then restores the same state.
func TestGCPeriodicThroughTheStack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	clock := &gcClock{}
	ts := devAgent(t, withGC(clock, 20*time.Millisecond))

	register(t, ts, jobSpec{count: 1, update: update(nil)})
	d0 := waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, ts, jobSpec{count: 1, update: update(nil), config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d1 := waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{1: 1})
	settle(t, ts)
	var old, cur *state.Allocation
	deadline := time.Now().Add(20 * time.Second)
	for old == nil || !old.ClientTerminalStatus() {
		if time.Now().After(deadline) {
			t.Fatalf("the version 0 allocation did not finish: %+v", old)
		}
		time.Sleep(20 * time.Millisecond)
		for _, a := range allocs(t, ts) {
			switch a.JobVersion {
			case 0:
				old = a
			case 1:
				cur = a
			}
		}
	}
	// Many collections run; nothing is old enough.
	time.Sleep(200 * time.Millisecond)
	clock.Advance(30 * time.Minute)
	time.Sleep(200 * time.Millisecond)
	for _, path := range []string{"/v1/allocation/" + old.ID, "/v1/deployment/" + d0.ID, "/v1/evaluation/" + old.EvalID} {
		if got := statusOf(t, ts, path); got != http.StatusOK {
			t.Fatalf("GET %s before the threshold: %d", path, got)
		}
	}

	// A blocked list of deployments wakes when the older one is collected.
	resp := ts.Do(t, http.MethodGet, "/v1/deployments", "")
	index, _ := strconv.ParseUint(resp.Header.Get("X-Service-Index"), 10, 64)
	woke := make(chan *servertest.Response, 1)
	go func() {
		woke <- ts.Do(t, http.MethodGet, fmt.Sprintf("/v1/deployments?index=%d&wait=20s", index), "")
	}()
	time.Sleep(100 * time.Millisecond)
	clock.Advance(time.Hour)
	select {
	case r := <-woke:
		var list []*state.Deployment
		r.JSON(t, &list)
		got, _ := strconv.ParseUint(r.Header.Get("X-Service-Index"), 10, 64)
		if got <= index || len(list) != 1 || list[0].ID != d1.ID {
			t.Fatalf("woken list: index %d (was %d), %d deployments", got, index, len(list))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the blocked deployments list did not wake")
	}
	waitStatus(t, ts, "/v1/allocation/"+old.ID, http.StatusNotFound)
	for _, path := range []string{"/v1/deployment/" + d0.ID, "/v1/deployment/history/" + d0.ID, "/v1/evaluation/" + old.EvalID} {
		if got := statusOf(t, ts, path); got != http.StatusNotFound {
			t.Errorf("GET %s after the threshold: %d", path, got)
		}
	}
	for _, path := range []string{"/v1/allocation/" + cur.ID, "/v1/deployment/" + d1.ID, "/v1/deployment/history/" + d1.ID, "/v1/job/web"} {
		if got := statusOf(t, ts, path); got != http.StatusOK {
			t.Errorf("GET %s: %d, want it kept", path, got)
		}
	}
	if d, _ := latest(t, ts, 0); d == nil || d.ID != d1.ID {
		t.Errorf("the job's latest deployment: %+v", d)
	}
	waitLive(t, ts, map[uint64]int{1: 1})

	// Stop the job: its evaluations and allocations go after their
	// threshold; the job (and its latest deployment) after the job's.
	if r := ts.Do(t, http.MethodDelete, "/v1/job/web", ""); r.Status != http.StatusOK {
		t.Fatalf("stop: %d %s", r.Status, r.Body)
	}
	finished(t, ts)
	settle(t, ts)
	clock.Advance(2 * time.Hour)
	waitStatus(t, ts, "/v1/allocation/"+cur.ID, http.StatusNotFound)
	time.Sleep(100 * time.Millisecond)
	if got := statusOf(t, ts, "/v1/job/web"); got != http.StatusOK {
		t.Fatalf("the stopped job went before its threshold: %d", got)
	}
	if got := statusOf(t, ts, "/v1/deployment/"+d1.ID); got != http.StatusOK {
		t.Fatalf("the job's latest deployment went while the job exists: %d", got)
	}
	clock.Advance(3 * time.Hour)
	waitStatus(t, ts, "/v1/job/web", http.StatusNotFound)
	for _, path := range []string{"/v1/deployment/" + d1.ID, "/v1/deployment/history/" + d1.ID, "/v1/job/web/versions"} {
		if got := statusOf(t, ts, path); got != http.StatusNotFound {
			t.Errorf("GET %s after the job went: %d", path, got)
		}
	}
	counts := ts.Server.State().Counts()
	for _, table := range []string{"jobs", "job_versions", "evals", "allocs", "deployments", "deployment_history"} {
		if counts[table] != 0 {
			t.Errorf("%s: %d left", table, counts[table])
		}
	}
	if counts["nodes"] != 1 {
		t.Errorf("the live node: %d nodes", counts["nodes"])
	}

	// A snapshot now restores to the same state.
	snap := ts.Do(t, http.MethodGet, "/v1/snapshot", "")
	if snap.Status != http.StatusOK {
		t.Fatalf("snapshot save: %d", snap.Status)
	}
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/v1/snapshot", bytes.NewReader([]byte(snap.Body)))
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != http.StatusOK {
		t.Fatalf("snapshot restore: %d %s", rr.StatusCode, body)
	}
	if after := ts.Server.State().Counts(); fmt.Sprint(after) != fmt.Sprint(counts) {
		t.Errorf("restored counts %v, want %v", after, counts)
	}
}

// PUT /v1/system/gc needs a management token; with one it collects at
// once, thresholds ignored, and answers what it deleted.
func TestGCEndpointACL(t *testing.T) {
	const root = "8f0b6a53-5a4e-4c1e-9f58-1f1d2b7a0c11"
	ts := servertest.Start(t, servertest.ACL(root), withGC(nil, time.Hour))
	auth := []string{"X-Service-Token", root}
	// A job of count 0: its registration's evaluation completes at once.
	if r := ts.Do(t, http.MethodPut, "/v1/jobs", jobSpec{count: 0}.body(), auth...); r.Status != http.StatusOK {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	type evalStatus struct{ ID, Status string }
	var evals []evalStatus
	deadline := time.Now().Add(15 * time.Second)
	for {
		ts.Do(t, http.MethodGet, "/v1/job/web/evaluations", "", auth...).JSON(t, &evals)
		if len(evals) == 1 && evals[0].Status == state.EvalStatusComplete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("evaluations: %+v", evals)
		}
		time.Sleep(20 * time.Millisecond)
	}

	r := ts.Do(t, http.MethodPut, "/v1/system/gc", "")
	if r.Status != http.StatusForbidden || !bytes.HasPrefix([]byte(r.Body), []byte("Permission denied: anonymous token lacks permission 'management'.")) {
		t.Fatalf("anonymous: %d %s", r.Status, r.Body)
	}
	r = ts.Do(t, http.MethodPut, "/v1/system/gc", "", "X-Service-Token", "0b7a3c9e-0000-4000-8000-000000000000")
	if r.Status != http.StatusForbidden || r.Body != "ACL not found" {
		t.Fatalf("unknown token: %d %s", r.Status, r.Body)
	}
	if r := ts.Do(t, http.MethodGet, "/v1/system/gc", "", auth...); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d %s", r.Status, r.Body)
	}
	if n := ts.Server.State().Counts()["evals"]; n != 1 {
		t.Fatalf("denied requests collected something: %d evaluations", n)
	}

	r = ts.Do(t, http.MethodPut, "/v1/system/gc", "", auth...)
	if r.Status != http.StatusOK {
		t.Fatalf("management: %d %s", r.Status, r.Body)
	}
	var res struct{ Evals, Allocs, Deployments, Jobs, Nodes, Batches int }
	r.JSON(t, &res)
	if res.Evals != 1 || res.Allocs+res.Deployments+res.Jobs+res.Nodes != 0 || res.Batches != 1 {
		t.Fatalf("forced collection: %s", r.Body)
	}
	ts.Do(t, http.MethodGet, "/v1/job/web/evaluations", "", auth...).JSON(t, &evals)
	if r := ts.Do(t, http.MethodGet, "/v1/job/web", "", auth...); len(evals) != 0 || r.Status != http.StatusOK {
		t.Fatalf("left: evaluations %+v; the job (running, count 0) must stay", evals)
	}
	// Nothing left to collect: a second call deletes nothing.
	ts.Do(t, http.MethodPut, "/v1/system/gc", "", auth...).JSON(t, &res)
	if res.Evals+res.Batches != 0 {
		t.Fatalf("second collection: %+v", res)
	}
}

// A forced collection on a deployed job takes the replaced allocation and
// finished evaluations at once, and keeps the live allocation, the latest
// deployment and the job.
func TestGCForcedKeepsLiveObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t, withGC(nil, time.Hour))
	register(t, ts, jobSpec{count: 2, update: update(nil)})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, ts, jobSpec{count: 2, update: update(nil), config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d1 := waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{1: 2})
	settle(t, ts)
	deadline := time.Now().Add(20 * time.Second)
	for {
		done := 0
		for _, a := range allocs(t, ts) {
			if a.JobVersion == 0 && a.ClientTerminalStatus() {
				done++
			}
		}
		if done == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("version 0 allocations did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := ts.Do(t, http.MethodPut, "/v1/system/gc", "")
	if r.Status != http.StatusOK {
		t.Fatalf("gc: %d %s", r.Status, r.Body)
	}
	var res struct{ Evals, Allocs, Deployments int }
	r.JSON(t, &res)
	if res.Allocs != 2 || res.Deployments != 1 || res.Evals == 0 {
		t.Fatalf("forced collection: %s", r.Body)
	}
	left := allocs(t, ts)
	if len(left) != 2 || left[0].JobVersion != 1 || left[1].JobVersion != 1 {
		t.Fatalf("allocations left: %+v", left)
	}
	if d, _ := latest(t, ts, 0); d == nil || d.ID != d1.ID {
		t.Fatalf("latest deployment: %+v", d)
	}
	// The cluster goes on as before: a new version deploys.
	register(t, ts, jobSpec{count: 2, update: update(nil), config: map[string]any{"run_for": "1h", "stdout_string": "v2"}})
	waitDeployment(t, ts, 2, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{2: 2})
}

// Through Raft: candidates are chosen, then the replaced allocation's
// client reports it running again before the GC entry is applied; the
// entry keeps it (with its evaluation, and its deployment, which a live
// allocation still references) and deletes only what still qualifies.
func TestGCRaceAllocationBecomesLive(t *testing.T) {
	ts := devAgent(t, withGC(nil, time.Hour))
	register(t, ts, jobSpec{count: 1, update: update(nil)})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, ts, jobSpec{count: 1, update: update(nil), config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{1: 1})
	settle(t, ts)
	var old *state.Allocation
	deadline := time.Now().Add(20 * time.Second)
	for old == nil || !old.ClientTerminalStatus() {
		if time.Now().After(deadline) {
			t.Fatal("the version 0 allocation did not finish")
		}
		time.Sleep(20 * time.Millisecond)
		for _, a := range allocs(t, ts) {
			if a.JobVersion == 0 {
				old = a
			}
		}
	}
	_, old, _ = ts.Server.State().Alloc(nil, old.ID) // the list shows stubs
	if old.DeploymentID == "" {
		t.Fatal("the allocation has no deployment")
	}
	req, err := ts.Server.State().GCCandidates(state.GCForce, 0)
	if err != nil {
		t.Fatal(err)
	}
	chosen := false
	for _, id := range req.AllocIDs {
		chosen = chosen || id == old.ID
	}
	evalChosen := false
	for _, id := range req.EvalIDs {
		evalChosen = evalChosen || id == old.EvalID
	}
	if !chosen || !evalChosen {
		t.Fatalf("the finished allocation and its evaluation were not chosen: %+v", req)
	}
	if _, err := fsm.Apply(ts.Server, fsm.AllocClientUpdate, &fsm.AllocClientUpdateRequest{NodeID: old.NodeID,
		Updates: []*state.AllocClientUpdate{{ID: old.ID, ClientStatus: state.AllocClientStatusRunning}}}); err != nil {
		t.Fatal(err)
	}
	res, err := fsm.Apply(ts.Server, fsm.GC, &fsm.GCRequest{Request: *req})
	if err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, ts, "/v1/allocation/"+old.ID); got != http.StatusOK {
		t.Fatalf("the allocation that became live was deleted: %d (result %+v)", got, res)
	}
	if got := statusOf(t, ts, "/v1/evaluation/"+old.EvalID); got != http.StatusOK {
		t.Fatalf("its evaluation was deleted: %d (result %+v)", got, res)
	}
	if got := statusOf(t, ts, "/v1/deployment/"+old.DeploymentID); got != http.StatusOK {
		t.Fatalf("its deployment was deleted: %d (result %+v)", got, res)
	}
	if res.Total() != req.Size()-3 {
		t.Errorf("deleted %+v of %d evaluations, %d allocations, %d deployments: only the three should stay",
			res, len(req.EvalIDs), len(req.AllocIDs), len(req.DeploymentIDs))
	}
}
