package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// env is a real server with the node service behind an HTTP handler on
// 127.0.0.1, and one client running against it on a manual clock.
type env struct {
	ts     *servertest.TestServer
	api    *api.Client
	clock  *client.ManualClock
	client *client.Client
}

var start = time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)

// aclOf is the ACL service the composition root builds for ts's server:
// the API handler requires one.
func aclOf(ts *servertest.TestServer) *acl.Service {
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	return acl.NewService(deps, ts.Config.Datacenter, acl.AllowHTTPKeyURLs(ts.Config.Dev))
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ts := servertest.Start(t)
	clock := client.NewManualClock(start)
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: clock.Now, Logger: hclog.NewNullLogger()}
	svcNodes := nodes.New(deps, nodes.Config{HeartbeatTTL: time.Minute})
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts), Nodes: svcNodes}))
	t.Cleanup(hs.Close)
	ac, err := api.NewClient(api.Config{Address: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{
		Servers: []string{hs.URL}, NodeName: "sim-1", Clock: clock, TestDrivers: true,
		Resources: api.Resources{CPU: 4000, MemoryMB: 8192},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("client run: %v", err)
		}
	})
	select {
	case <-c.Registered():
	case err := <-done:
		t.Fatalf("client stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the client did not register")
	}
	return &env{ts: ts, api: ac, clock: clock, client: c}
}

// job registers a one-task service job through Raft, with the reschedule
// policy a registration gives a service group (Nomad's default).
func (e *env) job(t *testing.T, id string, update *state.UpdateStrategy, restart *state.RestartPolicy, config map[string]any) *state.Job {
	t.Helper()
	job := &state.Job{
		Namespace: "default", ID: id, Name: id, Type: state.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"}, Update: update,
		TaskGroups: []*state.TaskGroup{{Name: "web", Count: 1, RestartPolicy: restart,
			ReschedulePolicy: &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true},
			Tasks: []*state.Task{{Name: "server", Driver: "mock_driver", Config: config,
				Resources: &state.Resources{CPU: 100, MemoryMB: 64}}}}},
	}
	if _, err := fsm.Apply(e.ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	_, stored, _ := e.ts.Server.State().Job(nil, "default", id)
	return stored
}

// place puts one allocation of job on the client's node (with a deployment
// when the job has an update strategy) and returns its ID and the deployment's.
func (e *env) place(t *testing.T, job *state.Job) (string, string) {
	t.Helper()
	plan := &state.Plan{EvalID: uuid.NewString(), Namespace: "default", JobID: job.ID, JobModifyIndex: job.JobModifyIndex, Now: e.clock.Now().UnixNano()}
	depID := ""
	if !job.Update.IsEmpty() {
		depID = uuid.NewString()
		plan.Deployment = &state.Deployment{ID: depID, Namespace: "default", JobID: job.ID, JobVersion: job.Version,
			JobModifyIndex: job.JobModifyIndex, TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 1}},
			Status: state.DeploymentStatusRunning, StatusDescription: state.DeploymentStatusDescriptionRunning}
	}
	a := &state.Allocation{ID: uuid.NewString(), Namespace: "default", EvalID: plan.EvalID, Name: job.ID + ".web[0]",
		NodeID: e.client.NodeID(), NodeName: "sim-1", JobID: job.ID, JobVersion: job.Version, TaskGroup: "web",
		Resources: state.Resources{CPU: 100, MemoryMB: 64}, DeploymentID: depID}
	plan.Placements = []*state.Allocation{a}
	e.apply(t, plan)
	return a.ID, depID
}

func (e *env) stop(t *testing.T, job *state.Job, allocID string) {
	t.Helper()
	_, cur, _ := e.ts.Server.State().Job(nil, "default", job.ID)
	e.apply(t, &state.Plan{EvalID: uuid.NewString(), Namespace: "default", JobID: job.ID, JobModifyIndex: cur.JobModifyIndex,
		Now: e.clock.Now().UnixNano(), Stops: []*state.AllocStop{{AllocID: allocID, DesiredDescription: "alloc not needed"}}})
}

func (e *env) apply(t *testing.T, plan *state.Plan) {
	t.Helper()
	res, err := fsm.Apply(e.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan})
	if err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %+v", err, res)
	}
}

// waitAlloc follows the allocation with blocking queries until ok accepts it.
func (e *env) waitAlloc(t *testing.T, id, what string, ok func(*api.Allocation) bool) *api.Allocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var index uint64
	var last *api.Allocation
	for {
		a, meta, err := e.api.Allocation(ctx, id, &api.QueryOptions{WaitIndex: index})
		if err != nil {
			t.Fatalf("waiting for alloc %s: %v (last seen %s)", what, err, describe(last))
		}
		if ok(a) {
			return a
		}
		last, index = a, meta.LastIndex
	}
}

func describe(a *api.Allocation) string {
	if a == nil {
		return "nothing"
	}
	s := a.ClientStatus
	for name, ts := range a.TaskStates {
		s += fmt.Sprintf(" %s=%s failed=%v restarts=%d events=%v", name, ts.State, ts.Failed, ts.Restarts, eventTypes(ts))
	}
	return s
}

func eventTypes(ts *api.TaskState) []string {
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type)
	}
	return out
}

func task(a *api.Allocation) *api.TaskState {
	if a.TaskStates == nil {
		return &api.TaskState{}
	}
	if ts := a.TaskStates["server"]; ts != nil {
		return ts
	}
	return &api.TaskState{}
}

func sameTypes(got []string, want ...string) bool {
	return fmt.Sprint(got) == fmt.Sprint(want)
}
