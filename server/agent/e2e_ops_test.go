package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// Pause stops placements: while paused, a replacement that becomes healthy
// leads to no further placement; resume carries the rollout to the end.
func TestE2EPauseResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 3, update: update(nil)})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))

	slow := update(map[string]any{"MinHealthyTime": int64(700 * time.Millisecond)})
	register(t, ts, jobSpec{count: 3, update: slow, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d := waitDeployment(t, ts, 1, "placing its first replacement", func(d *state.Deployment) bool { return d.TaskGroups["web"].PlacedAllocs == 1 })
	res, _ := operate(t, ts, "pause", d.ID, fmt.Sprintf(`{"DeploymentID":%q,"Pause":true}`, d.ID), http.StatusOK)
	if res.EvalID != "" || res.EvalCreateIndex != 0 {
		t.Errorf("pause created an evaluation: %+v", res.raw)
	}
	if _, has := res.raw["RevertedJobVersion"]; has {
		t.Errorf("pause result carries RevertedJobVersion: %v", res.raw)
	}
	d = waitDeployment(t, ts, 1, "paused with its replacement healthy", func(d *state.Deployment) bool {
		return d.Status == state.DeploymentStatusPaused && d.TaskGroups["web"].HealthyAllocs == 1
	})
	if d.StatusDescription != state.DeploymentStatusDescriptionPaused {
		t.Errorf("paused: %q", d.StatusDescription)
	}
	settle(t, ts)
	d, _ = latestByID(t, ts, d.ID)
	if g := d.TaskGroups["web"]; g.PlacedAllocs != 1 {
		t.Fatalf("placements went on while paused: %+v", g)
	}
	if got := live(t, ts); got[1] != 1 || got[0] != 2 {
		t.Errorf("live while paused: %v", got)
	}
	res, _ = operate(t, ts, "pause", d.ID, fmt.Sprintf(`{"DeploymentID":%q,"Pause":false}`, d.ID), http.StatusOK)
	if res.EvalID == "" {
		t.Error("resume created no evaluation")
	}
	waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{1: 3})
}

// Fail's three rollback descriptions (design §6): no stable version, a
// stable version with another spec, a stable version with the same spec.
func TestE2EFailRollbackDescriptions(t *testing.T) {
	ts := devAgent(t)
	revert := update(map[string]any{"AutoRevert": true, "MinHealthyTime": int64(20 * time.Second), "HealthyDeadline": int64(30 * time.Second)})

	// The first version has no stable version to go back to.
	register(t, ts, jobSpec{count: 1, update: revert})
	d0 := waitDeployment(t, ts, 0, "running", status(state.DeploymentStatusRunning))
	res, _ := operate(t, ts, "fail", d0.ID, "", http.StatusOK)
	if string(res.raw["RevertedJobVersion"]) != "null" {
		t.Errorf("fail without a stable version: RevertedJobVersion %s, want null", res.raw["RevertedJobVersion"])
	}
	if d, _ := latestByID(t, ts, d0.ID); d.StatusDescription != "Deployment marked as failed - no stable job version to auto revert to" {
		t.Errorf("first fail: %q", d.StatusDescription)
	}
	// A failed deployment answers every operation with 409.
	for op, want := range map[string]string{
		"fail": "can't fail terminal deployment", "promote": "can't promote terminal deployment",
		"unblock": "can't unblock terminal deployment",
	} {
		body := ""
		if op == "promote" {
			body = fmt.Sprintf(`{"DeploymentID":%q,"All":true}`, d0.ID)
		}
		if _, got := operate(t, ts, op, d0.ID, body, http.StatusConflict); got != want {
			t.Errorf("%s on a failed deployment: %q, want %q", op, got, want)
		}
	}

	// Version 1 becomes stable; version 2 (another spec) is failed and
	// rolled back to it as version 3.
	fast := update(map[string]any{"AutoRevert": true})
	register(t, ts, jobSpec{count: 1, update: fast, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	register(t, ts, jobSpec{count: 1, update: revert, config: map[string]any{"run_for": "1h", "stdout_string": "v2"}})
	d2 := waitDeployment(t, ts, 2, "running", status(state.DeploymentStatusRunning))
	res, _ = operate(t, ts, "fail", d2.ID, "", http.StatusOK)
	if res.RevertedJobVersion == nil || *res.RevertedJobVersion != 1 {
		t.Errorf("fail of version 2: RevertedJobVersion %s, want 1", res.raw["RevertedJobVersion"])
	}
	if d, _ := latestByID(t, ts, d2.ID); d.StatusDescription != "Deployment marked as failed - rolling back to job version 1" {
		t.Errorf("second fail: %q", d.StatusDescription)
	}
	// Version 3 has version 1's spec (which has not been run under version
	// 3 yet): failing it finds stable version 1 with the same spec.
	d3 := waitDeployment(t, ts, 3, "created", func(d *state.Deployment) bool { return d.Active() })
	res, _ = operate(t, ts, "fail", d3.ID, "", http.StatusOK)
	if string(res.raw["RevertedJobVersion"]) != "null" {
		t.Errorf("fail of version 3: RevertedJobVersion %s, want null", res.raw["RevertedJobVersion"])
	}
	if d, _ := latestByID(t, ts, d3.ID); d.StatusDescription != "Deployment marked as failed - not rolling back to stable job version 1 as current job has same specification" {
		t.Errorf("third fail: %q", d.StatusDescription)
	}
}

// Manual health: the client reports nothing; healthy allocations set by
// hand let the rollout proceed, an unhealthy one fails the deployment.
func TestE2EManualHealth(t *testing.T) {
	ts := devAgent(t)
	manual := update(map[string]any{"HealthCheck": "manual", "AutoRevert": true})
	register(t, ts, jobSpec{count: 2, update: manual})
	d := waitDeployment(t, ts, 0, "placed", func(d *state.Deployment) bool { return d.TaskGroups["web"].PlacedAllocs == 2 })
	var ids []string
	for _, a := range allocs(t, ts) {
		ids = append(ids, a.ID)
	}
	body := fmt.Sprintf(`{"DeploymentID":%q,"HealthyAllocationIDs":[%q,%q]}`, d.ID, ids[0], ids[1])
	res, _ := operate(t, ts, "allocation-health", d.ID, body, http.StatusOK)
	if string(res.raw["RevertedJobVersion"]) != "null" || res.EvalID == "" {
		t.Errorf("healthy: %v", res.raw)
	}
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))

	register(t, ts, jobSpec{count: 2, update: manual, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d1 := waitDeployment(t, ts, 1, "placed", func(d *state.Deployment) bool { return d.TaskGroups["web"].PlacedAllocs == 1 })
	var fresh string
	for _, a := range allocs(t, ts) {
		if a.JobVersion == 1 && !a.TerminalStatus() {
			fresh = a.ID
		}
	}
	body = fmt.Sprintf(`{"DeploymentID":%q,"UnhealthyAllocationIDs":[%q]}`, d1.ID, fresh)
	res, _ = operate(t, ts, "allocation-health", d1.ID, body, http.StatusOK)
	if res.RevertedJobVersion == nil || *res.RevertedJobVersion != 0 {
		t.Errorf("unhealthy: RevertedJobVersion %s, want 0", res.raw["RevertedJobVersion"])
	}
	if got, _ := latestByID(t, ts, d1.ID); got.Status != state.DeploymentStatusFailed ||
		got.StatusDescription != "Failed due to unhealthy allocations - rolling back to job version 0" {
		t.Errorf("after unhealthy: %s %q", got.Status, got.StatusDescription)
	}
	// An allocation of another deployment is refused, and so is a group
	// that does not use manual health.
	_, msg := operate(t, ts, "allocation-health", d1.ID, fmt.Sprintf(`{"DeploymentID":%q,"HealthyAllocationIDs":[%q]}`, d1.ID, ids[0]), http.StatusConflict)
	if msg != "can't set health of allocations for a terminal deployment" {
		t.Errorf("health on a failed deployment: %q", msg)
	}
}

// A deployment whose allocations never become healthy fails at the
// progress deadline.
func TestE2EProgressDeadline(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 1, update: update(map[string]any{"HealthCheck": "manual",
		"HealthyDeadline": int64(500 * time.Millisecond), "ProgressDeadline": int64(time.Second)})})
	d := waitDeployment(t, ts, 0, "failed", status(state.DeploymentStatusFailed))
	if d.StatusDescription != state.DeploymentStatusDescriptionProgressDeadline {
		t.Errorf("deadline: %q", d.StatusDescription)
	}
	var history []state.DeploymentEvent
	ts.Do(t, http.MethodGet, "/v1/deployment/history/"+d.ID, "").JSON(t, &history)
	if last := history[len(history)-1]; last.Cause.Kind != "watcher" || last.Cause.Rule != "progress-deadline" {
		t.Errorf("cause of the failure: %+v", last.Cause)
	}
}

// Canaries with AutoPromote are promoted by the watcher once healthy.
func TestE2EAutoPromote(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 2, update: update(nil)})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, ts, jobSpec{count: 2, update: update(map[string]any{"Canary": 1, "AutoPromote": true}),
		config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d := waitDeployment(t, ts, 1, "created", func(*state.Deployment) bool { return true })
	if d.Status == state.DeploymentStatusRunning && d.StatusDescription != state.DeploymentStatusDescriptionRunningAutoPromotion &&
		d.StatusDescription != state.DeploymentStatusDescriptionRunning {
		t.Errorf("auto-promote deployment: %q", d.StatusDescription)
	}
	d = waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	if !d.TaskGroups["web"].Promoted {
		t.Error("not promoted")
	}
	waitLive(t, ts, map[uint64]int{1: 2})
}

// A version whose task cannot start is unhealthy: without a progress
// deadline the watcher fails the deployment at once and, with AutoRevert,
// rolls back to the stable version.
func TestE2EAutoRevert(t *testing.T) {
	ts := devAgent(t)
	auto := update(map[string]any{"AutoRevert": true, "ProgressDeadline": 0})
	register(t, ts, jobSpec{count: 2, update: auto})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, ts, jobSpec{count: 2, update: auto, config: map[string]any{"start_error": "no such image"}})
	waitDeployment(t, ts, 2, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{2: 2})
	var all []*state.Deployment
	ts.Do(t, http.MethodGet, "/v1/job/web/deployments", "").JSON(t, &all)
	for _, d := range all {
		if d.JobVersion == 1 && (d.Status != state.DeploymentStatusFailed || d.StatusDescription != "Failed due to unhealthy allocations - rolling back to job version 0") {
			t.Errorf("version 1 deployment: %s %q", d.Status, d.StatusDescription)
		}
	}
	if len(all) != 3 {
		t.Errorf("%d deployments, want one per version (0, 1, 2)", len(all))
	}
}

// A multiregion job's deployment ends blocked, waiting for its peers;
// unblock marks it successful. Unblock of a running one is refused.
func TestE2EMultiregionUnblock(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 1, update: update(map[string]any{"MinHealthyTime": int64(500 * time.Millisecond)}), multiregion: true})
	d := waitDeployment(t, ts, 0, "running", status(state.DeploymentStatusRunning))
	if !d.IsMultiregion {
		t.Error("IsMultiregion false")
	}
	if _, msg := operate(t, ts, "unblock", d.ID, "", http.StatusConflict); msg != "deployment is not blocked" {
		t.Errorf("unblock of a running deployment: %q", msg)
	}
	d = waitDeployment(t, ts, 0, "blocked", status(state.DeploymentStatusBlocked))
	if d.StatusDescription != state.DeploymentStatusDescriptionBlocked {
		t.Errorf("blocked: %q", d.StatusDescription)
	}
	res, _ := operate(t, ts, "unblock", d.ID, "", http.StatusOK)
	if _, has := res.raw["RevertedJobVersion"]; has {
		t.Errorf("unblock carries RevertedJobVersion: %v", res.raw)
	}
	d, _ = latestByID(t, ts, d.ID)
	if d.Status != state.DeploymentStatusSuccessful || d.StatusDescription != state.DeploymentStatusDescriptionSuccessful {
		t.Errorf("after unblock: %s %q", d.Status, d.StatusDescription)
	}
	var versions struct{ Versions []*state.Job }
	ts.Do(t, http.MethodGet, "/v1/job/web/versions", "").JSON(t, &versions)
	if len(versions.Versions) != 1 || !versions.Versions[0].Stable {
		t.Errorf("the unblocked version is not stable: %+v", versions.Versions)
	}
}

// A count change is a new version whose deployment places only the extra
// allocations; the others are updated in place and report health again.
func TestE2EScaleInPlace(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 2, update: update(nil)})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	before := map[string]bool{}
	for _, a := range allocs(t, ts) {
		before[a.ID] = true
	}
	register(t, ts, jobSpec{count: 4, update: update(nil)})
	d := waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	if g := d.TaskGroups["web"]; g.DesiredTotal != 4 || g.HealthyAllocs != 4 {
		t.Errorf("scale deployment %+v", g)
	}
	waitLive(t, ts, map[uint64]int{1: 4})
	kept := 0
	for _, a := range allocs(t, ts) {
		if before[a.ID] && !a.TerminalStatus() {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("%d of the first 2 allocations kept in place, want 2", kept)
	}
}

// A node that stops heartbeating mid-deployment goes down, its allocations
// are lost and replaced on the other node, and the deployment still ends
// successful.
func TestE2ENodeLossMidDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	// 1 s: with 500 ms, node b itself was once marked down under -race on a
	// loaded machine, its heartbeat late.
	ts := servertest.Start(t, servertest.HeartbeatTTL(time.Second))
	var wg sync.WaitGroup
	start := func(name string) context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		c, err := client.New(client.Config{Servers: []string{ts.URL}, NodeName: name, Datacenter: "dc1", TestDrivers: true,
			Resources: api.Resources{CPU: 300, MemoryMB: 1024}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx) }()
		return cancel
	}
	stopA := start("a")
	t.Cleanup(func() { stopA(); wg.Wait() })
	// Node a takes all three allocations (300 MHz for 3×100); then b joins.
	register(t, ts, jobSpec{count: 3, update: update(map[string]any{"MinHealthyTime": int64(1500 * time.Millisecond)})})
	waitDeployment(t, ts, 0, "placed", func(d *state.Deployment) bool { return d.TaskGroups["web"].PlacedAllocs == 3 })
	stopB := start("b")
	t.Cleanup(stopB)
	stopA() // a goes silent before its allocations are healthy
	d := waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	lost := 0
	for _, a := range allocs(t, ts) {
		if a.ClientStatus == state.AllocClientStatusLost {
			lost++
		}
	}
	if lost != 3 {
		t.Errorf("%d allocations lost, want the 3 of the silent node", lost)
	}
	if g := d.TaskGroups["web"]; g.HealthyAllocs != 3 {
		t.Errorf("deployment after the node loss %+v", g)
	}
	var nodes []*state.Node
	ts.Do(t, http.MethodGet, "/v1/nodes", "").JSON(t, &nodes)
	for _, n := range nodes {
		if n.Name == "a" && n.Status != state.NodeStatusDown {
			t.Errorf("silent node is %s", n.Status)
		}
	}
}

// A job purged and registered again under the same ID starts over at
// version 0 with a deployment of its own, not the old one's allocations.
func TestE2EPurgeThenRegisterAgain(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobSpec{count: 2, update: update(nil)})
	first := waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	if resp := ts.Do(t, http.MethodDelete, "/v1/job/web?purge=true", ""); resp.Status != http.StatusOK {
		t.Fatalf("purge: %d %s", resp.Status, resp.Body)
	}
	register(t, ts, jobSpec{count: 2, update: update(nil)})
	again := waitDeployment(t, ts, 0, "a new successful deployment", func(d *state.Deployment) bool {
		return d.ID != first.ID && d.Status == state.DeploymentStatusSuccessful
	})
	if g := again.TaskGroups["web"]; g.PlacedAllocs != 2 || g.HealthyAllocs != 2 {
		t.Errorf("deployment after the purge %+v", g)
	}
	waitLive(t, ts, map[uint64]int{0: 2})
	// (Allocation stubs, as Nomad's, carry no DeploymentID: the live ones
	// must be the new deployment's placements.)
	for _, a := range allocs(t, ts) {
		if !a.TerminalStatus() && a.CreateIndex < again.CreateIndex {
			t.Errorf("live allocation %s (created at %d) is older than the new deployment (%d)", a.Name, a.CreateIndex, again.CreateIndex)
		}
	}
}
