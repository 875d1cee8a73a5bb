package http_test

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/agent"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// startJobs starts a real server (Raft on 127.0.0.1, in-memory state) and
// serves its API with the jobs service wired in on its own 127.0.0.1
// listener, without the agent's scheduler: evaluations stay as the jobs
// endpoints wrote them. The returned TestServer's Do talks to that listener.
func startJobs(t *testing.T, opts ...servertest.Option) *servertest.TestServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dev = true
	cfg.NodeName = "test"
	cfg.BindAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.RaftTimeout = 100 * time.Millisecond
	cfg.ACLEnabled = false
	cfg.Logger = hclog.NewNullLogger()
	for _, o := range opts {
		o(cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	if err := srv.Serve(ctlhttp.New(srv, cfg.Logger, ctlhttp.Services{ACL: aclOf(srv)})); err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	ts := &servertest.TestServer{Agent: &agent.Agent{Server: srv, Config: cfg}, Config: cfg}
	ts.WaitForLeader(t)
	return withJobs(t, ts)
}

// withJobs serves ts's server with the jobs service on a 127.0.0.1 listener.
func withJobs(t *testing.T, ts *servertest.TestServer) *servertest.TestServer {
	t.Helper()
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts.Server), Jobs: jobs.New(deps), Namespaces: namespaces.New(deps)}))
	t.Cleanup(hs.Close)
	return &servertest.TestServer{Agent: ts.Agent, Config: ts.Config, URL: hs.URL}
}

// jobBody is a register body for a service job with one group of count
// tasks; extra is spliced into the job object.
func jobBody(id string, count int, extra string) string {
	return fmt.Sprintf(`{"Job":{"ID":%q%s,"TaskGroups":[{"Name":"web","Count":%d,"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h","nested":{"list":[1,"two"]}}}]}]}}`, id, extra, count)
}

// writeResp is a register/deregister/revert answer.
type writeResp struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        *string
	Index           uint64
}

// mustWrite sends a job write and decodes its 200 answer, checking that
// the index headers carry the body's Index.
func mustWrite(t *testing.T, ts *servertest.TestServer, method, path, body string, headers ...string) writeResp {
	t.Helper()
	resp := ts.Do(t, method, path, body, headers...)
	if resp.Status != 200 {
		t.Fatalf("%s %s: %s", method, path, resp)
	}
	var out writeResp
	resp.JSON(t, &out)
	for _, h := range []string{"X-Service-Index", "X-Nomad-Index"} {
		if got := resp.Header.Get(h); got != strconv.FormatUint(out.Index, 10) {
			t.Errorf("%s %s: %s = %q, body Index %d", method, path, h, got, out.Index)
		}
	}
	return out
}

// getJob reads a job through the API.
func getJob(t *testing.T, ts *servertest.TestServer, id string) *state.Job {
	t.Helper()
	resp := ts.Do(t, "GET", "/v1/job/"+id, "")
	if resp.Status != 200 {
		t.Fatalf("GET job %s: %s", id, resp)
	}
	var job state.Job
	resp.JSON(t, &job)
	return &job
}

// jobEvals lists a job's evaluations through the API, in the official
// client's type (which is what they must decode into).
func jobEvals(t *testing.T, ts *servertest.TestServer, id string) []*api.Evaluation {
	t.Helper()
	resp := ts.Do(t, "GET", "/v1/job/"+id+"/evaluations", "")
	if resp.Status != 200 {
		t.Fatalf("GET evaluations of %s: %s", id, resp)
	}
	var evals []*api.Evaluation
	resp.JSON(t, &evals)
	return evals
}

// findEval picks an evaluation by ID.
func findEval(t *testing.T, evals []*api.Evaluation, id string) *api.Evaluation {
	t.Helper()
	for _, e := range evals {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("evaluation %s not among %d", id, len(evals))
	return nil
}
