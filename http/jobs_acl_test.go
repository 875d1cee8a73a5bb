package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// needNSSubmitJob: namespace submit-job (Nomad-side: refused with
// "Permission denied").
const needNSSubmitJob = "namespace:submit-job"

func init() { nomadNeeds[needNSSubmitJob] = true }

// jobsMatrixRows are the jobs and evaluations endpoints' rows of the
// permission matrix. The matrix server has no jobs: reads find nothing,
// writes stop at validation or "job not found", which come after the
// check, so that no row starts the scheduler. An evaluation's namespace is
// checked on the evaluation found, so only an unknown secret is refused
// before its 404.
func jobsMatrixRows() []acxEndpoint {
	evalNotFound := acxWant{http.StatusNotFound, "eval not found"}
	jobNotFound := acxWant{http.StatusNotFound, "job not found"}
	batch := `{"Job":{"ID":"web","Type":"batch","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}}`
	invalid := acxWant{http.StatusBadRequest, `Job type "batch" is not supported: only service jobs are supported for now`}
	rows := []acxEndpoint{
		{method: "GET", path: "/v1/jobs", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/job/web", need: needNSReadJob, ok: jobNotFound},
		{method: "GET", path: "/v1/job/web/versions", need: needNSReadJob, ok: acxWant{404, "job versions not found"}},
		{method: "GET", path: "/v1/job/web/deployments", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/job/web/deployment", need: needNSReadJob, ok: acxWant{200, "null"}},
		{method: "GET", path: "/v1/job/web/allocations", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/job/web/evaluations", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/evaluations", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/evaluation/" + otherID, need: needNomadToken, ok: evalNotFound},
		{method: "GET", path: "/v1/evaluation/" + otherID + "/allocations", need: needNomadToken, ok: evalNotFound},
		{method: "DELETE", path: "/v1/job/web", need: needNSSubmitJob, ok: jobNotFound},
	}
	for _, m := range []string{"PUT", "POST"} {
		rows = append(rows,
			acxEndpoint{method: m, path: "/v1/jobs", body: batch, need: needNSSubmitJob, ok: invalid},
			acxEndpoint{method: m, path: "/v1/job/web", body: batch, need: needNSSubmitJob, ok: invalid},
			acxEndpoint{method: m, path: "/v1/job/web/stable", body: `{"JobVersion":0,"Stable":true}`, need: needNSSubmitJob, ok: jobNotFound},
			acxEndpoint{method: m, path: "/v1/job/web/revert", body: `{"JobVersion":0}`, need: needNSSubmitJob, ok: jobNotFound},
			acxEndpoint{method: m, path: "/v1/job/web/plan", body: batch, need: needNSSubmitJob, ok: invalid},
		)
	}
	return rows
}

// TestJobACL: read-job for reads and submit-job for writes, in the job's
// namespace; anything else (an unknown secret too) is 403 Permission
// denied; a list of "*" shows only the readable namespaces.
func TestJobACL(t *testing.T) {
	const mgmt = "c0ffee00-0000-4000-8000-000000000001"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	reader := s.tokenWithRules(t, "reader", `namespace "default" { policy = "read" }`, "").SecretID
	writer := s.tokenWithRules(t, "writer", `namespace "default" { policy = "write" }`+"\n"+`namespace "team-*" { capabilities = ["read-job"] }`, "").SecretID
	other := s.tokenWithRules(t, "other", `namespace "other" { policy = "write" }`, "").SecretID
	scale := s.tokenWithRules(t, "scale", `namespace "default" { policy = "scale" }`, "").SecretID

	reg := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""), "X-Nomad-Token", mgmt)
	mkNamespace(t, ts, "team-a", "X-Nomad-Token", mgmt)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, `,"Namespace":"team-a"`), "X-Nomad-Token", mgmt)
	evalPath := "/v1/evaluation/" + reg.EvalID

	reads := []string{"/v1/job/web", "/v1/job/web/versions", "/v1/job/web/deployments", "/v1/job/web/deployment",
		"/v1/job/web/allocations", "/v1/job/web/evaluations", "/v1/jobs?namespace=default", "/v1/evaluations?namespace=default",
		evalPath, evalPath + "/allocations"}
	writes := []struct{ method, path, body string }{
		{"PUT", "/v1/jobs", jobBody("web", 2, "")},
		{"POST", "/v1/job/web", jobBody("web", 3, "")},
		{"PUT", "/v1/job/web/stable", `{"JobVersion":0,"Stable":true}`},
		{"PUT", "/v1/job/web/revert", `{"JobVersion":0}`},
		{"DELETE", "/v1/job/web", ""},
	}
	denied := func(secret string) []string {
		if secret == "" {
			return nil
		}
		return []string{"X-Nomad-Token", secret}
	}
	for _, who := range []struct {
		name, secret string
		read, write  bool
	}{
		{"anonymous", "", false, false},
		{"unknown secret", "00000000-1111-4222-8333-444444444444", false, false},
		{"other namespace", other, false, false},
		{"reader", reader, true, false},
		{"scale (no read-job)", scale, false, false},
		{"writer", writer, true, true},
	} {
		for _, p := range reads {
			resp := ts.Do(t, "GET", p, "", denied(who.secret)...)
			if who.read && resp.Status != 200 || !who.read && (resp.Status != 403 || resp.Body != "Permission denied") {
				t.Errorf("%s GET %s: %s", who.name, p, resp)
			}
		}
		for _, w := range writes {
			resp := ts.Do(t, w.method, w.path, w.body, denied(who.secret)...)
			if who.write && resp.Status != 200 || !who.write && (resp.Status != 403 || resp.Body != "Permission denied") {
				t.Errorf("%s %s %s: %s", who.name, w.method, w.path, resp)
			}
		}
	}

	// "*" lists only what the token may read: the writer reads default and team-*.
	list := func(secret, path string) string {
		resp := ts.Do(t, "GET", path, "", "X-Nomad-Token", secret)
		if resp.Status != 200 {
			t.Fatalf("GET %s: %s", path, resp)
		}
		return resp.Body
	}
	if body := list(reader, "/v1/jobs?namespace=*"); strings.Count(body, `"ID":"web"`) != 1 || !strings.Contains(body, `"Namespace":"default"`) {
		t.Errorf("reader's * list: %s", body)
	}
	if body := list(writer, "/v1/jobs?namespace=*"); strings.Count(body, `"ID":"web"`) != 2 {
		t.Errorf("writer's * list: %s", body)
	}
	if body := list(other, "/v1/jobs?namespace=*"); body != "[]" {
		t.Errorf("other's * list: %s", body)
	}
	if body := list(reader, "/v1/evaluations?namespace=*"); strings.Contains(body, "team-a") || !strings.Contains(body, reg.EvalID) {
		t.Errorf("reader's * evaluations: %s", body)
	}
	// The writer may read team-a but not submit there.
	expectError(t, ts.Do(t, "PUT", "/v1/jobs", jobBody("web", 5, `,"Namespace":"team-a"`), "X-Nomad-Token", writer), 403, "Permission denied")
	expectError(t, ts.Do(t, "PUT", "/v1/jobs?namespace=team-a", jobBody("web", 5, ""), "X-Nomad-Token", writer), 403, "Permission denied")
	if resp := ts.Do(t, "GET", "/v1/job/web?namespace=team-a", "", "X-Nomad-Token", writer); resp.Status != 200 {
		t.Errorf("writer reading team-a: %s", resp)
	}

	// The official client with a read-only token: reads work, writes are denied.
	c := nomadClient(t, ts, reader)
	if _, _, err := c.Jobs().Info("web", nil); err != nil {
		t.Errorf("reader Info: %v", err)
	}
	if _, _, err := c.Jobs().Register(nomadJob("web", 1), nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Errorf("reader Register: %v", err)
	}
	if _, _, err := c.Jobs().Info("web", &api.QueryOptions{Namespace: "team-a"}); err == nil {
		t.Errorf("reader Info in team-a: allowed")
	}
}

// Issue 31, finding 7: list-jobs alone lists jobs, as Nomad's Job.List
// (list-jobs or read-job in the namespace; with "*", the namespaces where
// the token holds either), without reading any one job.
func TestJobListWithListJobsOnly(t *testing.T) {
	const mgmt = "c0ffee00-0000-4000-8000-000000000002"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	lister := s.tokenWithRules(t, "lister", `namespace "default" { capabilities = ["list-jobs"] }`, "").SecretID
	teamLister := s.tokenWithRules(t, "team-lister", `namespace "team-a" { capabilities = ["list-jobs"] }`, "").SecretID
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""), "X-Nomad-Token", mgmt)
	mkNamespace(t, ts, "team-a", "X-Nomad-Token", mgmt)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("api", 1, `,"Namespace":"team-a"`), "X-Nomad-Token", mgmt)

	cases := []struct {
		name, secret, path string
		status             int
		ids                []string // the jobs listed, in order
	}{
		{"list-jobs in default", lister, "/v1/jobs", 200, []string{"default/web"}},
		{"list-jobs in default, explicit", lister, "/v1/jobs?namespace=default", 200, []string{"default/web"}},
		{"list-jobs in default, *", lister, "/v1/jobs?namespace=*", 200, []string{"default/web"}},
		{"list-jobs in default, team-a", lister, "/v1/jobs?namespace=team-a", 403, nil},
		{"list-jobs in team-a, default", teamLister, "/v1/jobs", 403, nil},
		{"list-jobs in team-a", teamLister, "/v1/jobs?namespace=team-a", 200, []string{"team-a/api"}},
		{"list-jobs in team-a, *", teamLister, "/v1/jobs?namespace=*", 200, []string{"team-a/api"}},
		{"management, *", mgmt, "/v1/jobs?namespace=*", 200, []string{"default/web", "team-a/api"}},
	}
	for _, c := range cases {
		resp := ts.Do(t, "GET", c.path, "", "X-Nomad-Token", c.secret)
		if resp.Status != c.status {
			t.Errorf("%s: GET %s: %s, want %d", c.name, c.path, resp, c.status)
			continue
		}
		if c.status != 200 {
			if resp.Body != "Permission denied" {
				t.Errorf("%s: GET %s: %s", c.name, c.path, resp)
			}
			continue
		}
		var stubs []struct{ ID, Namespace string }
		resp.JSON(t, &stubs)
		var got []string
		for _, j := range stubs {
			got = append(got, j.Namespace+"/"+j.ID)
		}
		if strings.Join(got, " ") != strings.Join(c.ids, " ") {
			t.Errorf("%s: GET %s listed %v, want %v", c.name, c.path, got, c.ids)
		}
	}
	// Listing is not reading: the job itself stays denied.
	expectError(t, ts.Do(t, "GET", "/v1/job/web", "", "X-Nomad-Token", lister), 403, "Permission denied")
}
