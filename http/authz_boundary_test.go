package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
)

// authzWorld is a server with ACLs on, a deployment in "default" and one in
// "prod", and a token that may read only "default".
type authzWorld struct {
	f *deploytest.Fixture
	// url serves f's server with the jobs service too (the evaluation
	// endpoints need it).
	url    string
	root   string
	reader string
	def    *world
	prod   *state.Deployment
	// prodAlloc and prodEval belong to the prod deployment's job.
	prodAlloc, prodEval string
}

func newAuthzWorld(t *testing.T) *authzWorld {
	t.Helper()
	const root = "3d0c6a1e-1b7f-4f0e-9a55-6c1e2f9b0d21"
	f := deploytest.Start(t, servertest.ACL(root))
	w := &authzWorld{f: f, root: root}
	if resp := f.Do("PUT", "/v1/acl/policy", `{"Name":"reader","Rules":"namespace \"default\" { policy = \"read\" }"}`, "X-Service-Token", root); resp.Status != 200 {
		t.Fatalf("policy: %s", resp)
	}
	var tok struct{ SecretID string }
	f.Do("PUT", "/v1/acl/token", `{"Policies":[{"Name":"reader"}]}`, "X-Service-Token", root).JSON(t, &tok)
	w.reader = tok.SecretID
	w.def = newWorldOn(t, f)
	prodJob := f.RegisterJob(deploytest.Job("prod", "api", "v0", deploytest.Group{Name: "g", Count: 1}))
	var allocs []*state.Allocation
	w.prod, allocs = f.Deploy(prodJob)
	w.prodAlloc = allocs[0].ID
	hs := httptest.NewServer(ctlhttp.New(f.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(f.Server), Jobs: jobs.New(f.Deps), Deployments: deployments.New(f.Deps)}))
	t.Cleanup(hs.Close)
	w.url = hs.URL
	// A real evaluation in prod: a job registered there through the API.
	ts := &servertest.TestServer{URL: hs.URL}
	w.prodEval = mustWrite(t, ts, "PUT", "/v1/jobs?namespace=prod", jobBody("batch", 1, ""), "X-Service-Token", root).EvalID
	return w
}

// A read the caller may not make is refused at once, blocking or not, and
// its answer carries no index: a caller learns neither that the object
// changed nor when.
func TestReadRefusalNeitherWaitsNorTellsIndex(t *testing.T) {
	w := newAuthzWorld(t)
	client := &http.Client{Timeout: 30 * time.Second} // the old code held these for the 5-minute wait
	for _, path := range []string{
		depPath + w.prod.ID,
		depPath + "allocations/" + w.prod.ID,
		depPath + "history/" + w.prod.ID,
		"/v1/evaluation/" + w.prodEval,
		"/v1/evaluation/" + w.prodEval + "/allocations",
		"/v1/allocation/" + w.prodAlloc,
	} {
		for _, query := range []string{"", "?index=1000000&wait=5m"} {
			req, _ := http.NewRequest("GET", w.url+path+query, nil)
			req.Header.Set("X-Nomad-Token", w.reader)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("GET %s%s: %v", path, query, err)
			}
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Errorf("GET %s%s: status %d, want 403", path, query, resp.StatusCode)
			}
			for _, h := range []string{"X-Service-Index", "X-Nomad-Index", "X-Service-KnownLeader", "X-Nomad-KnownLeader"} {
				if v := resp.Header.Get(h); v != "" {
					t.Errorf("GET %s%s: 403 carries %s: %s", path, query, h, v)
				}
			}
		}
		// The reader's own objects still answer with their headers.
	}
	resp := w.f.Do("GET", depPath+w.def.d.ID, "", "X-Nomad-Token", w.reader)
	if resp.Status != 200 || resp.Header.Get("X-Nomad-Index") == "" {
		t.Errorf("reader's own deployment: %s (index %q)", resp, resp.Header.Get("X-Nomad-Index"))
	}
}

// A list across namespaces evaluates its filter only over what the caller
// may read: a filter that fails on a hidden deployment (it has no group
// "web") must not turn the answer into a 400.
func TestDeploymentListFilterSeesOnlyReadable(t *testing.T) {
	w := newAuthzWorld(t)
	filter := url.QueryEscape(`TaskGroups.web.DesiredTotal == 2`)
	expectPageAs(t, w.f, "?namespace=*&filter="+filter, []*state.Deployment{w.def.deployment(t)}, "X-Service-Token", w.reader)
	// The management token sees the prod deployment, on which the filter
	// cannot be evaluated: the 400 is real, for those who may read it.
	resp := w.f.Do("GET", "/v1/deployments?namespace=*&filter="+filter, "", "X-Service-Token", w.root)
	if resp.Status != 400 {
		t.Errorf("management: %s", resp)
	}
}

// The domain services check their caller themselves: a caller that does
// not come through HTTP cannot skip the check, and a Caller without an
// authorizer is refused (fail closed).
func TestServicesCheckTheirCaller(t *testing.T) {
	w := newAuthzWorld(t)
	readerAuthz := acl.NewAuthorizer([]*acl.Rules{mustRules(t, `namespace "default" { policy = "read" }`)})
	writerAuthz := acl.NewAuthorizer([]*acl.Rules{mustRules(t, `namespace "default" { policy = "write" }`)})
	ops := deployments.New(w.f.Deps)
	js := jobs.New(w.f.Deps)
	before := w.f.Deployment(w.prod.ID).ModifyIndex
	for name, caller := range map[string]acl.Caller{
		"zero caller": {},
		"reader":      {Authz: readerAuthz},
		"other ns":    {Authz: writerAuthz},
	} {
		for op, call := range map[string]func() error{
			"fail":    func() error { _, err := ops.Fail(caller, w.prod.ID); return err },
			"pause":   func() error { _, err := ops.Pause(caller, w.prod.ID, true); return err },
			"promote": func() error { _, err := ops.Promote(caller, w.prod.ID, true, nil); return err },
			"health":  func() error { _, err := ops.SetAllocHealth(caller, w.prod.ID, []string{w.prodAlloc}, nil); return err },
			"unblock": func() error { _, err := ops.Unblock(caller, w.prod.ID); return err },
			"register": func() error {
				_, err := js.Register(caller, deploytest.Job("prod", "api", "v1", deploytest.Group{Name: "g", Count: 2}), state.JobRegisterOptions{})
				return err
			},
			// A submission is refused before it is parsed: this spec is not a valid job.
			"submit": func() error {
				_, err := js.Submit(caller, jobs.Submission{Spec: []byte(`{"ID":"api","Namespace":"prod"}`), Namespace: "default"}, state.JobRegisterOptions{})
				return err
			},
			"plan submission": func() error {
				_, err := js.PlanSubmission(caller, jobs.Submission{Spec: []byte(`{"ID":"api","Namespace":"prod"}`), Namespace: "default"}, false)
				return err
			},
			"deregister": func() error { _, err := js.Deregister(caller, "prod", "api", true, 0); return err },
			"stable":     func() error { _, err := js.SetStable(caller, "prod", "api", 0, false); return err },
			"revert":     func() error { _, err := js.Revert(caller, "prod", "api", 0, nil); return err },
		} {
			if err := call(); !acl.IsPermissionDenied(err) {
				t.Errorf("%s %s: got %v, want Permission denied", name, op, err)
			}
		}
	}
	if after := w.f.Deployment(w.prod.ID).ModifyIndex; after != before {
		t.Errorf("refused calls changed the deployment: ModifyIndex %d -> %d", before, after)
	}
	_, job, _ := w.f.Deps.State().Job(nil, "prod", "api")
	if job == nil || job.Version != 0 || job.Stop {
		t.Errorf("refused calls changed the job: %+v", job)
	}
	// The writer acts in its own namespace.
	if _, err := ops.Pause(acl.Caller{Authz: writerAuthz, AccessorID: "a"}, w.def.d.ID, true); err != nil {
		t.Errorf("writer pauses its own deployment: %v", err)
	}
}

func mustRules(t *testing.T, hcl string) *acl.Rules {
	t.Helper()
	r, err := acl.Parse(hcl)
	if err != nil {
		t.Fatal(fmt.Errorf("rules %q: %w", hcl, err))
	}
	return r
}
