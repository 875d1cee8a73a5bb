package agent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// jobSpec builds a job body in Nomad's JSON format: one group "web" of
// count mock_driver tasks with the given update block (nil: the default).
type jobSpec struct {
	count       int
	update      map[string]any
	config      map[string]any
	multiregion bool
	// group adds fields to the group (RestartPolicy, ReschedulePolicy, …).
	group map[string]any
}

func (j jobSpec) body() string {
	cfg := j.config
	if cfg == nil {
		cfg = map[string]any{"run_for": "1h"}
	}
	group := map[string]any{
		"Name": "web", "Count": j.count,
		"Tasks": []any{map[string]any{"Name": "app", "Driver": "mock_driver", "Config": cfg,
			"KillTimeout": int64(100 * time.Millisecond), "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}},
	}
	if j.update != nil {
		group["Update"] = j.update
	}
	for k, v := range j.group {
		group[k] = v
	}
	job := map[string]any{"ID": "web", "Datacenters": []string{"dc1"}, "TaskGroups": []any{group}}
	if j.multiregion {
		job["Multiregion"] = map[string]any{"Regions": []any{map[string]any{"Name": "global"}, map[string]any{"Name": "west"}}}
	}
	buf, _ := json.Marshal(map[string]any{"Job": job})
	return string(buf)
}

// update is an update block with short health times (ns), merged with extra.
func update(extra map[string]any) map[string]any {
	u := map[string]any{
		"MaxParallel": 1, "HealthCheck": "task_states",
		"MinHealthyTime": int64(50 * time.Millisecond), "HealthyDeadline": int64(20 * time.Second),
		"ProgressDeadline": int64(60 * time.Second),
	}
	for k, v := range extra {
		u[k] = v
	}
	return u
}

type registerResponse struct {
	EvalID                                 string
	EvalCreateIndex, JobModifyIndex, Index uint64
}

func register(t *testing.T, ts *servertest.TestServer, spec jobSpec) registerResponse {
	t.Helper()
	resp := ts.Do(t, http.MethodPut, "/v1/jobs", spec.body())
	if resp.Status != http.StatusOK {
		t.Fatalf("register: %d %s", resp.Status, resp.Body)
	}
	var out registerResponse
	resp.JSON(t, &out)
	return out
}

// actionResult is a deployment operation's answer; RevertedJobVersion is
// kept raw to tell null from absent.
type actionResult struct {
	EvalID                                        string
	EvalCreateIndex, DeploymentModifyIndex, Index uint64
	RevertedJobVersion                            *uint64
	raw                                           map[string]json.RawMessage
}

func operate(t *testing.T, ts *servertest.TestServer, op, id, body string, wantStatus int) (actionResult, string) {
	t.Helper()
	resp := ts.Do(t, http.MethodPost, "/v1/deployment/"+op+"/"+id, body)
	if resp.Status != wantStatus {
		t.Fatalf("%s %s: %d %s, want %d", op, id, resp.Status, resp.Body, wantStatus)
	}
	var out actionResult
	if resp.Status == http.StatusOK {
		resp.JSON(t, &out)
		resp.JSON(t, &out.raw)
		if out.Index == 0 || out.DeploymentModifyIndex != out.Index || (out.EvalID != "" && out.EvalCreateIndex != out.Index) {
			t.Errorf("%s: indexes not one entry's: %s", op, resp.Body)
		}
		if got := resp.Header.Get("X-Service-Index"); got != strconv.FormatUint(out.Index, 10) {
			t.Errorf("%s: X-Service-Index %q, body Index %d", op, got, out.Index)
		}
	}
	return out, resp.Body
}

// latest reads the job's newest deployment, blocking past index when given.
func latest(t *testing.T, ts *servertest.TestServer, index uint64) (*state.Deployment, uint64) {
	t.Helper()
	path := "/v1/job/web/deployment"
	if index > 0 {
		path += fmt.Sprintf("?index=%d&wait=2s", index)
	}
	resp := ts.Do(t, http.MethodGet, path, "")
	if resp.Status == http.StatusServiceUnavailable && index > 0 {
		// Leadership is moving (a failover test): ask again.
		time.Sleep(50 * time.Millisecond)
		return nil, index
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("latest deployment: %d %s", resp.Status, resp.Body)
	}
	var d *state.Deployment
	resp.JSON(t, &d)
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Service-Index"), 10, 64)
	return d, idx
}

// waitDeployment blocks (HTTP blocking queries, bounded) until the job's
// newest deployment of version satisfies cond, and returns it.
func waitDeployment(t *testing.T, ts *servertest.TestServer, version uint64, what string, cond func(*state.Deployment) bool) *state.Deployment {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	index := uint64(1)
	var d *state.Deployment
	for time.Now().Before(deadline) {
		d, index = latest(t, ts, index)
		if d != nil && d.JobVersion == version && cond(d) {
			return d
		}
		if d != nil && d.JobVersion > version {
			// A newer version's deployment came before this poll saw the
			// awaited one's change (a failure and the rollback it
			// registers, a moment apart): look among all of the job's.
			if old := newestOfVersion(t, ts, version); old != nil && cond(old) {
				return old
			}
		}
	}
	t.Fatalf("timed out waiting for deployment of version %d to be %s; last: %+v", version, what, d)
	return nil
}

// newestOfVersion is the job's newest deployment of version, nil if none.
func newestOfVersion(t *testing.T, ts *servertest.TestServer, version uint64) *state.Deployment {
	t.Helper()
	var all []*state.Deployment
	ts.Do(t, http.MethodGet, "/v1/job/web/deployments", "").JSON(t, &all)
	var out *state.Deployment
	for _, d := range all {
		if d.JobVersion == version && (out == nil || d.CreateIndex > out.CreateIndex) {
			out = d
		}
	}
	return out
}

func status(s string) func(*state.Deployment) bool {
	return func(d *state.Deployment) bool { return d.Status == s }
}

// allocs lists the job's allocations.
func allocs(t *testing.T, ts *servertest.TestServer) []*state.Allocation {
	t.Helper()
	var out []*state.Allocation
	ts.Do(t, http.MethodGet, "/v1/job/web/allocations", "").JSON(t, &out)
	return out
}

// live counts the job's non-terminal allocations per job version.
func live(t *testing.T, ts *servertest.TestServer) map[uint64]int {
	out := map[uint64]int{}
	for _, a := range allocs(t, ts) {
		if !a.TerminalStatus() {
			out[a.JobVersion]++
		}
	}
	return out
}

// waitLive waits until the live allocations are exactly want (version → count).
func waitLive(t *testing.T, ts *servertest.TestServer, want map[uint64]int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got map[uint64]int
	for time.Now().Before(deadline) {
		if got = live(t, ts); fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("live allocations %v, want %v", got, want)
}

// settle waits until no evaluation of the job is pending: what the
// scheduler will do about the current state, it has done.
func settle(t *testing.T, ts *servertest.TestServer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var evals []struct{ Status string }
		ts.Do(t, http.MethodGet, "/v1/job/web/evaluations", "").JSON(t, &evals)
		pending := 0
		for _, e := range evals {
			if e.Status == state.EvalStatusPending {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("evaluations still pending")
}

// skipProcessInShort leaves tests whose tasks are real processes
// (raw_exec) out of the fast tier (go test -short); the full suite runs them.
func skipProcessInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs raw_exec tasks (real processes)")
	}
}

// devAgent starts an in-memory agent with one dev client node (raw_exec
// and the test drivers) and waits until its nodes are ready.
func devAgent(t *testing.T, opts ...servertest.Option) *servertest.TestServer {
	t.Helper()
	ts := servertest.Start(t, append([]servertest.Option{servertest.DevNodes(1)}, opts...)...)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var nodes []*state.Node
		ts.Do(t, http.MethodGet, "/v1/nodes", "").JSON(t, &nodes)
		ready := 0
		for _, n := range nodes {
			if n.Status == state.NodeStatusReady {
				ready++
			}
		}
		if ready >= ts.Config.DevNodes {
			return ts
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the dev nodes did not register")
	return nil
}
