package http_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
)

// cliNode registers a ready client node through Raft and returns its ID.
func cliNode(t *testing.T, ts *servertest.TestServer, name string) string {
	t.Helper()
	id := uuid.NewString()
	node := &state.Node{ID: id, Name: name, Datacenter: "dc1", Status: state.NodeStatusReady,
		SchedulingEligibility: state.NodeSchedulingEligible,
		Drivers:               map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Resources:             state.Resources{CPU: 4000, MemoryMB: 8192}}
	if _, err := fsm.Apply(ts.Server, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: node}); err != nil {
		t.Fatal(err)
	}
	return id
}

// cliReport reports one allocation's client status through Raft.
func cliReport(t *testing.T, ts *servertest.TestServer, nodeID, allocID, status string) {
	t.Helper()
	u := &state.AllocClientUpdate{ID: allocID, ClientStatus: status}
	if _, err := fsm.Apply(ts.Server, fsm.AllocClientUpdate, &fsm.AllocClientUpdateRequest{NodeID: nodeID, Updates: []*state.AllocClientUpdate{u}, Now: time.Now().UnixNano()}); err != nil {
		t.Fatal(err)
	}
}

// TestJobSummaryNomadClient: the summary Nomad's `job status` prints, read
// with Jobs().Summary and in Jobs().List's stubs, follows the allocations
// from pending to running to failed, takes Queued from the evaluation,
// blocks until it changes, and goes with the job when it is purged.
func TestJobSummaryNomadClient(t *testing.T) {
	ts := startJobs(t)
	c := nomadClient(t, ts, "")
	job := nomadJob("web", 2)
	job.Update = nil
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, qm, err := c.Jobs().Summary("web", nil)
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	if sum.JobID != "web" || sum.Namespace != "default" || sum.Children == nil || len(sum.Summary) != 1 ||
		sum.Summary["web"] != (api.TaskGroupSummary{}) || sum.CreateIndex != reg.JobModifyIndex || qm.LastIndex != reg.JobModifyIndex {
		t.Fatalf("Summary after register: %+v, %+v", sum, qm)
	}
	list, _, err := c.Jobs().List(nil)
	if err != nil || len(list) != 1 || list[0].JobSummary == nil || list[0].JobSummary.Summary["web"] != (api.TaskGroupSummary{}) {
		t.Fatalf("List: %v %+v", err, list)
	}

	nodeID := cliNode(t, ts, "n1")
	_, stored, err := ts.Server.State().Job(nil, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	// A blocked read wakes on the placement.
	type result struct {
		sum *api.JobSummary
		qm  *api.QueryMeta
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, m, err := c.Jobs().Summary("web", &api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 10 * time.Second})
		done <- result{s, m, err}
	}()
	time.Sleep(50 * time.Millisecond)
	allocs, _ := ntPlace(t, ts, stored, nodeID, "n1", 2, time.Now())
	res := <-done
	if res.err != nil || res.sum.Summary["web"] != (api.TaskGroupSummary{Starting: 2}) || res.qm.LastIndex <= qm.LastIndex {
		t.Fatalf("blocked Summary after placement: %v %+v %+v", res.err, res.sum, res.qm)
	}

	want := func(step string, tg api.TaskGroupSummary) {
		t.Helper()
		sum, _, err := c.Jobs().Summary("web", nil)
		if err != nil || sum.Summary["web"] != tg {
			t.Fatalf("%s: %v %+v, want %+v", step, err, sum, tg)
		}
		list, _, err := c.Jobs().List(nil)
		if err != nil || list[0].JobSummary.Summary["web"] != tg {
			t.Fatalf("%s: stub %v %+v, want %+v", step, err, list[0].JobSummary, tg)
		}
	}
	cliReport(t, ts, nodeID, allocs[0].ID, state.AllocClientStatusRunning)
	want("alloc 0 running", api.TaskGroupSummary{Starting: 1, Running: 1})
	cliReport(t, ts, nodeID, allocs[1].ID, state.AllocClientStatusRunning)
	want("both running", api.TaskGroupSummary{Running: 2})
	cliReport(t, ts, nodeID, allocs[0].ID, state.AllocClientStatusFailed)
	want("alloc 0 failed", api.TaskGroupSummary{Running: 1, Failed: 1})

	// An evaluation that could not place one sets Queued; a placement takes it.
	eval := &state.Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Type: "service", Priority: 50,
		TriggeredBy: state.EvalTriggerRetryFailedAlloc, Status: state.EvalStatusComplete, QueuedAllocations: map[string]int{"web": 1}}
	if _, err := fsm.Apply(ts.Server, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: []*state.Evaluation{eval}}); err != nil {
		t.Fatal(err)
	}
	want("queued", api.TaskGroupSummary{Queued: 1, Running: 1, Failed: 1})
	ntPlace(t, ts, stored, nodeID, "n1", 1, time.Now())
	want("replacement placed", api.TaskGroupSummary{Starting: 1, Running: 1, Failed: 1})

	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Summary("web", nil); err == nil || !strings.Contains(err.Error(), "404 (job not found)") {
		t.Fatalf("Summary after purge: %v", err)
	}
	// Registered again, the job starts from zero: the old allocations are
	// not its own.
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	want("registered again", api.TaskGroupSummary{})
	cliReport(t, ts, nodeID, allocs[1].ID, state.AllocClientStatusComplete)
	want("old allocation completes", api.TaskGroupSummary{})
}

// mkNamespace creates a Nomad namespace through the API (jobs can only be
// registered in an existing one).
func mkNamespace(t *testing.T, ts *servertest.TestServer, name string, headers ...string) {
	t.Helper()
	resp := ts.Do(t, "PUT", "/v1/namespace/"+name, `{"Name":"`+name+`"}`, headers...)
	if resp.Status != 200 {
		t.Fatalf("creating namespace %s: %s", name, resp)
	}
}
