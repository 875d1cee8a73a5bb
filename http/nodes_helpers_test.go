package http_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// ntClock is a clock that moves only when told to.
type ntClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *ntClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ntClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// ntEnv is a real server with the node service wired into an HTTP handler
// served on 127.0.0.1.
type ntEnv struct {
	ts    *servertest.TestServer
	svc   *nodes.Service
	clock *ntClock
	url   string
	// Do sends requests to the handler with the node service.
	srv *servertest.TestServer
}

func ntStart(t *testing.T, ttl time.Duration, opts ...servertest.Option) *ntEnv {
	t.Helper()
	return ntStartWith(t, nodes.Config{HeartbeatTTL: ttl}, opts...)
}

func ntStartWith(t *testing.T, cfg nodes.Config, opts ...servertest.Option) *ntEnv {
	t.Helper()
	ts := servertest.Start(t, opts...)
	clock := &ntClock{now: time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)}
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: clock.Now, Logger: hclog.NewNullLogger()}
	s := nodes.New(deps, cfg)
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts.Server), Nodes: s}))
	t.Cleanup(hs.Close)
	// A TestServer value whose Do goes to our handler.
	view := *ts
	view.URL = hs.URL
	return &ntEnv{ts: ts, svc: s, clock: clock, url: hs.URL, srv: &view}
}

// runHeartbeats runs the leader routine until the test ends.
func (e *ntEnv) runHeartbeats(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.svc.RunHeartbeats(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (e *ntEnv) client(t *testing.T, token string) *api.Client {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: e.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ntNode is a registration of a node with room for a few allocations.
func ntNode(name string) *api.NodeRegistration {
	return &api.NodeRegistration{
		ID: uuid.NewString(), Name: name, Datacenter: "dc1",
		Drivers:   map[string]*api.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Resources: api.Resources{CPU: 4000, MemoryMB: 8192},
	}
}

// ntJob registers a one-group service job through Raft and returns it as
// stored, with the reschedule policy a registration gives a service group.
func ntJob(t *testing.T, ts *servertest.TestServer, id string, update *state.UpdateStrategy, config map[string]any) *state.Job {
	t.Helper()
	return ntJobRescheduled(t, ts, id, update, config, jobs.DefaultReschedulePolicy())
}

// ntJobRescheduled is ntJob with the group's reschedule policy.
func ntJobRescheduled(t *testing.T, ts *servertest.TestServer, id string, update *state.UpdateStrategy, config map[string]any, reschedule *state.ReschedulePolicy) *state.Job {
	t.Helper()
	job := &state.Job{
		Namespace: "default", ID: id, Name: id, Type: state.JobTypeService, Priority: 70,
		Datacenters: []string{"dc1"}, Update: update,
		TaskGroups: []*state.TaskGroup{{
			Name: "web", Count: 1,
			RestartPolicy:    &state.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: time.Second, Mode: "fail"},
			ReschedulePolicy: reschedule,
			Tasks: []*state.Task{{Name: "server", Driver: "mock_driver", Config: config,
				Resources: &state.Resources{CPU: 100, MemoryMB: 64}}},
		}},
	}
	if _, err := fsm.Apply(ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	_, stored, err := ts.Server.State().Job(nil, "default", id)
	if err != nil || stored == nil {
		t.Fatalf("job %s: %v %v", id, stored, err)
	}
	return stored
}

// ntPlace places n allocations of job on node through a plan; with a
// deployment when the job has an update strategy. It returns the
// allocations and the deployment ID ("" for none).
func ntPlace(t *testing.T, ts *servertest.TestServer, job *state.Job, nodeID, nodeName string, n int, now time.Time) ([]*state.Allocation, string) {
	t.Helper()
	plan := &state.Plan{EvalID: uuid.NewString(), Namespace: job.Namespace, JobID: job.ID, JobModifyIndex: job.JobModifyIndex, Now: now.UnixNano()}
	depID := ""
	if !job.Update.IsEmpty() {
		depID = uuid.NewString()
		plan.Deployment = &state.Deployment{
			ID: depID, Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
			JobModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
			TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: n}},
			Status:     state.DeploymentStatusRunning, StatusDescription: state.DeploymentStatusDescriptionRunning,
		}
	}
	for i := range n {
		plan.Placements = append(plan.Placements, &state.Allocation{
			ID: uuid.NewString(), Namespace: job.Namespace, EvalID: plan.EvalID,
			Name: job.ID + ".web[" + string(rune('0'+i)) + "]", NodeID: nodeID, NodeName: nodeName,
			JobID: job.ID, JobVersion: job.Version, TaskGroup: "web",
			Resources: state.Resources{CPU: 100, MemoryMB: 64}, DeploymentID: depID,
		})
	}
	res, err := fsm.Apply(ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused != "" {
		t.Fatalf("plan refused: %s", res.Refused)
	}
	return plan.Placements, depID
}

// ntAlloc reads an allocation from the state.
func ntAlloc(t *testing.T, ts *servertest.TestServer, id string) *state.Allocation {
	t.Helper()
	_, a, err := ts.Server.State().Alloc(nil, id)
	if err != nil || a == nil {
		t.Fatalf("alloc %s: %v %v", id, a, err)
	}
	return a
}

// ntEvals lists the job's evaluations triggered by trigger.
func ntEvals(t *testing.T, ts *servertest.TestServer, jobID, trigger string) []*state.Evaluation {
	t.Helper()
	_, evals, err := ts.Server.State().EvalsByJob(nil, "default", jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*state.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == trigger {
			out = append(out, e)
		}
	}
	return out
}

// ntNodeClient is a client presenting a node's secret, as a client agent does.
type ntNodeClient struct {
	*api.Client
	secret string
}

// ntRegister registers a new node with c (whose token introduces it) and
// returns a client that acts as that node.
func ntRegister(t *testing.T, c *api.Client, reg *api.NodeRegistration) *ntNodeClient {
	t.Helper()
	resp, err := c.RegisterNode(context.Background(), reg)
	if err != nil {
		t.Fatalf("register %s: %v", reg.Name, err)
	}
	if resp.SecretID == "" {
		t.Fatalf("register %s answered no secret: %+v", reg.Name, resp)
	}
	return &ntNodeClient{Client: c.AsNode(resp.SecretID), secret: resp.SecretID}
}
