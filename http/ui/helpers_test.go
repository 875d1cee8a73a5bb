package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// devAgent is a real agent (Raft, state store, HTTP) with one simulated
// client node running the mock driver, ready for jobs.
func devAgent(t *testing.T, opts ...servertest.Option) *servertest.TestServer {
	t.Helper()
	ts := servertest.Start(t, append([]servertest.Option{servertest.DevNodes(1)}, opts...)...)
	waitFor(t, 20*time.Second, "a ready client node", func() bool {
		var nodes []*state.Node
		r := ts.Do(t, http.MethodGet, "/v1/nodes", "", token(opts)...)
		if r.Status != http.StatusOK {
			return false
		}
		r.JSON(t, &nodes)
		return len(nodes) == 1 && nodes[0].Status == state.NodeStatusReady
	})
	return ts
}

// rootToken is the management secret of the ACL tests' agents.
const rootToken = "2b0c1ad4-0a0a-4c4e-9d77-3d0b4f0b7a11"

func token(opts []servertest.Option) []string {
	if len(opts) > 0 {
		return []string{"X-Service-Token", rootToken}
	}
	return nil
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobBody is a service job "web" of count mock_driver tasks; canary > 0
// makes its updates canary rollouts (auto-reverting), and out tells
// versions apart (the task's stdout).
func jobBody(count, canary int, out string) string {
	update := map[string]any{
		"MaxParallel": 1, "HealthCheck": "task_states", "Canary": canary, "AutoRevert": true,
		"MinHealthyTime": int64(300 * time.Millisecond), "HealthyDeadline": int64(20 * time.Second),
		"ProgressDeadline": int64(60 * time.Second),
	}
	group := map[string]any{
		"Name": "web", "Count": count, "Update": update,
		"Tasks": []any{map[string]any{"Name": "app", "Driver": "mock_driver",
			"Config":      map[string]any{"run_for": "1h", "stdout_string": out},
			"KillTimeout": int64(100 * time.Millisecond), "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}},
	}
	buf, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": "web", "Datacenters": []string{"dc1"}, "TaskGroups": []any{group}}})
	return string(buf)
}

func register(t *testing.T, ts *servertest.TestServer, body string, headers ...string) {
	t.Helper()
	if r := ts.Do(t, http.MethodPut, "/v1/jobs", body, headers...); r.Status != http.StatusOK {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
}

// latest is the job's latest deployment at version v (nil: none yet).
func latest(t *testing.T, ts *servertest.TestServer, v uint64, headers ...string) *state.Deployment {
	t.Helper()
	r := ts.Do(t, http.MethodGet, "/v1/job/web/deployment", "", headers...)
	if r.Status != http.StatusOK {
		t.Fatalf("latest deployment: %d %s", r.Status, r.Body)
	}
	var d *state.Deployment
	r.JSON(t, &d)
	if d == nil || d.JobVersion != v {
		return nil
	}
	return d
}

func waitDeployment(t *testing.T, ts *servertest.TestServer, v uint64, what string, ok func(*state.Deployment) bool, headers ...string) *state.Deployment {
	t.Helper()
	var d *state.Deployment
	waitFor(t, 30*time.Second, fmt.Sprintf("deployment of version %d %s", v, what), func() bool {
		d = latest(t, ts, v, headers...)
		return d != nil && ok(d)
	})
	return d
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
