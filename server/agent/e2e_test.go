package agent_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// The README's walk-through: a first deploy succeeds, a canary version is
// promoted (refused while its canary is not healthy yet), and a third
// version is failed by hand and rolled back to the stable one.
func TestE2EDeployCanaryPromoteFailRollback(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t)

	reg := register(t, ts, jobSpec{count: 3, update: update(nil)})
	d0 := waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	if d0.StatusDescription != state.DeploymentStatusDescriptionSuccessful || d0.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("first deployment: %q, JobModifyIndex %d (register said %d)", d0.StatusDescription, d0.JobModifyIndex, reg.JobModifyIndex)
	}
	if g := d0.TaskGroups["web"]; g.DesiredTotal != 3 || g.PlacedAllocs != 3 || g.HealthyAllocs != 3 {
		t.Errorf("first deployment counters %+v", g)
	}
	waitLive(t, ts, map[uint64]int{0: 3})

	// Version 1: one canary that takes 1.5s to be healthy.
	canary := update(map[string]any{"Canary": 1, "AutoRevert": true, "MinHealthyTime": int64(1500 * time.Millisecond)})
	register(t, ts, jobSpec{count: 3, update: canary, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d1 := waitDeployment(t, ts, 1, "placing its canary", func(d *state.Deployment) bool { return len(d.TaskGroups["web"].PlacedCanaries) == 1 })
	if d1.StatusDescription != state.DeploymentStatusDescriptionRunningNeedsPromotion {
		t.Errorf("canary deployment: %q", d1.StatusDescription)
	}
	_, body := operate(t, ts, "promote", d1.ID, fmt.Sprintf(`{"DeploymentID":%q,"All":true}`, d1.ID), http.StatusConflict)
	if body != `Task group "web" has 0/1 healthy allocations` {
		t.Errorf("early promote: %q", body)
	}
	waitDeployment(t, ts, 1, "its canary healthy", func(d *state.Deployment) bool { return d.TaskGroups["web"].HealthyAllocs == 1 })
	res, _ := operate(t, ts, "promote", d1.ID, fmt.Sprintf(`{"DeploymentID":%q,"All":true}`, d1.ID), http.StatusOK)
	if _, has := res.raw["RevertedJobVersion"]; has || res.EvalID == "" {
		t.Errorf("promote result: %v", res.raw)
	}
	d1 = waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))
	if g := d1.TaskGroups["web"]; !g.Promoted || g.HealthyAllocs != 3 {
		t.Errorf("promoted deployment %+v", g)
	}
	waitLive(t, ts, map[uint64]int{1: 3})

	// Version 2, failed by hand: rolled back to version 1 (stable), which
	// comes back as version 3 with its own deployment.
	register(t, ts, jobSpec{count: 3, update: canary, config: map[string]any{"run_for": "1h", "stdout_string": "v2"}})
	d2 := waitDeployment(t, ts, 2, "running", status(state.DeploymentStatusRunning))
	res, _ = operate(t, ts, "fail", d2.ID, "", http.StatusOK)
	if res.RevertedJobVersion == nil || *res.RevertedJobVersion != 1 {
		t.Errorf("fail: RevertedJobVersion %v, want 1", res.raw["RevertedJobVersion"])
	}
	d2, _ = latestByID(t, ts, d2.ID)
	if d2.Status != state.DeploymentStatusFailed || d2.StatusDescription != "Deployment marked as failed - rolling back to job version 1" {
		t.Errorf("failed deployment: %s %q", d2.Status, d2.StatusDescription)
	}
	d3 := waitDeployment(t, ts, 3, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{3: 3})
	if g := d3.TaskGroups["web"]; g.HealthyAllocs != 3 {
		t.Errorf("rollback deployment %+v", g)
	}

	var history []state.DeploymentEvent
	ts.Do(t, http.MethodGet, "/v1/deployment/history/"+d2.ID, "").JSON(t, &history)
	if len(history) != 2 || history[1].NewStatus != "failed" || history[1].Cause.Operation != "fail" || history[1].Index != res.Index {
		t.Errorf("history of the failed deployment: %+v", history)
	}
}

func latestByID(t *testing.T, ts *servertest.TestServer, id string) (*state.Deployment, int) {
	t.Helper()
	var d *state.Deployment
	r := ts.Do(t, http.MethodGet, "/v1/deployment/"+id, "")
	r.JSON(t, &d)
	return d, r.Status
}
