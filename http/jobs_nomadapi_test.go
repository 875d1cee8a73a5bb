package http_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// nomadClient is the unmodified official Nomad Go client pointed at ts.
func nomadClient(t *testing.T, ts *servertest.TestServer, token string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = ts.URL
	cfg.SecretID = token
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nomadJob is a job as a Nomad user builds it with the client's helpers.
func nomadJob(id string, count int) *api.Job {
	job := api.NewServiceJob(id, id, "global", 60)
	job.Datacenters = []string{"dc1"}
	tg := api.NewTaskGroup("web", count)
	task := api.NewTask("app", "mock_driver").SetConfig("run_for", "1h")
	task.Env = map[string]string{"PORT": "8080"}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	job.Update = &api.UpdateStrategy{MaxParallel: new(2), Canary: new(1), AutoPromote: new(true)}
	return job
}

// TestJobNomadClient: Jobs().Register/Info/Versions/List/Evaluations/
// Deregister of the official client, with ACLs on and its X-Nomad-Token.
func TestJobNomadClient(t *testing.T) {
	const mgmt = "2b778dd9-f5f1-6f29-b4b4-9a5fa948757a"
	ts := startJobs(t, servertest.ACL(mgmt))
	c := nomadClient(t, ts, mgmt)
	jobs := c.Jobs()

	reg, wm, err := jobs.Register(nomadJob("web", 2), nil)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if reg.EvalID == "" || reg.EvalCreateIndex == 0 || reg.JobModifyIndex != reg.EvalCreateIndex || wm.LastIndex != reg.EvalCreateIndex {
		t.Errorf("Register: %+v, LastIndex %d", reg, wm.LastIndex)
	}

	job, qm, err := jobs.Info("web", nil)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if qm.LastIndex < reg.JobModifyIndex || !qm.KnownLeader {
		t.Errorf("Info meta: %+v", qm)
	}
	if *job.ID != "web" || *job.Priority != 60 || *job.Version != 0 || *job.Status != "pending" ||
		*job.TaskGroups[0].Count != 2 || job.TaskGroups[0].Tasks[0].Config["run_for"] != "1h" ||
		*job.TaskGroups[0].Update.MaxParallel != 2 || *job.TaskGroups[0].Update.Canary != 1 ||
		*job.TaskGroups[0].Update.HealthCheck != "checks" || *job.TaskGroups[0].RestartPolicy.Attempts != 2 ||
		*job.TaskGroups[0].Tasks[0].Resources.CPU != 100 || *job.TaskGroups[0].Tasks[0].KillTimeout != 5*time.Second {
		t.Errorf("Info: %+v", job)
	}

	// What Info returned, sent back as is: the same spec, no new version.
	again, _, err := jobs.Register(job, nil)
	if err != nil {
		t.Fatalf("re-Register of Info's job: %v", err)
	}
	if again.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("re-Register made a new version: %+v", again)
	}
	job.TaskGroups[0].Count = new(3)
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatalf("scale: %v", err)
	}

	versions, diffs, _, err := jobs.Versions("web", false, nil)
	if err != nil || len(versions) != 2 || *versions[0].Version != 1 || *versions[1].Version != 0 || diffs != nil {
		t.Fatalf("Versions: %v %d %v", err, len(versions), diffs)
	}
	list, _, err := jobs.List(nil)
	if err != nil || len(list) != 1 || list[0].ID != "web" || list[0].Type != "service" || list[0].Priority != 60 {
		t.Fatalf("List: %v %+v", err, list)
	}
	evals, _, err := jobs.Evaluations("web", nil)
	if err != nil || len(evals) != 3 || evals[0].TriggeredBy != "job-register" {
		t.Fatalf("Evaluations: %v %+v", err, evals)
	}
	if _, _, err := jobs.Stable("web", 0, true, nil); err != nil {
		t.Fatalf("Stable: %v", err)
	}
	if _, _, err := jobs.Revert("web", 0, new(uint64(1)), nil, "", ""); err != nil {
		t.Fatalf("Revert: %v", err)
	}

	evalID, _, err := jobs.Deregister("web", false, nil)
	if err != nil || evalID == "" {
		t.Fatalf("Deregister: %v %q", err, evalID)
	}
	eval, _, err := c.Evaluations().Info(evalID, nil)
	if err != nil || eval.TriggeredBy != "job-deregister" || eval.JobID != "web" {
		t.Fatalf("Evaluations().Info: %v %+v", err, eval)
	}
	job, _, err = jobs.Info("web", nil)
	if err != nil || !*job.Stop || *job.Status != "dead" {
		t.Fatalf("stopped job: %v %+v", err, job)
	}
	if _, _, err := jobs.Deregister("web", true, nil); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if _, _, err := jobs.Info("web", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Info after purge: %v", err)
	}

	// A job the client canonicalized first (as the Nomad CLI's does) carries
	// Nomad's defaults in fields ctlplane does not implement: accepted.
	canon := nomadJob("canon", 1)
	canon.Canonicalize()
	if _, _, err := jobs.Register(canon, nil); err != nil {
		t.Fatalf("Register of a canonicalized job: %v", err)
	}
	if job, _, err := jobs.Info("canon", nil); err != nil || *job.TaskGroups[0].Update.MaxParallel != 2 {
		t.Fatalf("Info of the canonicalized job: %v", err)
	}

	// Without a token the client is denied.
	anon := nomadClient(t, ts, "")
	if _, _, err := anon.Jobs().Register(nomadJob("web", 1), nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Fatalf("anonymous Register: %v", err)
	}
}
