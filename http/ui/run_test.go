package ui_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// The Run job page: a document that is not JSON, or has no job ID, is
// said so; the server's refusal is shown as it says it; nothing is stored.
func TestUIRunJobErrors(t *testing.T) {
	ts := servertest.Start(t)
	p := openTab(t, ts.URL)
	p.open("/ui/jobs/run", "#run-form")
	p.fill("#job-spec", `{"Job": `)
	p.click("#run-job")
	p.waitText("#run-error", "The job is not valid JSON", 3*time.Second)
	p.fill("#job-spec", `{"Job": {"Datacenters": ["dc1"]}}`)
	p.click("#run-job")
	p.waitText("#run-error", "The job has no ID", 3*time.Second)
	p.fill("#job-spec", `{"Job":{"ID":"x","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":-1,"Tasks":[{"Name":"t","Driver":"mock_driver"}]}]}}`)
	p.click("#run-job")
	p.waitText("#run-error", "Task group g validation failed: Task group count can't be negative", 3*time.Second)
	p.click("#plan-job")
	p.waitText("#run-error", "Task group count can't be negative", 3*time.Second)
	if r := ts.Do(t, http.MethodGet, "/v1/job/x", ""); r.Status != http.StatusNotFound {
		t.Errorf("the refused job was stored: %d %s", r.Status, r.Body)
	}
}

// From a job's page: its current version in the Run form, edited, planned
// (the diff shows the edit) and run as the next version.
func TestUIEditAndRun(t *testing.T) {
	ts := servertest.Start(t)
	register(t, ts, jobBody(1, 0, "v0"))
	p := openTab(t, ts.URL)
	p.open("/ui/jobs/default/web", "#versions li")
	p.click("#edit-job")
	p.waitText("h1", "Run a job", 3*time.Second)
	p.waitJS("the job in the form", `document.querySelector("#job-spec").value.includes('"stdout_string": "v0"')`,
		`document.querySelector("#job-spec").value`, 3*time.Second)
	eval[bool](p, "edit", `(() => { const e = document.querySelector("#job-spec"); e.value = e.value.replace('"stdout_string": "v0"', '"stdout_string": "v1"'); return true; })()`)
	p.click("#plan-job")
	p.waitText("#plan-result", "stdout_string: v0 → v1", 3*time.Second)
	p.click("#run-job")
	p.waitText("h1", "Job web", 3*time.Second)
	p.waitText("#job-version", "1", 3*time.Second)
	p.waitText(`#versions li[data-version="1"]`, "v0 → v1", 3*time.Second)
}
