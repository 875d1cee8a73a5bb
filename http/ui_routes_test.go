package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// Issue 31, finding 7: a UI page answers for every job ID a job may have
// (dots, percent signs, spaces once encoded), while a missing asset where
// the assets are stays a 404.
func TestUIPagesForEveryJobID(t *testing.T) {
	ts := servertest.Start(t)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("my.job", 1, ""))
	if r := ts.Do(t, "GET", "/v1/job/my.job", ""); r.Status != http.StatusOK || !strings.Contains(r.Body, `"ID":"my.job"`) {
		t.Fatalf("GET /v1/job/my.job: %d %.200s", r.Status, r.Body)
	}
	cases := []struct {
		path   string
		status int
		body   string
	}{
		{"/ui/jobs/default/my.job", 200, `<script type="module" src="/ui/app.js">`},
		{"/ui/jobs/default/api.v1.2.js", 200, `<script type="module" src="/ui/app.js">`},
		{"/ui/jobs/default/50%25%20off%3F.x", 200, `<script type="module" src="/ui/app.js">`},
		{"/ui/nodes/worker.example.com", 200, `<script type="module" src="/ui/app.js">`},
		{"/ui/jobs/default/web", 200, `<script type="module" src="/ui/app.js">`},
		{"/ui/app.js", 200, "import"},
		{"/ui/missing.js", 404, "UI asset missing.js not found"},
		{"/ui/pages/missing.js", 404, "UI asset pages/missing.js not found"},
	}
	for _, c := range cases {
		r := ts.Do(t, "GET", c.path, "")
		if r.Status != c.status || !strings.Contains(r.Body, c.body) {
			t.Errorf("GET %s: %d %.120q, want %d with %q", c.path, r.Status, r.Body, c.status, c.body)
		}
	}
}
