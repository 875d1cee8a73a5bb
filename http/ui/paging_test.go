package ui_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// deploymentCount is how many deployments the paging test stores.
const deploymentCount = 10000

// The deployments page with 10,000 deployments: 25 a page, newest first,
// paged by the server (next page, previous page), filtered by job and by
// status, and live: a new deployment appears on the first page.
func TestUIDeploymentsPaged(t *testing.T) {
	f := deploytest.Start(t)
	stored := seedDeployments(t, f)

	// The newest first, as the API pages them.
	var first []*state.Deployment
	f.Do(http.MethodGet, "/v1/deployments?namespace=*&reverse=true&per_page=25", "").JSON(t, &first)
	if len(first) != 25 {
		t.Fatalf("API first page: %d", len(first))
	}

	p := openTab(t, f.URL)
	began := time.Now()
	p.open("/ui/", "#deployments table")
	t.Logf("deployments page: table shown %v after navigation", time.Since(began))
	// From the navigation's start to the first page of deployments in the
	// document (the page marks it); its speed is BenchmarkUIFirstPaint's.
	shown := eval[float64](p, "render timing", `(() => { const e = performance.getEntriesByName("ctlplane:deployments-rendered")[0]; return e ? e.startTime : -1; })()`)
	t.Logf("first page of %d deployments in the document %.0f ms after the navigation started (BenchmarkUIFirstPaint measures it)", deploymentCount, shown)
	if shown < 0 {
		t.Errorf("the deployments page never marked its first page as rendered")
	}
	// Again, as a later visit: the modules are revalidated (ETag, 304).
	p.open("/ui/nodes", "#nodes")
	p.open("/ui/", "#deployments table")
	again := eval[float64](p, "render timing", `performance.getEntriesByName("ctlplane:deployments-rendered")[0].startTime`)
	t.Logf("and %.0f ms on a later visit", again)
	if n := p.count("#deployments tbody tr"); n != 25 {
		t.Fatalf("first page: %d rows, want 25", n)
	}
	if got := p.text("#deployments tbody tr:first-child td:first-child"); got != first[0].ID[:8] {
		t.Errorf("first row %q, want the newest deployment %s", got, first[0].ID[:8])
	}
	p.markNoReload()
	p.click("#next-page")
	p.waitText("#page-number", "Page 2", 3*time.Second)
	var second []*state.Deployment
	r := f.Do(http.MethodGet, "/v1/deployments?namespace=*&reverse=true&per_page=25&next_token="+headerNext(f, "/v1/deployments?namespace=*&reverse=true&per_page=25"), "")
	r.JSON(t, &second)
	p.waitText("#deployments tbody tr:first-child td:first-child", second[0].ID[:8], 3*time.Second)
	p.click("#prev-page")
	p.waitText("#page-number", "Page 1", 3*time.Second)
	p.waitText("#deployments tbody tr:first-child td:first-child", first[0].ID[:8], 3*time.Second)

	// Live: a new deployment tops the first page within a second.
	d := deployOnly(f, stored[7])
	p.waitLive("#deployments tbody tr:first-child td:first-child", d.ID[:8], time.Second)

	// By job: web07 has 101 deployments, 5 pages.
	p.fill("#filter-job", "web07")
	p.click(`form[role="search"] button[type="submit"]`)
	p.waitJS("only web07's deployments", `[...document.querySelectorAll("#deployments tbody tr td:nth-child(2)")].every(td => td.textContent === "web07")`,
		textOf("#deployments"), 3*time.Second)
	p.waitText("#deployments tbody tr:first-child", d.ID[:8], time.Second)
	jobsShown := eval[[]string](p, "jobs", `[...document.querySelectorAll("#deployments tbody tr td:nth-child(2)")].map(td => td.textContent)`)
	if len(jobsShown) != 25 {
		t.Errorf("job filter: %d rows", len(jobsShown))
	}
	for _, j := range jobsShown {
		if j != "web07" {
			t.Fatalf("job filter shows job %q", j)
		}
	}
	for page := 2; page <= 5; page++ {
		p.click("#next-page")
		p.waitText("#page-number", fmt.Sprintf("Page %d", page), 3*time.Second)
	}
	if n := p.count("#deployments tbody tr"); n != 1 {
		t.Errorf("page 5 of web07: %d rows, want 1", n)
	}
	if dis := eval[bool](p, "next disabled", `document.querySelector("#next-page").disabled`); !dis {
		t.Error("the last page offers a next page")
	}

	// By status: fail one; it alone is failed.
	if r := f.Do(http.MethodPut, "/v1/deployment/fail/"+d.ID, ""); r.Status != http.StatusOK {
		t.Fatalf("fail: %d %s", r.Status, r.Body)
	}
	p.run("pick failed", setSelect("#filter-status", "failed"))
	p.fill("#filter-job", "")
	p.click(`form[role="search"] button[type="submit"]`)
	p.waitJS("one failed deployment", `document.querySelectorAll("#deployments tbody tr").length === 1`, textOf("#deployments"), 3*time.Second)
	p.waitText("#page-number", "Page 1", time.Second)
	p.waitText("#deployments tbody", d.ID[:8], time.Second)
	if n := p.count("#deployments tbody tr"); n != 1 {
		t.Errorf("status filter: %d rows, want 1", n)
	}
	p.stillNoReload()
	if got := eval[string](p, "url", `location.search`); got != "?status=failed" {
		t.Errorf("the filter is not in the page's URL: %q", got)
	}
}

// deployOnly stores a running deployment of job (a plan with no
// placements): the bulk path of this test.
// seedDeployments stores deploymentCount deployments over 100 jobs
// (web00…web99, in that order of creation: job i%100 gets deployment i).
func seedDeployments(t testing.TB, f *deploytest.Fixture) []*state.Job {
	t.Helper()
	const jobs = 100
	var stored []*state.Job
	for i := range jobs {
		stored = append(stored, f.RegisterJob(deploytest.Job("default", fmt.Sprintf("web%02d", i), "v0", deploytest.Group{Name: "g", Count: 1})))
	}
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 { // concurrent applies share Raft entries
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				deployOnly(f, stored[i%jobs])
			}
		}()
	}
	for i := range deploymentCount {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("stored %d deployments in %v", deploymentCount, time.Since(start))
	return stored
}

func deployOnly(f *deploytest.Fixture, job *state.Job) *state.Deployment {
	d := &state.Deployment{
		ID: uuid.NewString(), Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.JobModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*state.DeploymentState{"g": {DesiredTotal: 1}},
		Status:     state.DeploymentStatusRunning, StatusDescription: state.DeploymentStatusDescriptionRunning,
	}
	res := deploytest.Apply(f, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: &state.Plan{
		EvalID: uuid.NewString(), Namespace: job.Namespace, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Deployment: d, Now: f.Clock.Now().UnixNano(),
	}})
	if res.Refused != "" {
		f.T.Fatalf("plan refused: %s", res.Refused)
	}
	return d
}

func headerNext(f *deploytest.Fixture, path string) string {
	r := f.Do(http.MethodGet, path, "")
	return r.Header.Get("X-Service-NextToken")
}
