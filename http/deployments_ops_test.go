package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
)

const depPath = "/v1/deployment/"

func TestDeploymentFailWithoutAutoRevert(t *testing.T) {
	w := newWorld(t)
	// No body at all, and PUT as the Go client sends it.
	res := expectAction(t, w.f.Do("POST", depPath+"fail/"+w.d.ID, ""), true, false, nil)
	d := w.deployment(t)
	expectStatus(t, d, state.DeploymentStatusFailed, "Deployment marked as failed")
	if d.ModifyIndex != res.Index {
		t.Errorf("deployment ModifyIndex %d, want %d", d.ModifyIndex, res.Index)
	}
	expectEval(t, w.f, res.EvalID, d, res.Index)
	// Terminal now: every operation is refused with Nomad's text.
	for _, c := range []struct{ path, body, msg string }{
		{"fail/", "", "can't fail terminal deployment"},
		{"pause/", `{"Pause":true}`, "can't pause terminal deployment"},
		{"pause/", `{"Pause":false}`, "can't resume terminal deployment"},
		{"promote/", `{"All":true}`, "can't promote terminal deployment"},
		{"unblock/", "", "can't unblock terminal deployment"},
		{"allocation-health/", `{"HealthyAllocationIDs":["` + w.allocs[0].ID + `"]}`, "can't set health of allocations for a terminal deployment"},
	} {
		expectError(t, w.f.Do("PUT", depPath+c.path+w.d.ID, c.body), 409, c.msg)
	}
	if got := w.deployment(t); got.ModifyIndex != res.Index {
		t.Errorf("a refused operation wrote: ModifyIndex %d", got.ModifyIndex)
	}
}

func TestDeploymentFailNoStableVersion(t *testing.T) {
	w := newWorld(t, deploytest.Group{Name: "web", Count: 1, AutoRevert: true})
	expectAction(t, w.f.Do("PUT", depPath+"fail/"+w.d.ID, `{"DeploymentID":"`+w.d.ID+`","Region":"","Namespace":"","SecretID":""}`), true, false, nil)
	expectStatus(t, w.deployment(t), state.DeploymentStatusFailed, "Deployment marked as failed - no stable job version to auto revert to")
}

func TestDeploymentFailRollsBack(t *testing.T) {
	f := deploytest.Start(t)
	g := deploytest.Group{Name: "web", Count: 1, AutoRevert: true}
	v0 := f.RegisterJob(deploytest.Job("default", "web", "v0", g))
	f.SetStable(v0, 0)
	v1 := f.RegisterJob(deploytest.Job("default", "web", "v1", g))
	d, _ := f.Deploy(v1)
	res := expectAction(t, f.Do("PUT", depPath+"fail/"+d.ID, ""), true, false, ptr[uint64](0))
	expectStatus(t, f.Deployment(d.ID), state.DeploymentStatusFailed, "Deployment marked as failed - rolling back to job version 0")
	// The stable spec is registered again as a new version, in the same entry.
	_, job, _ := f.Deps.State().Job(nil, "default", "web")
	if job.Version != 2 || job.Meta["v"] != "v0" || job.JobModifyIndex != res.Index || job.Stop {
		t.Errorf("job after rollback: version %d meta %v JobModifyIndex %d (want 2, v0, %d)", job.Version, job.Meta, job.JobModifyIndex, res.Index)
	}
}

func TestDeploymentFailSameSpecNoRollback(t *testing.T) {
	g := deploytest.Group{Name: "web", Count: 1, AutoRevert: true}
	w := newWorld(t, g)
	// The version the deployment tracks is itself the latest stable one.
	w.f.SetStable(w.job, 0)
	expectAction(t, w.f.Do("PUT", depPath+"fail/"+w.d.ID, ""), true, false, nil)
	expectStatus(t, w.deployment(t), state.DeploymentStatusFailed,
		"Deployment marked as failed - not rolling back to stable job version 0 as current job has same specification")
	if _, job, _ := w.f.Deps.State().Job(nil, "default", "web"); job.Version != 0 {
		t.Errorf("job version %d, want 0 (nothing registered)", job.Version)
	}
}

func TestDeploymentPauseResume(t *testing.T) {
	w := newWorld(t)
	// The write-request fields of Nomad's client are accepted and ignored.
	res := expectAction(t, w.f.Do("PUT", depPath+"pause/"+w.d.ID, `{"DeploymentID":"`+w.d.ID+`","Pause":true,"Region":"elsewhere","Namespace":"prod","SecretID":"x","AuthToken":"y","IdempotencyToken":"z"}`), false, true, nil)
	d := w.deployment(t)
	expectStatus(t, d, state.DeploymentStatusPaused, "Deployment is paused")
	if d.ModifyIndex != res.Index {
		t.Errorf("ModifyIndex %d, want %d", d.ModifyIndex, res.Index)
	}
	if _, evals, _ := w.f.Deps.State().EvalsByJob(nil, "default", "web"); len(evals) != 0 {
		t.Errorf("pause created evaluations: %d", len(evals))
	}
	w.f.Clock.Advance(time.Minute)
	res = expectAction(t, w.f.Do("POST", depPath+"pause/"+w.d.ID, `{"pause":false}`), false, false, nil)
	d = w.deployment(t)
	expectStatus(t, d, state.DeploymentStatusRunning, "Deployment is running")
	expectEval(t, w.f, res.EvalID, d, res.Index)
	// Resuming resets the progress deadline from now.
	if by := d.TaskGroups["web"].RequireProgressBy; by == nil || !by.Equal(w.f.Clock.Now().Add(10*time.Minute)) {
		t.Errorf("RequireProgressBy %v, want now + 10m", by)
	}
}

func TestDeploymentPromote(t *testing.T) {
	w := newWorld(t,
		deploytest.Group{Name: "web", Count: 3, Canary: 1},
		deploytest.Group{Name: "api", Count: 2, Canary: 2},
		deploytest.Group{Name: "db", Count: 1})
	expectStatus(t, w.d, state.DeploymentStatusRunning, "Deployment is running but requires manual promotion")
	// Every failing group, in name order.
	expectError(t, w.f.Do("PUT", depPath+"promote/"+w.d.ID, `{"All":true}`), 409,
		`Task group "api" has 0/2 healthy allocations; Task group "web" has 0/1 healthy allocations`)
	expectError(t, w.f.Do("PUT", depPath+"promote/"+w.d.ID, `{"Groups":["web"]}`), 409, `Task group "web" has 0/1 healthy allocations`)
	expectError(t, w.f.Do("PUT", depPath+"promote/"+w.d.ID, `{"Groups":["web","cache"]}`), 400,
		`Task group "cache" is not part of deployment "`+w.d.ID+`"`)
	w.f.Health(true, w.allocIDs("web")...)
	w.f.Health(true, w.allocIDs("api")[0])
	expectError(t, w.f.Do("PUT", depPath+"promote/"+w.d.ID, `{"All":true}`), 409, `Task group "api" has 1/2 healthy allocations`)
	// One group at a time: the description stays until nothing needs promotion.
	res := expectAction(t, w.f.Do("PUT", depPath+"promote/"+w.d.ID, `{"DeploymentID":"`+w.d.ID+`","Groups":["web"],"PromotedAt":0}`), false, false, nil)
	d := w.deployment(t)
	expectEval(t, w.f, res.EvalID, d, res.Index)
	if !d.TaskGroups["web"].Promoted || d.TaskGroups["api"].Promoted {
		t.Errorf("promoted: web %v api %v", d.TaskGroups["web"].Promoted, d.TaskGroups["api"].Promoted)
	}
	expectStatus(t, d, state.DeploymentStatusRunning, "Deployment is running but requires manual promotion")
	_, a, _ := w.f.Deps.State().Alloc(nil, w.allocIDs("web")[0])
	if a.DeploymentStatus == nil || a.DeploymentStatus.Canary || a.ModifyIndex != res.Index {
		t.Errorf("promoted canary: %+v", a.DeploymentStatus)
	}
	w.f.Health(true, w.allocIDs("api")[1])
	expectAction(t, w.f.Do("PUT", depPath+"promote/"+w.d.ID, `{"All":true}`), false, false, nil)
	d = w.deployment(t)
	expectStatus(t, d, state.DeploymentStatusRunning, "Deployment is running")
	for name, g := range d.TaskGroups {
		if !g.Promoted {
			t.Errorf("group %s not promoted", name)
		}
	}
}

func TestDeploymentAllocHealth(t *testing.T) {
	f := deploytest.Start(t)
	other := newWorldOn(t, f, deploytest.Group{Name: "web", Count: 1, HealthCheck: "manual"})
	job := f.RegisterJob(deploytest.Job("default", "api", "v0",
		deploytest.Group{Name: "manual", Count: 2, HealthCheck: "manual"},
		deploytest.Group{Name: "auto", Count: 1}))
	d, allocs := f.Deploy(job)
	byGroup := map[string][]string{}
	for _, a := range allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a.ID)
	}
	path := depPath + "allocation-health/" + d.ID
	for _, c := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{}`, 400, "must specify at least one healthy/unhealthy allocation ID"},
		{`{"HealthyAllocationIDs":[],"UnhealthyAllocationIDs":[]}`, 400, "must specify at least one healthy/unhealthy allocation ID"},
		{`{"HealthyAllocationIDs":["` + otherID + `"]}`, 400, `unknown alloc "` + otherID + `"`},
		{`{"HealthyAllocationIDs":["abc"]}`, 400, `alloc "abc" lookup failed: index error: UUID must be 36 characters`},
		{`{"UnhealthyAllocationIDs":["` + other.allocs[0].ID + `"]}`, 400, `alloc "` + other.allocs[0].ID + `" is not part of deployment "` + d.ID + `"`},
		{`{"HealthyAllocationIDs":["` + byGroup["auto"][0] + `"]}`, 409, `Task group "auto" of alloc "` + byGroup["auto"][0] + `" uses health_check = "checks": allocation health can only be set by hand when it is "manual"`},
		{`{"HealthyAllocationIDs":["` + byGroup["manual"][0] + `"],"Bogus":1}`, 400, `DeploymentAllocHealthRequest decoding failed: json: unknown field "Bogus"`},
		{``, 400, `DeploymentAllocHealthRequest decoding failed: EOF`},
	} {
		expectError(t, f.Do("PUT", path, c.body), c.status, c.msg)
	}
	res := expectAction(t, f.Do("PUT", path, `{"HealthyAllocationIDs":["`+byGroup["manual"][0]+`"]}`), true, false, nil)
	got := f.Deployment(d.ID)
	expectStatus(t, got, state.DeploymentStatusRunning, "Deployment is running")
	if g := got.TaskGroups["manual"]; g.HealthyAllocs != 1 || g.UnhealthyAllocs != 0 {
		t.Errorf("counters: %+v", g)
	}
	expectEval(t, f, res.EvalID, got, res.Index)
	_, a, _ := f.Deps.State().Alloc(nil, byGroup["manual"][0])
	if !a.DeploymentStatus.IsHealthy() || a.DeploymentStatus.ModifyIndex != res.Index || !a.DeploymentStatus.Timestamp.Equal(f.Clock.Now()) {
		t.Errorf("alloc health: %+v", a.DeploymentStatus)
	}
	// An unhealthy one fails the deployment; without AutoRevert, no suffix.
	expectAction(t, f.Do("POST", path, `{"DeploymentID":"`+d.ID+`","UnhealthyAllocationIDs":["`+byGroup["manual"][1]+`"]}`), true, false, nil)
	got = f.Deployment(d.ID)
	expectStatus(t, got, state.DeploymentStatusFailed, "Failed due to unhealthy allocations")
	if g := got.TaskGroups["manual"]; g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 {
		t.Errorf("counters: %+v", g)
	}
}

func TestDeploymentAllocHealthRollback(t *testing.T) {
	for _, c := range []struct {
		name     string
		stable   bool
		desc     string
		reverted *uint64
	}{
		// Unlike fail, no "no stable job version" suffix (reference §4.6).
		{"no stable version", false, "Failed due to unhealthy allocations", nil},
		{"stable differs", true, "Failed due to unhealthy allocations - rolling back to job version 0", ptr[uint64](0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := deploytest.Start(t)
			g := deploytest.Group{Name: "web", Count: 1, HealthCheck: "manual", AutoRevert: true}
			v0 := f.RegisterJob(deploytest.Job("default", "web", "v0", g))
			if c.stable {
				f.SetStable(v0, 0)
			}
			v1 := f.RegisterJob(deploytest.Job("default", "web", "v1", g))
			d, allocs := f.Deploy(v1)
			expectAction(t, f.Do("PUT", depPath+"allocation-health/"+d.ID, `{"UnhealthyAllocationIDs":["`+allocs[0].ID+`"]}`), true, false, c.reverted)
			expectStatus(t, f.Deployment(d.ID), state.DeploymentStatusFailed, c.desc)
		})
	}
}

func TestDeploymentUnblock(t *testing.T) {
	w := newWorld(t)
	expectError(t, w.f.Do("PUT", depPath+"unblock/"+w.d.ID, ""), 409, "deployment is not blocked")
	// The scheduler ends a multiregion deployment blocked.
	deploytest.Apply(w.f, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: &state.Plan{
		EvalID: otherID, Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex,
		DeploymentUpdates: []*state.DeploymentStatusUpdate{{DeploymentID: w.d.ID, Status: state.DeploymentStatusBlocked, StatusDescription: state.DeploymentStatusDescriptionBlocked}},
		Now:               w.f.Clock.Now().UnixNano(),
	}})
	res := expectAction(t, w.f.Do("PUT", depPath+"unblock/"+w.d.ID, `{"DeploymentID":"`+w.d.ID+`","Region":"","Namespace":"","SecretID":""}`), false, false, nil)
	d := w.deployment(t)
	expectStatus(t, d, state.DeploymentStatusSuccessful, "Deployment completed successfully")
	expectEval(t, w.f, res.EvalID, d, res.Index)
	if _, v, _ := w.f.Deps.State().JobVersion(nil, "default", "web", 0); !v.Stable {
		t.Error("job version 0 is not stable after unblock")
	}
}

func TestDeploymentWriteErrors(t *testing.T) {
	w := newWorld(t)
	id := w.d.ID
	for _, c := range []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"PUT", "fail/" + otherID, "", 404, "deployment not found"},
		{"PUT", "pause/" + otherID, `{"Pause":true}`, 404, "deployment not found"},
		{"PUT", "promote/" + otherID, `{"All":true}`, 404, "deployment not found"},
		{"PUT", "allocation-health/" + otherID, `{"HealthyAllocationIDs":["` + otherID + `"]}`, 404, "deployment not found"},
		{"PUT", "unblock/" + otherID, "", 404, "deployment not found"},
		{"PUT", "fail/" + id[:8], "", 400, `Invalid deployment ID "` + id[:8] + `": a 36-character UUID is required`},
		{"POST", "pause/zzzzzzzz-0000-4000-8000-000000000000", `{}`, 400, `Invalid deployment ID "zzzzzzzz-0000-4000-8000-000000000000": a 36-character UUID is required`},
		{"PUT", "pause/" + id, "", 400, "DeploymentPauseRequest decoding failed: EOF"},
		{"PUT", "pause/" + id, `{`, 400, "DeploymentPauseRequest decoding failed: unexpected EOF"},
		{"PUT", "pause/" + id, `{"Pause":"yes"}`, 400, "DeploymentPauseRequest decoding failed: json: cannot unmarshal string into Go struct field deploymentPauseRequest.Pause of type bool"},
		{"PUT", "pause/" + id, `{"Pause":true,"All":true}`, 400, `DeploymentPauseRequest decoding failed: json: unknown field "All"`},
		{"PUT", "pause/" + id, `{"Pause":true} {}`, 400, "DeploymentPauseRequest decoding failed: unexpected data after the JSON object"},
		{"PUT", "pause/" + id, `{"DeploymentID":"` + otherID + `","Pause":true}`, 400, "Deployment ID does not match"},
		{"PUT", "promote/" + id, `{"DeploymentID":"` + otherID + `","All":true}`, 400, "Deployment ID does not match"},
		{"PUT", "fail/" + id, `{"DeploymentID":"` + otherID + `"}`, 400, "Deployment ID does not match"},
		{"PUT", "unblock/" + id, `{"DeploymentID":"` + otherID + `"}`, 400, "Deployment ID does not match"},
		{"PUT", "allocation-health/" + id, `{"DeploymentID":"` + otherID + `","HealthyAllocationIDs":["` + w.allocs[0].ID + `"]}`, 400, "Deployment ID does not match"},
		{"PUT", "fail/" + id, `{"Reason":"x"}`, 400, `DeploymentFailRequest decoding failed: json: unknown field "Reason"`},
		{"PUT", "unblock/" + id, `[]`, 400, "DeploymentUnblockRequest decoding failed: json: cannot unmarshal array into Go value of type http.deploymentIDRequest"},
		{"GET", "fail/" + id, "", 405, "method GET not allowed"},
		{"DELETE", "pause/" + id, "", 405, "method DELETE not allowed"},
		{"PUT", id, "", 405, "method PUT not allowed"},
	} {
		resp := w.f.Do(c.method, depPath+c.path, c.body)
		expectError(t, resp, c.status, c.msg)
		if c.status == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
	if d := w.deployment(t); d.ModifyIndex != w.d.ModifyIndex {
		t.Errorf("a rejected request wrote: ModifyIndex %d, want %d", d.ModifyIndex, w.d.ModifyIndex)
	}
}

// With no deployment service, writes are 501; reads are served.
func TestDeploymentWritesWithoutService(t *testing.T) {
	w := newWorld(t)
	srv := httptest.NewServer(ctlhttp.New(w.f.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(w.f.Server)}))
	defer srv.Close()
	do := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := do("PUT", depPath+"fail/"+w.d.ID); code != 501 || body != "deployment operations are not available on this server" {
		t.Errorf("fail without a service: %d %q", code, body)
	}
	if code, body := do("GET", depPath+w.d.ID); code != 200 || body != mustJSON(t, w.d) {
		t.Errorf("read without a service: %d %q", code, body)
	}
}
