package http_test

import (
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// waitScale polls Jobs().ScaleStatus until ok accepts the group's status.
func waitScale(t *testing.T, c *api.Client, jobID, group string, ok func(api.TaskGroupScaleStatus) bool) *api.JobScaleStatusResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _, err := c.Jobs().ScaleStatus(jobID, nil)
		if err != nil {
			t.Fatalf("ScaleStatus: %v", err)
		}
		if ok(st.TaskGroups[group]) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("scale status of %s never got there: %+v", group, st.TaskGroups[group])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestJobScaleNomadClient: on a dev agent (scheduler and a simulated
// client), Jobs().Scale as `nomad job scale` sends it makes a new version
// and a job-scaling evaluation, the scheduler places the new count, and
// Jobs().ScaleStatus reports counts and the scaling events.
func TestJobScaleNomadClient(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	c := nomadClient(t, ts, "")
	job := nomadJob("web", 1)
	job.Datacenters = nil
	job.Update = &api.UpdateStrategy{HealthCheck: new("task_states"), MinHealthyTime: new(50 * time.Millisecond)}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitScale(t, c, "web", "web", func(s api.TaskGroupScaleStatus) bool { return s.Healthy == 1 })
	// Scaling waits for the deployment to end (Nomad's rule).
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, _, err := c.Jobs().LatestDeployment("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil && d.Status == "successful" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}

	resp, wm, err := c.Jobs().Scale("web", "web", new(3), "more please", false, map[string]any{"by": "test"}, nil)
	if err != nil {
		t.Fatalf("Scale: %v", err)
	}
	if resp.EvalID == "" || resp.EvalCreateIndex != wm.LastIndex || resp.JobModifyIndex != wm.LastIndex {
		t.Fatalf("Scale: %+v, index %d", resp, wm.LastIndex)
	}
	info, _, err := c.Jobs().Info("web", nil)
	if err != nil || *info.Version != 1 || *info.TaskGroups[0].Count != 3 {
		t.Fatalf("job after Scale: %v %+v", err, info)
	}
	eval, _, err := c.Evaluations().Info(resp.EvalID, nil)
	if err != nil || eval.TriggeredBy != "job-scaling" || eval.JobID != "web" {
		t.Fatalf("scale evaluation: %v %+v", err, eval)
	}
	st := waitScale(t, c, "web", "web", func(s api.TaskGroupScaleStatus) bool { return s.Running == 3 })
	g := st.TaskGroups["web"]
	if st.JobID != "web" || st.Namespace != "default" || st.JobStopped || g.Desired != 3 || g.Placed != 3 || len(g.Events) != 1 {
		t.Fatalf("ScaleStatus: %+v %+v", st, g)
	}
	ev := g.Events[0]
	if *ev.Count != 3 || ev.PreviousCount != 1 || ev.Message != "more please" || ev.Meta["by"] != "test" || ev.EvalID == nil || *ev.EvalID != resp.EvalID || ev.Time == 0 {
		t.Fatalf("scaling event: %+v", ev)
	}

	// An event without a count (an autoscaler's error report): no version, no evaluation.
	resp, _, err = c.Jobs().Scale("web", "web", nil, "cannot reach metrics", true, nil, nil)
	if err != nil || resp.EvalID != "" {
		t.Fatalf("Scale without count: %v %+v", err, resp)
	}
	if info, _, err = c.Jobs().Info("web", nil); err != nil || *info.Version != 1 {
		t.Fatalf("job after an event: %v %+v", err, info)
	}
	st, _, err = c.Jobs().ScaleStatus("web", nil)
	if err != nil || len(st.TaskGroups["web"].Events) != 2 || !st.TaskGroups["web"].Events[0].Error || st.TaskGroups["web"].Events[0].Count != nil {
		t.Fatalf("events: %v %+v", err, st)
	}

	for _, tc := range []struct {
		group string
		count *int
		isErr bool
		want  string
	}{
		{"nope", new(2), false, `Unexpected response code: 400 (task group "nope" specified for scaling does not exist in job)`},
		{"web", new(-1), false, "Unexpected response code: 400 (scaling action count can't be negative)"},
		{"web", new(2), true, "Unexpected response code: 400 (scaling action should not contain count if error is true)"},
		{"", new(2), false, "Unexpected response code: 400 (missing task group name for scaling action)"},
	} {
		if _, _, err := c.Jobs().Scale("web", tc.group, tc.count, "", tc.isErr, nil, nil); err == nil || err.Error() != tc.want {
			t.Errorf("Scale %+v: %v", tc, err)
		}
	}
	if _, _, err := c.Jobs().Scale("nope", "web", new(1), "", false, nil, nil); err == nil || err.Error() != `Unexpected response code: 404 (job "nope" not found)` {
		t.Errorf("Scale of an unknown job: %v", err)
	}
}

// TestJobScaleACLAndDeployment: scale-job (policy "scale") scales and reads
// the scale status without read-job; read alone cannot scale; an active
// deployment blocks scaling (Nomad's rule).
func TestJobScaleACLAndDeployment(t *testing.T) {
	const mgmt = "7e2d4c1b-3a5f-4e6d-9c8b-1a2b3c4d5e6f"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	c := nomadClient(t, ts, mgmt)
	job := nomadJob("web", 1)
	job.Update = nil
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	scaler := nomadClient(t, ts, s.tokenWithRules(t, "scaler", `namespace "default" { policy = "scale" }`, "").SecretID)
	reader := nomadClient(t, ts, s.tokenWithRules(t, "reader", `namespace "default" { policy = "read" }`, "").SecretID)
	if _, _, err := scaler.Jobs().Scale("web", "web", new(2), "", false, nil, nil); err != nil {
		t.Fatalf("Scale with scale-job: %v", err)
	}
	if st, _, err := scaler.Jobs().ScaleStatus("web", nil); err != nil || st.TaskGroups["web"].Desired != 2 {
		t.Fatalf("ScaleStatus with read-job-scaling: %v %+v", err, st)
	}
	if _, _, err := scaler.Jobs().Info("web", nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Fatalf("Info with scale only: %v", err)
	}
	if _, _, err := reader.Jobs().Scale("web", "web", new(3), "", false, nil, nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Fatalf("Scale with read: %v", err)
	}
	if st, _, err := reader.Jobs().ScaleStatus("web", nil); err != nil || st.TaskGroups["web"].Desired != 2 {
		t.Fatalf("ScaleStatus with read-job: %v %+v", err, st)
	}

	// A job with a running deployment is not scaled.
	dj := nomadJob("dep", 1)
	if _, _, err := c.Jobs().Register(dj, nil); err != nil {
		t.Fatal(err)
	}
	_, stored, err := ts.Server.State().Job(nil, "default", "dep")
	if err != nil {
		t.Fatal(err)
	}
	nodeID := cliNode(t, ts, "n1")
	if _, depID := ntPlace(t, ts, stored, nodeID, "n1", 1, time.Now()); depID == "" {
		t.Fatal("no deployment")
	}
	if _, _, err := c.Jobs().Scale("dep", "web", new(2), "", false, nil, nil); err == nil || err.Error() != "Unexpected response code: 400 (job scaling blocked due to active deployment)" {
		t.Fatalf("Scale during a deployment: %v", err)
	}
	if _, v, _ := ts.Server.State().Job(nil, "default", "dep"); v.Version != 0 || v.TaskGroups[0].Count != 1 {
		t.Fatalf("job changed: %+v", v)
	}
}
