package ui_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ctlplane/ctlplane/state"
)

// The README's canary walk-through, from the browser: the job page follows
// a canary rollout live (no reload), Promote promotes it, a later version
// is failed with Fail and rolled back, and the deployment's history shows
// the cause.
func TestUICanaryRollout(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobBody(2, 1, "v0"))
	waitDeployment(t, ts, 0, "successful", func(d *state.Deployment) bool { return d.Status == "successful" })

	p := openTab(t, ts.URL)
	p.open("/ui/jobs/default/web", "#deployment .group")
	p.waitText("#deployment", "version 0", 5*time.Second)
	p.waitText("#deployment", "successful", 5*time.Second)
	if n := p.count("#deployment button[data-action]"); n != 0 {
		t.Errorf("a successful deployment shows %d action buttons", n)
	}
	p.markNoReload()

	// Version 1: its canary is placed, then healthy, live on the page.
	register(t, ts, jobBody(2, 1, "v1"))
	p.waitText("#deployment", "version 1", 3*time.Second)
	p.waitText(`#deployment [data-count="canaries"]`, "1/1", 10*time.Second)
	p.waitText(`#deployment [data-count="healthy"]`, "1", 10*time.Second)
	p.waitText("#deployment", "running", time.Second)
	p.waitText(`#deployment [data-count="promoted"]`, "no", time.Second)
	if got := p.text(`#deployment [data-count="desired"]`); got != "2" {
		t.Errorf("desired %q, want 2", got)
	}
	if got := p.text("#deployment .deadline"); got == "—" || got == "" {
		t.Errorf("progress deadline %q, want a countdown", got)
	}
	// Its diff against version 0 is on the page.
	p.waitText(`#versions li[data-version="1"]`, "v0 → v1", 3*time.Second)
	if docs := *docsDir; docs != "" {
		screenshot(t, p, filepath.Join(docs, "ui-job.png"))
	}

	p.click(`#deployment button[data-action="promote"]`)
	p.waitText(`#deployment [data-count="promoted"]`, "yes", 5*time.Second)
	p.waitText("#deployment", "successful", 15*time.Second)
	p.waitText(`#deployment [data-count="healthy"]`, "2", time.Second)
	d1 := latest(t, ts, 1)
	if d1 == nil || d1.Status != "successful" || !d1.TaskGroups["web"].Promoted {
		t.Fatalf("after Promote: %+v", d1)
	}

	// Version 2, planned and run from the browser, then failed there:
	// rolled back to version 1.
	p.click(`nav a[href="/ui/jobs/run"]`)
	p.waitText("h1", "Run a job", 3*time.Second)
	p.fill("#job-spec", jobBody(2, 1, "v2"))
	p.click("#plan-job")
	p.waitText("#plan-result", "stdout_string: v1 → v2", 5*time.Second)
	p.waitText(`#plan-result table[aria-label="Planned changes per group"] tbody tr`, "web", time.Second)
	if got := eval[string](p, "canary column", `document.querySelector('#plan-result tbody tr td:nth-child(6)').textContent`); got != "1" {
		t.Errorf("the plan's Canary count: %q, want 1", got)
	}
	p.click("#run-job")
	p.waitText("h1", "Job web", 3*time.Second)
	p.waitText("#deployment", "version 2", 5*time.Second)
	p.waitText(`#deployment [data-count="canaries"]`, "1/1", 10*time.Second)
	p.click(`#deployment button[data-action="fail"]`)
	// The rollback is version 3 (a copy of version 1) with its own deployment.
	p.waitText("#deployment", "version 3", 5*time.Second)
	p.waitText(`#versions li[data-version="3"]`, "v2 → v1", 3*time.Second)
	p.stillNoReload()

	// The failed deployment's history: its cause is the operation.
	var d2 *state.Deployment
	r := ts.Do(t, "GET", "/v1/job/web/deployments", "")
	var all []*state.Deployment
	r.JSON(t, &all)
	for _, d := range all {
		if d.JobVersion == 2 {
			d2 = d
		}
	}
	if d2 == nil || d2.Status != "failed" {
		t.Fatalf("version 2's deployment: %+v", d2)
	}
	p.open("/ui/deployments/"+d2.ID, "#history ol.timeline")
	p.waitText(`#history li[data-status="failed"]`, "fail requested through the API", 3*time.Second)
	p.waitText(`#history li[data-status="failed"]`, "rolling back to job version 1", time.Second)
	p.waitText("#history", "scheduler: created", time.Second)

	// The jobs list: web at version 3, two allocations running.
	p.click(`nav a[href="/ui/jobs"]`)
	p.waitText("#jobs tbody tr", "web", 3*time.Second)
	p.waitJS("web at version 3 with 2 running", `(() => { const td = [...document.querySelectorAll("#jobs tbody tr td")].map(td => td.textContent); return td[4] === "3" && td[5] === "2"; })()`,
		textOf("#jobs"), 10*time.Second)

	if docs := *docsDir; docs != "" {
		p.open("/ui/", "#deployments table")
		p.waitText("#deployments", "web", 3*time.Second)
		screenshot(t, p, filepath.Join(docs, "ui-deployments.png"))
	}
}

// screenshot writes the page's screenshot to path (the README's).
func screenshot(t *testing.T, p *page, path string) {
	t.Helper()
	buf, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(fmt.Sprintf("wrote %s", path))
}
