package main

import (
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
	nomad "github.com/hashicorp/nomad/api"
)

// TestNamespaceCLI: `namespace apply|list|delete` against a server with
// ACLs on: a management token writes, default cannot be deleted, the
// anonymous token is refused.
func TestNamespaceCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	out := at(ts.URL, mgmtSecret, "namespace", "apply", "-description=production", "-meta=team=a", "prod").ok(t)
	mustContain(t, out, `Successfully applied namespace "prod"!`)
	out = at(ts.URL, mgmtSecret, "namespace", "list").ok(t)
	mustContain(t, out, "Name", "Description", "default", "Default shared namespace", "prod", "production")
	nc, err := nomad.NewClient(&nomad.Config{Address: ts.URL, SecretID: mgmtSecret})
	if err != nil {
		t.Fatal(err)
	}
	if ns, _, err := nc.Namespaces().Info("prod", nil); err != nil || ns.Meta["team"] != "a" {
		t.Fatalf("prod: %v %+v", err, ns)
	}
	at(ts.URL, "", "namespace", "apply", "dev").fails(t, "Error: Error applying namespace specification: Unexpected response code: 403 (Permission denied)")
	at(ts.URL, mgmtSecret, "namespace", "delete", "default").fails(t, "Error: Error deleting namespace: Unexpected response code: 400 (can not delete default namespace)")
	out = at(ts.URL, mgmtSecret, "namespace", "delete", "prod").ok(t)
	mustContain(t, out, `Successfully deleted namespace "prod"!`)
	if out = at(ts.URL, mgmtSecret, "namespace", "list").ok(t); strings.Contains(out, "prod") {
		t.Fatalf("prod still listed:\n%s", out)
	}
	runCLI("namespace").fails(t, "Usage: ctlplane namespace")
	runCLI("namespace", "apply", "-address="+ts.URL).fails(t, "Error: this command takes one argument")
}

// TestJobScaleCLI: `job scale JOB [GROUP] COUNT` makes a new version with
// the count; the group may be left out for a one-group job; the server's
// refusals are the errors.
func TestJobScaleCLI(t *testing.T) {
	ts := servertest.Start(t)
	nc, err := nomad.NewClient(&nomad.Config{Address: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	job := nomad.NewServiceJob("web", "web", "global", 50)
	tg := nomad.NewTaskGroup("g", 1)
	tg.AddTask(nomad.NewTask("app", "mock_driver"))
	job.AddTaskGroup(tg)
	job.Update = &nomad.UpdateStrategy{MaxParallel: new(0)} // no deployments: nothing blocks scaling
	if _, _, err := nc.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	out := at(ts.URL, "", "job", "scale", "-detach", "web", "3").ok(t)
	mustContain(t, out, "Job scale successful", "Evaluation ID: ")
	got, _, err := nc.Jobs().Info("web", nil)
	if err != nil || *got.Version != 1 || *got.TaskGroups[0].Count != 3 {
		t.Fatalf("after scale: %v %+v", err, got)
	}
	at(ts.URL, "", "job", "scale", "-detach", "web", "g", "2").ok(t)
	if got, _, err = nc.Jobs().Info("web", nil); err != nil || *got.TaskGroups[0].Count != 2 {
		t.Fatalf("after scale of g: %v %+v", err, got)
	}
	at(ts.URL, "", "job", "scale", "-detach", "web", "nope", "2").fails(t, `Error: Error submitting scaling request: Unexpected response code: 400 (task group "nope" specified for scaling does not exist in job)`)
	at(ts.URL, "", "job", "scale", "web", "-1").fails(t, "Error: ")
	at(ts.URL, "", "job", "scale", "web", "x").fails(t, `Error: Failed to convert count "x"`)
}

// at runs `group verb` against url with token, the connection flags
// before the command's own flags and arguments.
func at(url, token, group, verb string, args ...string) cliResult {
	return runCLI(append([]string{group, verb, "-address=" + url, "-token=" + token}, args...)...)
}
