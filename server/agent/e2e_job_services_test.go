package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	nomadapi "github.com/hashicorp/nomad/api"
)

// TestJobAndAllocServices: GET /v1/job/:id/services and
// /v1/allocation/:id/services answer as Nomad 1.6's: the registrations in
// the shape of /v1/service/:name, the registrations table's index, an
// empty list for a job without services, 404 "job not found" / "alloc not
// found" for an unknown one or one of another namespace, read-job in the
// requested namespace, and a blocking read that wakes on a delete. The
// unmodified nomad/api client reads both.
func TestJobAndAllocServices(t *testing.T) {
	const mgmt = "5e5e5e5e-0000-4000-8000-00000000bbbb"
	ts := servertest.Start(t, servertest.ACL(mgmt), servertest.DevNodes(1))
	do := func(token, method, path string) *servertest.Response {
		return ts.Do(t, method, path, "", "X-Nomad-Token", token)
	}
	mustDo := func(method, path, body string) *servertest.Response {
		t.Helper()
		r := ts.Do(t, method, path, body, "X-Nomad-Token", mgmt)
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s: %s", method, path, r)
		}
		return r
	}
	waitFor(t, "the dev node to be ready", 30*time.Second, func() bool {
		var nodes []*state.Node
		if r := do(mgmt, http.MethodGet, "/v1/nodes"); r.Status == http.StatusOK {
			r.JSON(t, &nodes)
		}
		return len(nodes) == 1 && nodes[0].Status == state.NodeStatusReady
	})
	mustDo(http.MethodPut, "/v1/namespace/other", `{"Name":"other"}`)
	var pol state.ACLPolicy
	mustDo(http.MethodPut, "/v1/acl/policy", `{"Name":"reader","Rules":"namespace \"default\" { policy = \"read\" }"}`).JSON(t, &pol)
	var tok state.ACLToken
	mustDo(http.MethodPut, "/v1/acl/token", fmt.Sprintf(`{"Policies":[{"ID":%q}]}`, pol.ID)).JSON(t, &tok)

	mustDo(http.MethodPut, "/v1/jobs", serviceJob("default", "a", "web", `"v1"`))
	mustDo(http.MethodPut, "/v1/jobs", serviceJob("other", "b", "api", ""))
	mustDo(http.MethodPut, "/v1/jobs", `{"Job":{"ID":"plain","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,`+
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{}}]}]}}`)

	// The registrations as /v1/service/:name answers them: the expected bodies.
	serviceBody := func(ns, name string) (string, string) {
		t.Helper()
		var body, idx string
		waitFor(t, "service "+ns+"/"+name, 30*time.Second, func() bool {
			r := do(mgmt, http.MethodGet, "/v1/service/"+name+"?namespace="+ns)
			body, idx = strings.TrimSpace(r.Body), r.Header.Get("X-Nomad-Index")
			return r.Status == http.StatusOK && body != "[]"
		})
		return body, idx
	}
	webBody, _ := serviceBody("default", "web")
	apiBody, idx := serviceBody("other", "api")
	var web, api []*nomadapi.ServiceRegistration
	(&servertest.Response{Body: webBody}).JSON(t, &web)
	(&servertest.Response{Body: apiBody}).JSON(t, &api)
	if len(web) != 1 || len(api) != 1 || web[0].JobID != "a" || api[0].JobID != "b" {
		t.Fatalf("registrations: %s %s", webBody, apiBody)
	}

	for _, c := range []struct {
		name, token, path string
		status            int
		body              string
	}{
		{"job", mgmt, "/v1/job/a/services", 200, webBody},
		{"job in its namespace", mgmt, "/v1/job/b/services?namespace=other", 200, apiBody},
		{"job without services", mgmt, "/v1/job/plain/services", 200, "[]"},
		{"unknown job", mgmt, "/v1/job/nope/services", 404, "job not found"},
		{"job of another namespace", mgmt, "/v1/job/b/services", 404, "job not found"},
		{"alloc", mgmt, "/v1/allocation/" + web[0].AllocID + "/services", 200, webBody},
		{"alloc in its namespace", mgmt, "/v1/allocation/" + api[0].AllocID + "/services?namespace=other", 200, apiBody},
		{"alloc of another namespace", mgmt, "/v1/allocation/" + api[0].AllocID + "/services", 404, "alloc not found"},
		{"unknown alloc", mgmt, "/v1/allocation/00000000-0000-4000-8000-000000000000/services", 404, "alloc not found"},
		{"bad alloc ID", mgmt, "/v1/allocation/x/services", 400, `Invalid allocation ID "x": a 36-character UUID is required`},
		{"reader's job", tok.SecretID, "/v1/job/a/services", 200, webBody},
		{"reader's alloc", tok.SecretID, "/v1/allocation/" + web[0].AllocID + "/services", 200, webBody},
		{"reader, unknown job", tok.SecretID, "/v1/job/nope/services", 404, "job not found"},
		{"reader, other namespace job", tok.SecretID, "/v1/job/b/services?namespace=other", 403, "Permission denied"},
		{"reader, other namespace alloc", tok.SecretID, "/v1/allocation/" + api[0].AllocID + "/services?namespace=other", 403, "Permission denied"},
		{"anonymous job", "", "/v1/job/a/services", 403, "Permission denied"},
		{"anonymous alloc", "", "/v1/allocation/" + web[0].AllocID + "/services", 403, "Permission denied"},
	} {
		r := do(c.token, http.MethodGet, c.path)
		if r.Status != c.status || strings.TrimSpace(r.Body) != c.body {
			t.Errorf("%s: GET %s: %d %s, want %d %s", c.name, c.path, r.Status, r.Body, c.status, c.body)
		}
		if c.status == 200 && r.Header.Get("X-Nomad-Index") != idx {
			t.Errorf("%s: X-Nomad-Index %q, want the registrations' %q", c.name, r.Header.Get("X-Nomad-Index"), idx)
		}
	}

	// The nomad/api client; a blocking read of the job's services wakes on
	// the delete of its registration.
	cfg := nomadapi.DefaultConfig()
	cfg.Address, cfg.SecretID = ts.URL, mgmt
	nc, err := nomadapi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	byAlloc, _, err := nc.Allocations().Services(web[0].AllocID, nil)
	if err != nil || len(byAlloc) != 1 || byAlloc[0].ID != web[0].ID || byAlloc[0].Port != web[0].Port {
		t.Fatalf("Allocations().Services: %v %+v", err, byAlloc)
	}
	byJob, meta, err := nc.Jobs().Services("a", nil)
	if err != nil || len(byJob) != 1 || byJob[0].ID != web[0].ID || fmt.Sprint(meta.LastIndex) != idx {
		t.Fatalf("Jobs().Services: %v %+v %+v", err, byJob, meta)
	}
	if _, _, err := nc.Jobs().Services("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Jobs().Services of an unknown job: %v", err)
	}
	woke := make(chan []*nomadapi.ServiceRegistration, 1)
	go func() {
		regs, _, err := nc.Jobs().Services("a", &nomadapi.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		woke <- regs
	}()
	if _, err := nc.Services().Delete("web", web[0].ID, nil); err != nil {
		t.Fatalf("Services().Delete: %v", err)
	}
	select {
	case got := <-woke:
		if got == nil || len(got) != 0 {
			t.Fatalf("after the delete: %+v", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the blocking Jobs().Services did not wake on the delete")
	}
}
