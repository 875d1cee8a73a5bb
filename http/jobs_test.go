package http_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
)

// TestJobRegister: a new job is version 0 with Nomad's defaults and a
// pending job-register evaluation written in the same entry; re-registering
// the same spec keeps the version (and JobModifyIndex) and still makes an
// evaluation; a change makes version 1.
func TestJobRegister(t *testing.T) {
	ts := startJobs(t)
	before := time.Now().UnixNano()
	r0 := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 2, ""))
	if r0.Warnings == nil || *r0.Warnings != "" {
		t.Errorf("Warnings: got %v, want \"\"", r0.Warnings)
	}
	if r0.EvalID == "" || r0.EvalCreateIndex != r0.Index || r0.JobModifyIndex != r0.Index {
		t.Errorf("first register: %+v (want EvalCreateIndex == JobModifyIndex == Index)", r0)
	}
	job := getJob(t, ts, "web")
	if job.Version != 0 || job.Status != state.JobStatusPending || job.Name != "web" || job.Namespace != "default" ||
		job.Priority != 50 || job.Region != "global" || !reflect.DeepEqual(job.Datacenters, []string{"*"}) ||
		job.CreateIndex != r0.Index || job.JobModifyIndex != r0.Index || job.SubmitTime < before {
		t.Errorf("registered job: %+v", job)
	}
	if u := job.TaskGroups[0].Update; u == nil || u.MaxParallel != 1 || u.HealthCheck != "checks" || u.ProgressDeadline != 10*time.Minute {
		t.Errorf("group update: %+v", u)
	}
	if cfg := job.TaskGroups[0].Tasks[0].Config; !reflect.DeepEqual(cfg, map[string]any{"run_for": "1h", "nested": map[string]any{"list": []any{1.0, "two"}}}) {
		t.Errorf("config round trip: %#v", cfg)
	}
	e := findEval(t, jobEvals(t, ts, "web"), r0.EvalID)
	if e.Status != state.EvalStatusPending || e.TriggeredBy != state.EvalTriggerJobRegister || e.Type != "service" ||
		e.Priority != 50 || e.JobID != "web" || e.Namespace != "default" || e.CreateIndex != r0.EvalCreateIndex ||
		e.JobModifyIndex != r0.JobModifyIndex || e.CreateTime < before || e.ModifyTime != e.CreateTime {
		t.Errorf("evaluation: %+v", e)
	}

	// Same spec, with the read-only fields a client echoes back: no new version.
	r1 := mustWrite(t, ts, "POST", "/v1/job/web", jobBody("web", 2, `,"Version":0,"Status":"pending","JobModifyIndex":99`))
	if r1.JobModifyIndex != r0.JobModifyIndex || r1.EvalID == r0.EvalID || r1.EvalCreateIndex <= r0.Index || r1.Index != r1.EvalCreateIndex {
		t.Errorf("unchanged re-register: %+v after %+v", r1, r0)
	}
	if job := getJob(t, ts, "web"); job.Version != 0 || job.JobModifyIndex != r0.Index {
		t.Errorf("unchanged re-register changed the job: version %d JobModifyIndex %d", job.Version, job.JobModifyIndex)
	}
	if e := findEval(t, jobEvals(t, ts, "web"), r1.EvalID); e.JobModifyIndex != r0.JobModifyIndex {
		t.Errorf("second eval JobModifyIndex: %d", e.JobModifyIndex)
	}

	r2 := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 3, ""))
	if r2.JobModifyIndex != r2.Index {
		t.Errorf("changed register: %+v", r2)
	}
	if job := getJob(t, ts, "web"); job.Version != 1 || job.TaskGroups[0].Count != 3 || job.CreateIndex != r0.Index {
		t.Errorf("changed job: version %d count %d CreateIndex %d", job.Version, job.TaskGroups[0].Count, job.CreateIndex)
	}
	if n := len(jobEvals(t, ts, "web")); n != 3 {
		t.Errorf("%d evaluations, want 3", n)
	}

	// Versions, newest first, and the list stub.
	resp := ts.Do(t, "GET", "/v1/job/web/versions", "")
	var versions struct {
		Versions []*state.Job
		Diffs    []any
	}
	resp.JSON(t, &versions)
	if resp.Status != 200 || len(versions.Versions) != 2 || versions.Versions[0].Version != 1 || versions.Versions[1].Version != 0 ||
		!strings.Contains(resp.Body, `"Diffs":null`) {
		t.Errorf("versions: %s", resp)
	}
	resp = ts.Do(t, "GET", "/v1/jobs", "")
	want := fmt.Sprintf(`[{"ID":"web","ParentID":"","Name":"web","Namespace":"default","Datacenters":["*"],"NodePool":"default","Type":"service","Priority":50,"Periodic":false,"ParameterizedJob":false,"Stop":false,"Status":"pending","StatusDescription":"","JobSummary":{"JobID":"web","Namespace":"default","Summary":{"web":{"Queued":0,"Complete":0,"Failed":0,"Running":0,"Starting":0,"Lost":0,"Unknown":0}},"Children":{"Pending":0,"Running":0,"Dead":0},"CreateIndex":%d,"ModifyIndex":%d},"Version":1,"CreateIndex":%d,"ModifyIndex":%d,"JobModifyIndex":%d,"SubmitTime":%d}]`,
		r0.Index, r0.Index, r0.Index, r2.Index, r2.Index, getJob(t, ts, "web").SubmitTime)
	expectJSON(t, resp, want)
	expectHeader(t, resp, "X-Nomad-Index", fmt.Sprint(r2.Index))

	// Prefix, namespace and meta options of the list.
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("worker", 1, `,"Meta":{"team":"a"}`))
	mkNamespace(t, ts, "other")
	mustWrite(t, ts, "PUT", "/v1/jobs?namespace=other", jobBody("web-2", 1, ""))
	ids := func(path string) string {
		var stubs []struct {
			ID, Namespace string
			Meta          map[string]string
		}
		ts.Do(t, "GET", path, "").JSON(t, &stubs)
		var out []string
		for _, s := range stubs {
			out = append(out, s.Namespace+"/"+s.ID+fmt.Sprint(len(s.Meta)))
		}
		return strings.Join(out, " ")
	}
	for path, want := range map[string]string{
		"/v1/jobs":                          "default/web0 default/worker0",
		"/v1/jobs?prefix=wo":                "default/worker0",
		"/v1/jobs?meta=true":                "default/web0 default/worker1",
		"/v1/jobs?namespace=other":          "other/web-20",
		"/v1/jobs?namespace=*&prefix=web":   "default/web0 other/web-20",
		"/v1/jobs?namespace=nope&prefix=we": "",
	} {
		if got := ids(path); got != want {
			t.Errorf("GET %s: %q, want %q", path, got, want)
		}
	}
}

// TestJobRegisterPathAndBody: the path ID must match; empty or missing bodies.
func TestJobRegisterPathAndBody(t *testing.T) {
	ts := startJobs(t)
	cases := []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/v1/job/other", jobBody("web", 1, ""), 400, "Job ID does not match name"},
		{"/v1/jobs", `{}`, 400, "Job must be specified"},
		{"/v1/jobs", `{"Job":null}`, 400, "Job must be specified"},
		{"/v1/jobs", ``, 400, "Job decoding failed: EOF"},
		{"/v1/jobs", `{"Job":{"ID":"web"},"Extra":1}`, 400, `Job decoding failed: json: unknown field "Extra"`},
		{"/v1/jobs", `{"Job":{"Name":"web"}}`, 400, "Job ID hasn't been provided"},
		{"/v1/jobs", jobBody("web", 1, `,"Type":"batch"`), 400, `Job type "batch" is not supported: only service jobs are supported for now`},
		{"/v1/jobs", jobBody("web", 1, `,"Constraints":[{"LTarget":"x"}]`), 400, "Constraint 1 validation failed: Missing constraint operand"},
		{"/v1/jobs", jobBody("web", 1, `,"Periodic":{"Enabled":true}`), 400, "Periodic is not supported"},
		{"/v1/jobs", strings.TrimSuffix(jobBody("web", 1, ""), "}") + `,"PreserveResources":true}`, 400, "PreserveResources is not supported"},
		{"/v1/jobs", strings.TrimSuffix(jobBody("web", 1, ""), "}") + `,"EvalPriority":101}`, 400, "eval priority must be between 1 and 100 inclusively"},
		{"/v1/jobs", strings.TrimSuffix(jobBody("web", 1, ""), "}") + `,"EnforceIndex":true,"JobModifyIndex":5}`, 409, "Enforcing job modify index 5: job does not exist"},
	}
	for _, c := range cases {
		expectError(t, ts.Do(t, "PUT", c.path, c.body), c.status, c.msg)
	}
	expectError(t, ts.Do(t, "GET", "/v1/job/nope", ""), 404, "job not found")
	expectError(t, ts.Do(t, "GET", "/v1/job/nope/versions", ""), 404, "job versions not found")
	expectError(t, ts.Do(t, "PATCH", "/v1/job/web", ""), 405, "method PATCH not allowed")
	expectError(t, ts.Do(t, "GET", "/v1/jobs?meta=yes", ""), 400, `Failed to parse value of "meta" (yes) as a bool: strconv.ParseBool: parsing "yes": invalid syntax`)
	expectError(t, ts.Do(t, "GET", "/v1/jobs?namespace=a/b", ""), 400, `Invalid namespace "a/b": a namespace name is 1 to 64 letters, digits, '-' or '_'`)
	expectError(t, ts.Do(t, "GET", "/v1/job/web?stale&consistent", ""), 400, "Cannot specify ?stale with ?consistent, conflicting semantics.")

	// Register options: EnforceIndex with the right index, EvalPriority, PreserveCounts.
	body := func(count int, opts string) string {
		return strings.TrimSuffix(jobBody("web", count, ""), "}") + opts + "}"
	}
	r0 := mustWrite(t, ts, "PUT", "/v1/jobs", body(2, `,"EnforceIndex":true,"JobModifyIndex":0`))
	expectError(t, ts.Do(t, "PUT", "/v1/jobs", body(2, `,"EnforceIndex":true,"JobModifyIndex":1`)), 409,
		fmt.Sprintf("Enforcing job modify index 1: job exists with conflicting job modify index: %d", r0.JobModifyIndex))
	r1 := mustWrite(t, ts, "PUT", "/v1/jobs", body(5, `,"PreserveCounts":true,"EvalPriority":90,"Region":"global","Namespace":"","SecretID":""`))
	if e := findEval(t, jobEvals(t, ts, "web"), r1.EvalID); e.Priority != 90 {
		t.Errorf("EvalPriority: eval priority %d", e.Priority)
	}
	if job := getJob(t, ts, "web"); job.TaskGroups[0].Count != 2 || job.Version != 0 {
		t.Errorf("PreserveCounts: count %d version %d", job.TaskGroups[0].Count, job.Version)
	}
}

// TestJobStopAndPurge: DELETE stops (a new version with Stop, a
// job-deregister evaluation); purge removes the job and its versions.
func TestJobStopAndPurge(t *testing.T) {
	ts := startJobs(t)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	stop := mustWrite(t, ts, "DELETE", "/v1/job/web", "")
	if stop.JobModifyIndex != stop.Index || stop.EvalCreateIndex != stop.Index || stop.Warnings != nil {
		t.Errorf("stop: %+v", stop)
	}
	job := getJob(t, ts, "web")
	if !job.Stop || job.Status != state.JobStatusDead || job.Version != 1 {
		t.Errorf("stopped job: stop %v status %q version %d", job.Stop, job.Status, job.Version)
	}
	if e := findEval(t, jobEvals(t, ts, "web"), stop.EvalID); e.TriggeredBy != state.EvalTriggerJobDeregister || e.Status != state.EvalStatusPending {
		t.Errorf("stop eval: %+v", e)
	}
	// Stopping again: same version, another evaluation.
	again := mustWrite(t, ts, "DELETE", "/v1/job/web?purge=false", "")
	if again.JobModifyIndex != stop.JobModifyIndex || getJob(t, ts, "web").Version != 1 {
		t.Errorf("second stop: %+v", again)
	}
	// Re-registering the running spec starts it again as a new version.
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	if job := getJob(t, ts, "web"); job.Stop || job.Version != 2 {
		t.Errorf("restarted job: stop %v version %d", job.Stop, job.Version)
	}

	purge := mustWrite(t, ts, "DELETE", "/v1/job/web?purge=true", "")
	expectError(t, ts.Do(t, "GET", "/v1/job/web", ""), 404, "job not found")
	expectError(t, ts.Do(t, "GET", "/v1/job/web/versions", ""), 404, "job versions not found")
	if e := findEval(t, jobEvals(t, ts, "web"), purge.EvalID); e.TriggeredBy != state.EvalTriggerJobDeregister || e.CreateIndex != purge.Index {
		t.Errorf("purge eval: %+v", e)
	}
	expectJSON(t, ts.Do(t, "GET", "/v1/jobs", ""), "[]")
	expectError(t, ts.Do(t, "DELETE", "/v1/job/web", ""), 404, "job not found")
	expectError(t, ts.Do(t, "DELETE", "/v1/job/web?purge=maybe", ""), 400, `Failed to parse value of "purge" (maybe) as a bool: strconv.ParseBool: parsing "maybe": invalid syntax`)
}

// TestJobStableAndRevert: stability flips one version; revert registers an
// old spec as a new version.
func TestJobStableAndRevert(t *testing.T) {
	ts := startJobs(t)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 2, ""))

	resp := ts.Do(t, "PUT", "/v1/job/web/stable", `{"JobID":"web","JobVersion":0,"Stable":true,"Region":"","Namespace":"","SecretID":""}`)
	if resp.Status != 200 {
		t.Fatalf("stable: %s", resp)
	}
	var st struct{ JobModifyIndex, Index uint64 }
	resp.JSON(t, &st)
	if st.Index == 0 || st.JobModifyIndex != st.Index {
		t.Errorf("stable answer: %s", resp.Body)
	}
	var versions struct{ Versions []*state.Job }
	ts.Do(t, "GET", "/v1/job/web/versions", "").JSON(t, &versions)
	if versions.Versions[0].Stable || !versions.Versions[1].Stable {
		t.Errorf("stability: v1 %v v0 %v", versions.Versions[0].Stable, versions.Versions[1].Stable)
	}
	expectError(t, ts.Do(t, "POST", "/v1/job/web/stable", `{"JobID":"other","JobVersion":0,"Stable":true}`), 400, "Job ID does not match")
	expectError(t, ts.Do(t, "POST", "/v1/job/web/stable", `{"JobVersion":7,"Stable":true}`), 404, `job "web" in namespace "default" at version 7 not found`)
	expectError(t, ts.Do(t, "POST", "/v1/job/nope/stable", `{"JobVersion":0,"Stable":true}`), 404, "job not found")
	expectError(t, ts.Do(t, "POST", "/v1/job/web/stable", `{"Bogus":1}`), 400, `JobStabilityRequest decoding failed: json: unknown field "Bogus"`)

	// Revert to version 0: a new version 2 with version 0's spec.
	rev := mustWrite(t, ts, "POST", "/v1/job/web/revert", `{"JobID":"web","JobVersion":0,"EnforcePriorVersion":1}`)
	job := getJob(t, ts, "web")
	if job.Version != 2 || job.TaskGroups[0].Count != 1 || job.Stable || rev.JobModifyIndex != rev.Index {
		t.Errorf("reverted job: version %d count %d stable %v, answer %+v", job.Version, job.TaskGroups[0].Count, job.Stable, rev)
	}
	if e := findEval(t, jobEvals(t, ts, "web"), rev.EvalID); e.TriggeredBy != state.EvalTriggerJobRegister {
		t.Errorf("revert eval: %+v", e)
	}
	expectError(t, ts.Do(t, "PUT", "/v1/job/web/revert", `{"JobVersion":2}`), 400, "can't revert to current version")
	expectError(t, ts.Do(t, "PUT", "/v1/job/web/revert", `{"JobVersion":9}`), 404, `job "web" in namespace "default" at version 9 not found`)
	expectError(t, ts.Do(t, "PUT", "/v1/job/web/revert", `{"JobVersion":1,"EnforcePriorVersion":1}`), 409, "Current job has version 2; enforcing version 1")
	expectError(t, ts.Do(t, "PUT", "/v1/job/nope/revert", `{"JobVersion":0}`), 404, "job not found")
}

// TestJobSubresourcesEmpty: a job's deployments, allocations and
// evaluations lists are [] (never null), its latest deployment null.
func TestJobSubresourcesEmpty(t *testing.T) {
	ts := startJobs(t)
	for _, p := range []string{"deployments", "allocations"} {
		resp := ts.Do(t, "GET", "/v1/job/web/"+p, "")
		expectJSON(t, resp, "[]")
		expectHeader(t, resp, "X-Nomad-KnownLeader", "true")
	}
	expectJSON(t, ts.Do(t, "GET", "/v1/job/web/evaluations", ""), "[]")
	expectJSON(t, ts.Do(t, "GET", "/v1/job/web/deployment", ""), "null")
}

// TestJobBlockingRead: a read with ?index= waits for the job's write and
// answers it with the new index.
func TestJobBlockingRead(t *testing.T) {
	ts := startJobs(t)
	r0 := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	type result struct {
		job  *state.Job
		at   time.Time
		resp string
	}
	done := make(chan result, 1)
	go func() {
		resp := ts.Do(t, "GET", fmt.Sprintf("/v1/job/web?index=%d&wait=10s", r0.Index), "")
		var job state.Job
		resp.JSON(t, &job)
		done <- result{&job, time.Now(), resp.Header.Get("X-Nomad-Index")}
	}()
	select {
	case r := <-done:
		t.Fatalf("answered before the write: %+v", r.job)
	case <-time.After(300 * time.Millisecond):
	}
	wrote := time.Now()
	r1 := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 4, ""))
	select {
	case r := <-done:
		if r.at.Before(wrote) || r.job.TaskGroups[0].Count != 4 || r.resp != fmt.Sprint(r1.Index) {
			t.Errorf("blocked read answered %+v at index %s (write at %d)", r.job.TaskGroups[0], r.resp, r1.Index)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked read never answered")
	}
}

// TestJobSubresources: a job's deployments (newest first), latest
// deployment, allocations, and an evaluation's allocations, once plans have
// placed some (applied here through Raft as the scheduler's would be).
func TestJobSubresources(t *testing.T) {
	ts := startJobs(t)
	node := &state.Node{
		ID: uuid.NewString(), Name: "client-1", Datacenter: "dc1", Resources: state.Resources{CPU: 4000, MemoryMB: 8192},
		Drivers: map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Status:  state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible,
	}
	if _, err := fsm.Apply(ts.Server, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: node}); err != nil {
		t.Fatal(err)
	}
	r0 := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 2, `,"Datacenters":["dc1"]`))
	d0, _ := applyPlan(t, ts, node, r0.EvalID)
	r1 := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 3, `,"Datacenters":["dc1"]`))
	d1, placed := applyPlan(t, ts, node, r1.EvalID)

	var deps []*state.Deployment
	ts.Do(t, "GET", "/v1/job/web/deployments", "").JSON(t, &deps)
	if len(deps) != 2 || deps[0].ID != d1 || deps[1].ID != d0 {
		t.Errorf("deployments: %+v", deps)
	}
	var latest state.Deployment
	ts.Do(t, "GET", "/v1/job/web/deployment", "").JSON(t, &latest)
	if latest.ID != d1 || latest.JobVersion != 1 || latest.TaskGroups["web"].DesiredTotal != 3 {
		t.Errorf("latest deployment: %+v", latest)
	}
	var stubs []api.AllocationListStub
	resp := ts.Do(t, "GET", "/v1/job/web/allocations?all=true", "")
	resp.JSON(t, &stubs)
	if len(stubs) != 5 {
		t.Errorf("allocations: %d, want 5: %s", len(stubs), resp.Body)
	}

	c := nomadClient(t, ts, "")
	got, _, err := c.Evaluations().Allocations(r1.EvalID, nil)
	if err != nil || len(got) != len(placed) || got[0].EvalID != r1.EvalID {
		t.Fatalf("evaluation allocations: %v %d", err, len(got))
	}
	jobAllocs, _, err := c.Jobs().Allocations("web", true, nil)
	if err != nil || len(jobAllocs) != 5 || jobAllocs[0].JobID != "web" {
		t.Fatalf("client job allocations: %v %+v", err, jobAllocs)
	}
	latestDep, _, err := c.Jobs().LatestDeployment("web", nil)
	if err != nil || latestDep == nil || latestDep.ID != d1 {
		t.Fatalf("client latest deployment: %v %+v", err, latestDep)
	}
}

// applyPlan commits what a scheduler would for evalID: a deployment of the
// job's current version and its Count allocations on node.
func applyPlan(t *testing.T, ts *servertest.TestServer, node *state.Node, evalID string) (string, []*state.Allocation) {
	t.Helper()
	_, job, err := ts.State().Job(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v", err)
	}
	tg := job.TaskGroups[0]
	d := &state.Deployment{
		ID: uuid.NewString(), Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.JobModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*state.DeploymentState{tg.Name: {DesiredTotal: tg.Count, ProgressDeadline: tg.Update.ProgressDeadline}},
		Status:     state.DeploymentStatusRunning, StatusDescription: state.DeploymentStatusDescriptionRunning,
	}
	var placed []*state.Allocation
	for i := range tg.Count {
		placed = append(placed, &state.Allocation{
			ID: uuid.NewString(), Namespace: job.Namespace, EvalID: evalID, Name: fmt.Sprintf("web.web[%d]", i),
			NodeID: node.ID, NodeName: node.Name, JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
			Resources: tg.Resources(), DeploymentID: d.ID,
		})
	}
	res, err := fsm.Apply(ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: &state.Plan{
		EvalID: evalID, Namespace: job.Namespace, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Placements: placed, Deployment: d, Now: time.Now().UnixNano(),
	}})
	if err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %+v", err, res)
	}
	return d.ID, placed
}

// TestJobScheduled: with the agent's broker and scheduler running, the
// evaluation a registration writes is picked up (it leaves pending).
func TestJobScheduled(t *testing.T) {
	ts := withJobs(t, servertest.Start(t))
	r := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	deadline := time.Now().Add(10 * time.Second)
	for index := r.Index; ; {
		resp := ts.Do(t, "GET", fmt.Sprintf("/v1/evaluation/%s?index=%d&wait=2s", r.EvalID, index), "")
		var e api.Evaluation
		resp.JSON(t, &e)
		if e.Status != "pending" {
			if e.Status != "complete" && e.Status != "blocked" && e.Status != "failed" {
				t.Errorf("evaluation status %q", e.Status)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the evaluation stayed pending")
		}
		fmt.Sscan(resp.Header.Get("X-Nomad-Index"), &index)
	}
}

// TestJobVersionsTracked: as Nomad, a job keeps its six newest versions
// (nothing here runs them: no scheduler, no allocations); the seventh
// register drops version 0, and reverting to a dropped one is refused.
func TestJobVersionsTracked(t *testing.T) {
	ts := startJobs(t)
	for count := 1; count <= 8; count++ {
		mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", count, ""))
	}
	var versions struct{ Versions []*state.Job }
	resp := ts.Do(t, "GET", "/v1/job/web/versions", "")
	resp.JSON(t, &versions)
	var got []uint64
	for _, v := range versions.Versions {
		got = append(got, v.Version)
	}
	if resp.Status != 200 || fmt.Sprint(got) != "[7 6 5 4 3 2]" {
		t.Fatalf("versions %v (%d), want [7 6 5 4 3 2]", got, resp.Status)
	}
	r := ts.Do(t, "PUT", "/v1/job/web/revert", `{"JobID":"web","JobVersion":1}`)
	t.Logf("revert to a dropped version: %d %s", r.Status, r.Body)
	if r.Status < 400 || r.Status >= 500 {
		t.Errorf("revert to a dropped version: %s, want a 4xx", r)
	}
	mustWrite(t, ts, "PUT", "/v1/job/web/revert", `{"JobID":"web","JobVersion":2}`)
	if job := getJob(t, ts, "web"); job.Version != 8 || job.TaskGroups[0].Count != 3 {
		t.Errorf("after reverting to version 2: version %d count %d, want 8 and 3", job.Version, job.TaskGroups[0].Count)
	}
}
