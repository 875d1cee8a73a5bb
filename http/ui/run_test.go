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
