package http_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

func TestDeploymentRead(t *testing.T) {
	w := newWorld(t, deploytest.Group{Name: "web", Count: 2, Canary: 1, AutoRevert: true, ProgressDeadline: 10 * time.Minute})
	idx := deploymentsIndex(w.f)
	resp := w.f.Do("GET", depPath+w.d.ID, "")
	expectJSON(t, resp, mustJSON(t, w.d))
	expectDeployMeta(t, resp, idx)
	// The fields design §6 adds, in Nomad's encodings.
	by := w.f.Clock.Now().Add(10 * time.Minute).Format(time.RFC3339Nano)
	for _, want := range []string{
		`"ID":"` + w.d.ID + `","Namespace":"default","JobID":"web","JobVersion":0,`,
		`"IsMultiregion":false`, `"Status":"running","StatusDescription":"Deployment is running but requires manual promotion"`,
		`"TaskGroups":{"web":{"AutoRevert":true,"AutoPromote":false,"ProgressDeadline":600000000000,"RequireProgressBy":"` + by + `","Promoted":false,"PlacedCanaries":["` + w.allocs[0].ID + `"],"DesiredCanaries":1,"DesiredTotal":2,"PlacedAllocs":1,"HealthyAllocs":0,"UnhealthyAllocs":0}}`,
		`"CreateIndex":` + u(w.d.CreateIndex), `"CreateTime":` + strconv.FormatInt(w.f.Clock.Now().UnixNano(), 10),
	} {
		if !strings.Contains(resp.Body, want) {
			t.Errorf("read body lacks %s:\n%s", want, resp.Body)
		}
	}
	resp = w.f.Do("GET", depPath+otherID, "")
	expectError(t, resp, 404, "deployment not found")
	expectDeployMeta(t, resp, idx)
	for _, bad := range []string{w.d.ID[:8], w.d.ID + "0", "not-a-uuid-at-all-but-36-characters!"} {
		expectError(t, w.f.Do("GET", depPath+bad, ""), 400, fmt.Sprintf("Invalid deployment ID %q: a 36-character UUID is required", bad))
	}
	expectError(t, w.f.Do("GET", depPath+w.d.ID+"?stale&consistent", ""), 400, "Cannot specify ?stale with ?consistent, conflicting semantics.")
	expectError(t, w.f.Do("GET", depPath+w.d.ID+"?index=x", ""), 400, "Invalid index")
	expectError(t, w.f.Do("GET", depPath+w.d.ID+"?index=1&wait=soon", ""), 400, "Invalid wait time")
	expectError(t, w.f.Do("GET", "/v1/deployments/", ""), 404, "Invalid URL path: not a recognized HTTP API endpoint")
	expectJSON(t, w.f.Do("GET", depPath+w.d.ID+"?stale", ""), mustJSON(t, w.d))
}

func TestDeploymentAllocations(t *testing.T) {
	w := newWorld(t, deploytest.Group{Name: "web", Count: 2, Canary: 1})
	a := w.allocs[0]
	resp := w.f.Do("GET", depPath+"allocations/"+w.d.ID, "")
	now := strconv.FormatInt(w.f.Clock.Now().UnixNano(), 10)
	want := fmt.Sprintf(`[{"ID":%s,"EvalID":%s,"Name":"web.web[0]","Namespace":"default","NodeID":%s,"NodeName":"client-1","JobID":"web","JobVersion":0,"TaskGroup":"web",`+
		`"DesiredStatus":"run","DesiredDescription":"","ClientStatus":"pending","ClientDescription":"","TaskStates":null,`+
		`"DeploymentStatus":{"Healthy":null,"Canary":true,"Timestamp":"0001-01-01T00:00:00Z","ModifyIndex":0},"FollowupEvalID":"","NextAllocation":"","PreviousAllocation":"",`+
		`"RescheduleTracker":null,"DesiredTransition":{"Migrate":null,"Reschedule":null,"ForceReschedule":null},`+
		`"CreateIndex":%d,"ModifyIndex":%d,"CreateTime":%s,"ModifyTime":%s}]`,
		js(a.ID), js(a.EvalID), js(w.f.Node.ID), a.CreateIndex, a.CreateIndex, now, now)
	expectJSON(t, resp, want)
	allocsIdx := w.f.Deps.State().TableIndex("allocs")
	expectDeployMeta(t, resp, max(allocsIdx, deploymentsIndex(w.f)))

	// Health reported by the client: task states and the deployment status.
	idx := w.f.Health(true, a.ID)
	resp = w.f.Do("GET", depPath+"allocations/"+w.d.ID, "")
	ts := w.f.Clock.Now().Format(time.RFC3339)
	for _, want := range []string{
		`"ClientStatus":"running"`,
		`"TaskStates":{"app":{"State":"running","Failed":false,"Restarts":0,"LastRestart":"0001-01-01T00:00:00Z","StartedAt":"` + ts + `","FinishedAt":"0001-01-01T00:00:00Z","Events":[{"Type":"Received","Time":` + now + `,"FailsTask":false,`,
		`"DeploymentStatus":{"Healthy":true,"Canary":true,"Timestamp":"` + ts + `","ModifyIndex":` + u(idx) + `}`,
		`"ModifyIndex":` + u(idx) + `,`,
	} {
		if !strings.Contains(resp.Body, want) {
			t.Errorf("allocations body lacks %s:\n%s", want, resp.Body)
		}
	}
	expectDeployMeta(t, resp, idx)

	// A deployment with nothing placed yet: [] (never null).
	job := w.f.RegisterJob(deploytest.Job("default", "empty", "v0", deploytest.Group{Name: "g", Count: 1}))
	emptyID := uuid.NewString()
	deploytest.Apply(w.f, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: &state.Plan{
		EvalID: uuid.NewString(), Namespace: "default", JobID: "empty", JobModifyIndex: job.JobModifyIndex,
		Deployment: &state.Deployment{ID: emptyID, Namespace: "default", JobID: "empty", Status: state.DeploymentStatusRunning,
			StatusDescription: state.DeploymentStatusDescriptionRunning, TaskGroups: map[string]*state.DeploymentState{"g": {DesiredTotal: 1}}},
		Now: w.f.Clock.Now().UnixNano(),
	}})
	expectJSON(t, w.f.Do("GET", depPath+"allocations/"+emptyID, ""), `[]`)
	expectError(t, w.f.Do("GET", depPath+"allocations/"+otherID, ""), 404, "deployment not found")
	expectError(t, w.f.Do("GET", depPath+"allocations/abc", ""), 400, `Invalid deployment ID "abc": a 36-character UUID is required`)
}

func TestDeploymentHistory(t *testing.T) {
	w := newWorld(t)
	w.f.Clock.Advance(time.Second)
	pause := expectAction(t, w.f.Do("PUT", depPath+"pause/"+w.d.ID, `{"Pause":true}`), false, true, nil)
	fail := expectAction(t, w.f.Do("PUT", depPath+"fail/"+w.d.ID, ""), true, false, nil)
	resp := w.f.Do("GET", depPath+"history/"+w.d.ID, "")
	t0, t1 := w.f.Clock.Now().Add(-time.Second).UnixNano(), w.f.Clock.Now().UnixNano()
	want := fmt.Sprintf(`[`+
		`{"DeploymentID":%[1]s,"Index":%[2]d,"Time":%[3]d,"OldStatus":"","NewStatus":"running","OldDescription":"","Description":"Deployment is running","Cause":{"Kind":"scheduler","Operation":"","AccessorID":"","EvalID":%[4]s,"Rule":"created"}},`+
		`{"DeploymentID":%[1]s,"Index":%[5]d,"Time":%[6]d,"OldStatus":"running","NewStatus":"paused","OldDescription":"Deployment is running","Description":"Deployment is paused","Cause":{"Kind":"operation","Operation":"pause","AccessorID":"","EvalID":"","Rule":""}},`+
		`{"DeploymentID":%[1]s,"Index":%[7]d,"Time":%[6]d,"OldStatus":"paused","NewStatus":"failed","OldDescription":"Deployment is paused","Description":"Deployment marked as failed","Cause":{"Kind":"operation","Operation":"fail","AccessorID":"","EvalID":%[8]s,"Rule":""}}]`,
		js(w.d.ID), w.d.CreateIndex, t0, js(w.allocs[0].EvalID), pause.Index, t1, fail.Index, js(fail.EvalID))
	expectJSON(t, resp, want)
	expectDeployMeta(t, resp, fail.Index)
	expectError(t, w.f.Do("GET", depPath+"history/"+otherID, ""), 404, "deployment not found")
}

// Blocking reads wait for a change past the given index, then answer with
// the new state and index.
func TestDeploymentBlockingReads(t *testing.T) {
	w := newWorld(t)
	idx := deploymentsIndex(w.f)
	type answer struct {
		name string
		resp *deploytest.Response
	}
	done := make(chan answer, 4)
	for _, path := range []string{depPath + w.d.ID, "/v1/deployments", depPath + "history/" + w.d.ID} {
		go func() {
			done <- answer{path, w.f.Do("GET", path+"?wait=30s&index="+u(idx), "")}
		}()
	}
	allocsIdx := max(w.f.Deps.State().TableIndex("allocs"), idx)
	if allocsIdx != idx {
		t.Fatalf("the plan wrote deployments at %d and allocations at %d", idx, allocsIdx)
	}
	go func() {
		done <- answer{"allocations", w.f.Do("GET", depPath+"allocations/"+w.d.ID+"?index="+u(allocsIdx), "")}
	}()
	select {
	case a := <-done:
		t.Fatalf("%s answered before any change: %s", a.name, a.resp)
	case <-time.After(300 * time.Millisecond):
	}
	res := expectAction(t, w.f.Do("PUT", depPath+"fail/"+w.d.ID, ""), true, false, nil)
	// The allocations read reads the deployment too, so it wakes as well.
	for range 4 {
		select {
		case a := <-done:
			if a.resp.Status != 200 || (a.name != "allocations" && !strings.Contains(a.resp.Body, `"failed"`)) {
				t.Errorf("%s: %s", a.name, a.resp)
			}
			expectDeployMeta(t, a.resp, res.Index)
		case <-time.After(5 * time.Second):
			t.Fatal("blocking reads did not wake on the write")
		}
	}
	// An allocations read wakes on a health report.
	go func() {
		done <- answer{"allocations", w.f.Do("GET", depPath+"allocations/"+w.d.ID+"?index="+u(res.Index), "")}
	}()
	select {
	case a := <-done:
		t.Fatalf("allocations answered without a change: %s", a.resp)
	case <-time.After(200 * time.Millisecond):
	}
	hidx := w.f.Health(true, w.allocs[0].ID)
	select {
	case a := <-done:
		expectDeployMeta(t, a.resp, hidx)
		if !strings.Contains(a.resp.Body, `"Healthy":true`) {
			t.Errorf("allocations after health: %s", a.resp.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("allocations read did not wake on the health report")
	}
	// A short wait times out with the current data and a 200.
	resp := w.f.Do("GET", depPath+w.d.ID+"?wait=50ms&index="+u(res.Index+100), "")
	if resp.Status != 200 || !strings.Contains(resp.Body, `"failed"`) {
		t.Errorf("timed-out read: %s", resp)
	}
}
