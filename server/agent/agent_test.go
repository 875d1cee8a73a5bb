package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// registerJob writes a job with its pending evaluation through Raft, as the
// jobs endpoint does.
func registerJob(t *testing.T, ts *servertest.TestServer, job *state.Job) {
	t.Helper()
	eval := &state.Evaluation{
		ID: uuid.NewString(), Namespace: job.Namespace, Priority: job.Priority, Type: state.JobTypeService,
		TriggeredBy: state.EvalTriggerJobRegister, JobID: job.ID, Status: state.EvalStatusPending,
		CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(),
	}
	if _, err := fsm.Apply(ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job, Eval: eval}); err != nil {
		t.Fatalf("register %s: %v", job.ID, err)
	}
}

func webJob(count, maxParallel int) *state.Job {
	return &state.Job{
		ID: "web", Name: "web", Namespace: "default", Type: state.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{
			Name: "web", Count: count,
			Update: &state.UpdateStrategy{MaxParallel: maxParallel, HealthCheck: state.UpdateHealthTaskStates,
				MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute},
			Tasks: []*state.Task{{Name: "app", Driver: "mock_driver", Resources: &state.Resources{CPU: 100, MemoryMB: 64}}},
		}},
	}
}

// waitState blocks (on memdb watch sets, bounded by a deadline) until cond
// says "" about the state.
func waitState(t *testing.T, ts *servertest.TestServer, what string, cond func(ws memdb.WatchSet, s *state.Store) string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ws := memdb.NewWatchSet()
		s := ts.State()
		ws.Add(s.AbandonCh())
		if last = cond(ws, s); last == "" {
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		ws.WatchCtx(ctx)
		cancel()
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}

// driveRollout plays the client of every allocation of the job's latest
// version: it reports each new allocation running and healthy, batch by
// batch, until the deployment of version ends, and checks that at most
// maxParallel replacements are in flight at once.
func driveRollout(t *testing.T, ts *servertest.TestServer, c *api.Client, nodeID string, version uint64, maxParallel int, healthy map[string]bool) *state.Deployment {
	t.Helper()
	for round := 0; ; round++ {
		if round > 20 {
			t.Fatal("deployment did not finish in 20 batches")
		}
		var fresh []string
		var dep *state.Deployment
		waitState(t, ts, "a batch or the end", func(ws memdb.WatchSet, s *state.Store) string {
			_, d, err := s.LatestDeploymentByJob(ws, "default", "web")
			if err != nil || d == nil || d.JobVersion != version {
				return fmt.Sprintf("no deployment of version %d yet (%v)", version, err)
			}
			dep = d
			if !d.Active() {
				return ""
			}
			_, allocs, _ := s.AllocsByJob(ws, "default", "web")
			fresh = nil
			for _, a := range allocs {
				if !a.TerminalStatus() && !healthy[a.ID] {
					fresh = append(fresh, a.ID)
				}
			}
			if version > 0 && len(fresh) > maxParallel {
				t.Errorf("%d replacements in flight at once, MaxParallel is %d", len(fresh), maxParallel)
			}
			if len(fresh) == 0 {
				return fmt.Sprintf("deployment %s %q, no new allocation", d.Status, d.StatusDescription)
			}
			return ""
		})
		if !dep.Active() {
			return dep
		}
		var updates []*api.AllocClientUpdate
		for _, id := range fresh {
			yes := true
			updates = append(updates, &api.AllocClientUpdate{ID: id, ClientStatus: state.AllocClientStatusRunning,
				DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &yes, Timestamp: time.Now().UTC()}})
			healthy[id] = true
		}
		if _, err := c.UpdateAllocations(context.Background(), nodeID, updates); err != nil {
			t.Fatalf("report health: %v", err)
		}
	}
}

// A job registered through Raft is scheduled by the leader's broker onto a
// node registered through the client protocol: the first version is placed
// at once, a changed version rolls out one allocation at a time
// (MaxParallel 1) as the node reports health, each deployment ends
// successful and its job version stable.
func TestBrokerSchedulerWatcherRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := servertest.Start(t)
	c, err := api.NewClient(api.Config{Address: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterNode(context.Background(), &api.NodeRegistration{
		ID: uuid.NewString(), Name: "n1", Datacenter: "dc1",
		Drivers:   map[string]*api.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Resources: api.Resources{CPU: 4000, MemoryMB: 4096},
	})
	if err != nil {
		t.Fatalf("register node: %v", err)
	}
	c = c.AsNode(reg.SecretID) // the node's own calls present its secret
	healthy := map[string]bool{}
	registerJob(t, ts, webJob(3, 1))
	if d := driveRollout(t, ts, c, reg.NodeID, 0, 1, healthy); d.Status != state.DeploymentStatusSuccessful {
		t.Fatalf("version 0 ended %s %q", d.Status, d.StatusDescription)
	}
	v1 := webJob(3, 1)
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "1"}
	registerJob(t, ts, v1)
	d := driveRollout(t, ts, c, reg.NodeID, 1, 1, healthy)
	if d.Status != state.DeploymentStatusSuccessful || d.StatusDescription != state.DeploymentStatusDescriptionSuccessful {
		t.Fatalf("version 1 ended %s %q", d.Status, d.StatusDescription)
	}
	if g := d.TaskGroups["web"]; g.DesiredTotal != 3 || g.PlacedAllocs != 3 || g.HealthyAllocs != 3 {
		t.Errorf("version 1 deployment at the end: %+v", g)
	}
	if len(healthy) != 6 {
		t.Errorf("%d allocations placed, want 3 per version", len(healthy))
	}
	waitState(t, ts, "the evaluations to finish", func(ws memdb.WatchSet, s *state.Store) string {
		_, evs, _ := s.EvalsByJob(ws, "default", "web")
		for _, e := range evs {
			if !e.Terminal() {
				return fmt.Sprintf("eval %s is %s", e.ID, e.Status)
			}
		}
		_, allocs, _ := s.AllocsByJob(ws, "default", "web")
		live := 0
		for _, a := range allocs {
			if !a.TerminalStatus() {
				live++
				if a.JobVersion != 1 {
					return fmt.Sprintf("alloc %s of version %d still live", a.Name, a.JobVersion)
				}
			}
		}
		if live != 3 {
			return fmt.Sprintf("%d live allocations", live)
		}
		return ""
	})
	_, job, _ := ts.State().Job(memdb.NewWatchSet(), "default", "web")
	if !job.Stable || job.Version != 1 || job.Status != state.JobStatusRunning {
		t.Errorf("job after success: version %d stable=%v status=%s", job.Version, job.Stable, job.Status)
	}
	if st := ts.Broker.Stats(); st.PlansApplied < 5 || st.Failed != 0 {
		t.Errorf("broker stats %+v", st)
	}
}
