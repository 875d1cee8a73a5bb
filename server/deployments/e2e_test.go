package deployments_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// e2e is the whole agent (eval broker, scheduler, deployment watcher) with
// one client node whose reports the test makes.
type e2e struct {
	t    *testing.T
	ts   *servertest.TestServer
	node *state.Node
	// reported: allocations (and deployment) the client has reported on.
	reported map[string]bool
}

func startE2E(t *testing.T) *e2e {
	ts := servertest.Start(t, func(c *server.Config) { c.HeartbeatTTL = time.Hour })
	e := &e2e{t: t, ts: ts, reported: map[string]bool{}}
	e.node = &state.Node{
		ID: uuid.NewString(), Name: "client-1", Datacenter: "dc1",
		Drivers: map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Status:  state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible, StatusUpdatedAt: time.Now().UnixNano(),
	}
	e.apply(fsm.NodeRegister.Name, func() error {
		_, err := fsm.Apply(ts.Server, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: e.node})
		return err
	})
	return e
}

func (e *e2e) apply(what string, fn func() error) {
	e.t.Helper()
	if err := fn(); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// register registers a job version with its job-register evaluation, as the jobs endpoint does.
func (e *e2e) register(job *state.Job) {
	e.t.Helper()
	now := time.Now().UnixNano()
	e.apply(fsm.JobRegister.Name, func() error {
		_, err := fsm.Apply(e.ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job, Eval: &state.Evaluation{
			ID: uuid.NewString(), Namespace: job.Namespace, Priority: 50, Type: "service", TriggeredBy: state.EvalTriggerJobRegister,
			JobID: job.ID, Status: state.EvalStatusPending, CreateTime: now, ModifyTime: now,
		}})
		return err
	})
}

// runUntil plays the client (each new live allocation of the job starts
// and reports health: healthy unless unhealthy says otherwise) until done
// holds for the job's latest deployment.
func (e *e2e) runUntil(jobID string, unhealthy func(a *state.Allocation) bool, done func(d *state.Deployment) bool) *state.Deployment {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		st := e.ts.State()
		ws := memdb.NewWatchSet()
		_, d, _ := st.LatestDeploymentByJob(ws, "default", jobID)
		_, allocs, _ := st.AllocsByJob(ws, "default", jobID)
		if d != nil && done(d) {
			return d
		}
		var ups []*state.AllocClientUpdate
		for _, a := range allocs {
			// An allocation updated in place joins the new deployment and
			// reports its health again.
			key := a.ID + "/" + a.DeploymentID
			if e.reported[key] || a.TerminalStatus() {
				continue
			}
			e.reported[key] = true
			h := unhealthy == nil || !unhealthy(a)
			ups = append(ups, &state.AllocClientUpdate{ID: a.ID, ClientStatus: state.AllocClientStatusRunning,
				DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &h, Timestamp: time.Now()}})
		}
		if len(ups) > 0 {
			e.apply(fsm.AllocClientUpdate.Name, func() error {
				_, err := fsm.Apply(e.ts.Server, fsm.AllocClientUpdate, &fsm.AllocClientUpdateRequest{NodeID: e.node.ID, Updates: ups, Now: time.Now().UnixNano()})
				return err
			})
			continue
		}
		if ws.WatchCtx(ctx) != nil {
			e.t.Fatalf("timed out; latest deployment %+v, %d allocations", d, len(allocs))
		}
	}
}

func watcherEvalCount(s *state.Store, jobID string) int {
	_, evals, _ := s.EvalsByJob(nil, "default", jobID)
	n := 0
	for _, e := range evals {
		if e.TriggeredBy == state.EvalTriggerDeploymentWatcher {
			n++
		}
	}
	return n
}

// A job's deployment goes from its first placement to successful as the
// client reports health, each report answered by a watcher evaluation that
// lets the scheduler place the next batch. Then a new version with
// AutoRevert whose allocation turns unhealthy is failed by the watcher and
// rolled back to the stable version, which the scheduler deploys again.
func TestDeploymentEndToEnd(t *testing.T) {
	e := startE2E(t)
	// No progress deadline: the first unhealthy allocation fails the
	// deployment (with one, it would be rescheduled until the deadline).
	g := deploytest.Group{Name: "web", Count: 3, AutoRevert: true}
	e.register(deploytest.Job("default", "web", "v0", g))
	d0 := e.runUntil("web", nil, func(d *state.Deployment) bool { return d.Status == state.DeploymentStatusSuccessful })
	if grp := d0.TaskGroups["web"]; grp.HealthyAllocs != 3 || grp.PlacedAllocs != 3 || d0.StatusDescription != state.DeploymentStatusDescriptionSuccessful {
		t.Errorf("successful deployment: %q %+v", d0.StatusDescription, grp)
	}
	if watcherEvalCount(e.ts.State(), "web") == 0 {
		t.Error("the deployment finished without a deployment-watcher evaluation")
	}
	if _, v, _ := e.ts.State().JobVersion(nil, "default", "web", 0); !v.Stable {
		t.Error("job version 0 not stable after its successful deployment")
	}

	e.register(deploytest.Job("default", "web", "v1", g))
	// The rollback may already have its own deployment when the loop looks:
	// wait until version 1's deployment is over, then read that one.
	e.runUntil("web",
		func(a *state.Allocation) bool { return a.JobVersion == 1 },
		func(d *state.Deployment) bool { return d.JobVersion > 1 || (d.JobVersion == 1 && !d.Active()) })
	var d1 *state.Deployment
	_, all, _ := e.ts.State().DeploymentsByJob(nil, "default", "web")
	for _, d := range all {
		if d.JobVersion == 1 {
			d1 = d
		}
	}
	if d1.Status != state.DeploymentStatusFailed || d1.StatusDescription != "Failed due to unhealthy allocations - rolling back to job version 0" {
		t.Fatalf("version 1 deployment: %s %q", d1.Status, d1.StatusDescription)
	}
	_, events, _ := e.ts.State().DeploymentHistory(nil, d1.ID)
	if last := events[len(events)-1]; last.Cause.Kind != "watcher" || last.Cause.Rule != "unhealthy-allocations" {
		t.Errorf("history of the failure: %+v", last.Cause)
	}
	// The rollback is version 2 with version 0's spec, deployed in turn.
	d2 := e.runUntil("web", nil, func(d *state.Deployment) bool {
		return d.JobVersion == 2 && d.Status == state.DeploymentStatusSuccessful
	})
	_, job, _ := e.ts.State().Job(nil, "default", "web")
	if job.Version != 2 || job.Meta["v"] != "v0" || d2.JobVersion != 2 {
		t.Errorf("after the rollback: job version %d meta %v", job.Version, job.Meta)
	}

	// The agent serves the deployment endpoints with the service wired in.
	resp := e.ts.Do(t, "GET", "/v1/deployments", "")
	if resp.Status != 200 || strings.Count(resp.Body, `"JobID":"web"`) != 3 {
		t.Errorf("list through the agent: %s", resp)
	}
	resp = e.ts.Do(t, "PUT", "/v1/deployment/fail/"+d2.ID, "")
	if resp.Status != 409 || resp.Body != "can't fail terminal deployment" {
		t.Errorf("fail of a finished deployment through the agent: %s", resp)
	}
}
