// Package deploytest builds deployments the way they really arise, for
// tests: a real single-node server (servertest), jobs registered through
// fsm.JobRegister, a client node through fsm.NodeRegister, a scheduler-like
// plan through fsm.PlanApply that creates the deployment and its
// allocations, and client health reports through fsm.AllocClientUpdate.
// It also serves the HTTP API with the deployment service wired in, and
// has a fake clock.
package deploytest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// Clock is a fake clock: Now stands still until Advance moves it, and the
// channels of After and At fire when it passes their time.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock starts at a fixed time.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)} }

// Now is the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After fires once the clock has been advanced by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// At fires once the clock reaches t (at once if it has).
func (c *Clock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{t, ch})
	return ch
}

// Advance moves the clock on and fires what is due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// Fixture is a real single-node server (Raft, FSM, HTTP) serving the API
// with the deployment service, a registered client node, and a fake clock.
// It is the bare server, not the agent: no scheduler, watcher or node
// heartbeats run unless a test starts them, so that every write a test
// sees is one it made (servertest.Start runs the whole agent).
type Fixture struct {
	T      testing.TB
	Server *server.Server
	Clock  *Clock
	Deps   svc.Deps
	Node   *state.Node
	// URL is the HTTP API base, e.g. http://127.0.0.1:41234.
	URL string
}

// Start starts a fixture; opts are servertest's (e.g. servertest.ACL).
func Start(t testing.TB, opts ...servertest.Option) *Fixture {
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
	clock := NewClock()
	f := &Fixture{T: t, Server: srv, Clock: clock}
	f.Deps = svc.Deps{State: srv.State, Raft: srv, Now: clock.Now, Logger: cfg.Logger}
	// The ACL service as the composition root builds it (wall clock).
	aclSvc := acl.NewService(svc.Deps{State: srv.State, Raft: srv, Now: time.Now, Logger: cfg.Logger}, cfg.Datacenter, acl.AllowHTTPKeyURLs(cfg.Dev))
	h := ctlhttp.New(srv, cfg.Logger, ctlhttp.Services{ACL: aclSvc, Deployments: deployments.New(f.Deps)})
	if err := srv.Serve(h); err != nil {
		srv.Shutdown()
		t.Fatalf("serving HTTP: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	f.URL = "http://" + srv.HTTPAddr()
	f.waitForLeader()
	f.Node = &state.Node{
		ID: uuid.NewString(), Name: "client-1", Datacenter: "dc1",
		Drivers: map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Status:  state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible,
	}
	Apply(f, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: f.Node})
	return f
}

// waitForLeader waits until the server leads and has written its own
// record (its last start-up write).
func (f *Fixture) waitForLeader() {
	f.T.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, self, err := f.Server.State().Server(memdb.NewWatchSet(), f.Server.NodeID())
		if f.Server.CheckRead(false) == nil && err == nil && self != nil && self.HTTPAddr == f.Server.HTTPAddr() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.T.Fatalf("server at %s did not become a ready leader", f.URL)
}

// Apply commits a command through the server's Raft and fails the test on
// error.
func Apply[Req, Resp any](f *Fixture, c fsm.Command[Req, Resp], req *Req) Resp {
	f.T.Helper()
	resp, err := fsm.Apply(f.Server, c, req)
	if err != nil {
		f.T.Fatalf("%s: %v", c.Name, err)
	}
	return resp
}

// Group describes a task group of a test job.
type Group struct {
	Name             string
	Count            int
	Canary           int
	AutoRevert       bool
	AutoPromote      bool
	HealthCheck      string
	ProgressDeadline time.Duration
	// Reschedule is the group's reschedule policy; nil: a service job's
	// default (unlimited), as the jobs endpoint would set.
	Reschedule *state.ReschedulePolicy
}

// Job is a service job whose groups run the mock driver; meta tells
// versions apart (it is also in each task's environment, so that a new
// version replaces allocations instead of updating them in place).
func Job(ns, id, meta string, groups ...Group) *state.Job {
	j := &state.Job{
		Region: "global", Namespace: ns, ID: id, Name: id, Type: state.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"}, Meta: map[string]string{"v": meta},
	}
	for _, g := range groups {
		hc := g.HealthCheck
		if hc == "" {
			hc = state.UpdateHealthChecks
		}
		reschedule := g.Reschedule
		if reschedule == nil {
			reschedule = jobs.DefaultReschedulePolicy()
		}
		j.TaskGroups = append(j.TaskGroups, &state.TaskGroup{
			Name: g.Name, Count: g.Count, ReschedulePolicy: reschedule,
			Update: &state.UpdateStrategy{
				MaxParallel: 1, HealthCheck: hc, MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute,
				ProgressDeadline: g.ProgressDeadline, AutoRevert: g.AutoRevert, AutoPromote: g.AutoPromote, Canary: g.Canary,
			},
			Tasks: []*state.Task{{Name: "app", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"}, Env: map[string]string{"VERSION": meta}}},
		})
	}
	return j
}

// RegisterJob registers a job version (as the jobs endpoint would) and
// returns the stored latest version.
func (f *Fixture) RegisterJob(job *state.Job) *state.Job {
	f.T.Helper()
	// Jobs live in existing namespaces (Nomad's rule): make the job's first.
	if _, ns, err := f.Deps.State().NamespaceByName(nil, job.Namespace); err != nil {
		f.T.Fatal(err)
	} else if ns == nil {
		Apply(f, fsm.NamespaceUpsert, &fsm.NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: job.Namespace}}})
	}
	Apply(f, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job})
	_, stored, err := f.Deps.State().Job(nil, job.Namespace, job.ID)
	if err != nil || stored == nil {
		f.T.Fatalf("reading job %s back: %v", job.ID, err)
	}
	return stored
}

// SetStable marks a job version stable, as a successful deployment would.
func (f *Fixture) SetStable(job *state.Job, version uint64) {
	f.T.Helper()
	Apply(f, fsm.JobStable, &fsm.JobStableRequest{Namespace: job.Namespace, JobID: job.ID, Version: version, Stable: true})
}

// Deploy applies the plan a scheduler makes for the current version of
// job: a running deployment of every group, and its first allocations (the
// canaries of a canary group, else Count allocations). It returns the
// deployment and allocations as stored.
func (f *Fixture) Deploy(job *state.Job) (*state.Deployment, []*state.Allocation) {
	f.T.Helper()
	return f.DeployAs(job, uuid.NewString())
}

// DeployAs is Deploy with a chosen deployment ID.
func (f *Fixture) DeployAs(job *state.Job, id string) (*state.Deployment, []*state.Allocation) {
	f.T.Helper()
	return f.DeployEdited(job, id, nil)
}

// DeployEdited is DeployAs with edit (if not nil) applied to each
// allocation before the plan is applied, e.g. to give it the
// RescheduleTracker of the reschedules that led to it.
func (f *Fixture) DeployEdited(job *state.Job, id string, edit func(*state.Allocation)) (*state.Deployment, []*state.Allocation) {
	f.T.Helper()
	d := &state.Deployment{
		ID: id, Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.JobModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*state.DeploymentState{},
		Status:     state.DeploymentStatusRunning, StatusDescription: state.DeploymentStatusDescriptionRunning,
	}
	evalID := uuid.NewString()
	var placements []*state.Allocation
	canaries, auto := false, true
	for _, tg := range job.TaskGroups {
		u := tg.Update
		d.TaskGroups[tg.Name] = &state.DeploymentState{
			AutoRevert: u.AutoRevert, AutoPromote: u.AutoPromote, ProgressDeadline: u.ProgressDeadline,
			DesiredCanaries: u.Canary, DesiredTotal: tg.Count,
		}
		n := tg.Count
		if u.Canary > 0 {
			n = u.Canary
			canaries = true
			auto = auto && u.AutoPromote
		}
		for i := range n {
			a := &state.Allocation{
				ID: uuid.NewString(), Namespace: job.Namespace, EvalID: evalID,
				Name: fmt.Sprintf("%s.%s[%d]", job.ID, tg.Name, i), NodeID: f.Node.ID, NodeName: f.Node.Name,
				JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name, DeploymentID: d.ID,
			}
			if u.Canary > 0 {
				a.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
			}
			if edit != nil {
				edit(a)
			}
			placements = append(placements, a)
		}
	}
	if canaries {
		d.StatusDescription = state.DeploymentStatusDescriptionRunningNeedsPromotion
		if auto {
			d.StatusDescription = state.DeploymentStatusDescriptionRunningAutoPromotion
		}
	}
	res := Apply(f, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: &state.Plan{
		EvalID: evalID, Namespace: job.Namespace, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Placements: placements, Deployment: d, Now: f.Clock.Now().UnixNano(),
	}})
	if res.Refused != "" {
		f.T.Fatalf("plan refused: %s", res.Refused)
	}
	_, allocs, err := f.Deps.State().AllocsByDeployment(nil, d.ID)
	if err != nil {
		f.T.Fatal(err)
	}
	return f.Deployment(d.ID), allocs
}

// Health reports allocations running and healthy (or unhealthy) from the
// client, as its health watcher would, and returns the entry's index.
func (f *Fixture) Health(healthy bool, allocIDs ...string) uint64 {
	f.T.Helper()
	var ups []*state.AllocClientUpdate
	for _, id := range allocIDs {
		h := healthy
		ups = append(ups, &state.AllocClientUpdate{
			ID: id, ClientStatus: state.AllocClientStatusRunning,
			TaskStates: map[string]*state.TaskState{"app": {
				State: state.TaskStateRunning, StartedAt: f.Clock.Now(),
				Events: []*state.TaskEvent{{Type: state.TaskReceived, Time: f.Clock.Now().UnixNano()}, {Type: state.TaskStarted, Time: f.Clock.Now().UnixNano()}},
			}},
			DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &h, Timestamp: f.Clock.Now()},
		})
	}
	Apply(f, fsm.AllocClientUpdate, &fsm.AllocClientUpdateRequest{NodeID: f.Node.ID, Updates: ups, Now: f.Clock.Now().UnixNano()})
	return f.Deps.State().TableIndex("allocs")
}

// Deployment reads a deployment back.
func (f *Fixture) Deployment(id string) *state.Deployment {
	f.T.Helper()
	_, d, err := f.Deps.State().Deployment(nil, id)
	if err != nil || d == nil {
		f.T.Fatalf("reading deployment %s: %v", id, err)
	}
	return d
}

// Response is a finished HTTP exchange with the fixture's API.
type Response = servertest.Response

// Do sends a request to the API with the deployment service; headers are
// name, value pairs.
func (f *Fixture) Do(method, path, body string, headers ...string) *Response {
	f.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.URL+path, rd)
	if err != nil {
		f.T.Fatalf("building request: %v", err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		f.T.Fatalf("reading response: %v", err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: string(buf)}
}
