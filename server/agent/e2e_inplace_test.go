package agent_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// inplaceJob is a two-allocation job in Nomad's JSON format; change edits
// its group and task before it is sent.
func inplaceJob(change func(group, task map[string]any)) string {
	task := map[string]any{"Name": "app", "Driver": "mock_driver", "Config": map[string]any{"run_for": "1h"},
		"KillTimeout": int64(100 * time.Millisecond), "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}
	group := map[string]any{"Name": "web", "Count": 2, "Update": update(nil), "Tasks": []any{task}}
	if change != nil {
		change(group, task)
	}
	buf, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": "web", "Datacenters": []string{"dc1"}, "TaskGroups": []any{group}}})
	return string(buf)
}

// liveIDs lists the IDs of the job's live allocations, all at version.
func liveIDs(t *testing.T, ts *servertest.TestServer, version uint64) []string {
	t.Helper()
	var out []string
	for _, a := range allocs(t, ts) {
		if a.TerminalStatus() {
			continue
		}
		if a.JobVersion != version {
			t.Fatalf("live allocation %s at version %d, want %d", a.ID, a.JobVersion, version)
		}
		out = append(out, a.ID)
	}
	sort.Strings(out)
	return out
}

// On a dev agent, through the HTTP API: each new version changes one thing.
// What Nomad updates in place (the update block, the restart policy, a
// task's KillTimeout) keeps the allocation IDs and still makes a deployment
// that ends successful; an Env or group Meta change replaces them.
func TestE2EInPlaceVersusDestructive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t)
	steps := []struct {
		name        string
		change      func(group, task map[string]any)
		destructive bool
	}{
		{"update block only", func(g, _ map[string]any) {
			g["Update"] = update(map[string]any{"MaxParallel": 2, "MinHealthyTime": int64(60 * time.Millisecond)})
		}, false},
		{"restart policy only", func(g, _ map[string]any) {
			g["RestartPolicy"] = map[string]any{"Attempts": 5, "Interval": int64(time.Minute), "Delay": int64(time.Second), "Mode": "delay"}
		}, false},
		{"task KillTimeout only", func(_, task map[string]any) { task["KillTimeout"] = int64(200 * time.Millisecond) }, false},
		{"task Env", func(_, task map[string]any) { task["Env"] = map[string]any{"MODE": "blue"} }, true},
		{"group Meta", func(g, _ map[string]any) { g["Meta"] = map[string]any{"tier": "front"} }, true},
	}
	resp := ts.Do(t, http.MethodPut, "/v1/jobs", inplaceJob(nil))
	if resp.Status != http.StatusOK {
		t.Fatalf("register: %d %s", resp.Status, resp.Body)
	}
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{0: 2})
	before := liveIDs(t, ts, 0)
	// Each step keeps the changes of the steps before it.
	var applied []func(group, task map[string]any)
	for i, step := range steps {
		version := uint64(i + 1)
		applied = append(applied, step.change)
		resp := ts.Do(t, http.MethodPut, "/v1/jobs", inplaceJob(func(g, task map[string]any) {
			for _, c := range applied {
				c(g, task)
			}
		}))
		if resp.Status != http.StatusOK {
			t.Fatalf("%s: register: %d %s", step.name, resp.Status, resp.Body)
		}
		d := waitDeployment(t, ts, version, "successful", status(state.DeploymentStatusSuccessful))
		if g := d.TaskGroups["web"]; g.DesiredTotal != 2 || g.HealthyAllocs != 2 || g.PlacedAllocs != 2 {
			t.Fatalf("%s: deployment of v%d: %+v", step.name, version, g)
		}
		waitLive(t, ts, map[uint64]int{version: 2})
		after := liveIDs(t, ts, version)
		if same := reflect.DeepEqual(after, before); same == step.destructive {
			t.Fatalf("%s (destructive=%v): allocations %v, were %v", step.name, step.destructive, after, before)
		}
		if step.destructive {
			for _, id := range after {
				for _, old := range before {
					if id == old {
						t.Fatalf("%s: allocation %s kept through a destructive change", step.name, id)
					}
				}
			}
		}
		before = after
	}
}
