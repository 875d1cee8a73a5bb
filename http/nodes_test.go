package http_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// ntWaitNode blocks (with blocking queries, not polling) until the node's status is want.
func ntWaitNode(t *testing.T, c *api.Client, id, want string) *api.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var index uint64
	for {
		n, meta, err := c.Node(ctx, id, &api.QueryOptions{WaitIndex: index})
		if err != nil {
			t.Fatalf("waiting for node %s to be %s: %v", id, want, err)
		}
		if n.Status == want {
			return n
		}
		index = meta.LastIndex
	}
}

func TestNodeRegisterHeartbeatAndTTLExpiry(t *testing.T) {
	env := ntStart(t, 300*time.Millisecond)
	env.runHeartbeats(t)
	c := env.client(t, "")
	ctx := context.Background()

	reg := ntNode("node-a")
	reg.Meta = map[string]string{"rack": "r1"}
	resp, err := c.RegisterNode(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if resp.NodeID != reg.ID || resp.HeartbeatTTL != 300*time.Millisecond || resp.Index == 0 || len(resp.SecretID) != 36 {
		t.Fatalf("register answered %+v", resp)
	}
	nc := c.AsNode(resp.SecretID)
	// Reads never answer the secret.
	for _, path := range []string{"/v1/node/" + reg.ID, "/v1/nodes"} {
		if body := env.srv.Do(t, "GET", path, "").Body; strings.Contains(body, resp.SecretID) || !strings.Contains(body, reg.ID) {
			t.Errorf("GET %s: %s", path, body)
		}
	}
	n, meta, err := c.Node(ctx, reg.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.Status != state.NodeStatusReady || n.SchedulingEligibility != state.NodeSchedulingEligible ||
		n.StatusUpdatedAt != env.clock.Now().UnixNano() || n.Meta["rack"] != "r1" || n.CreateIndex != resp.Index {
		t.Fatalf("registered node: %+v", n)
	}
	if meta.LastIndex != resp.Index {
		t.Errorf("read index %d, register index %d", meta.LastIndex, resp.Index)
	}

	// Re-registering by name alone finds the same node, keeping its
	// CreateIndex: with the node's secret, which is not answered again.
	again := ntNode("node-a")
	again.ID = ""
	// ACLs are off here: without the secret it is still refused.
	_, err = c.RegisterNode(ctx, again)
	var denied *api.Error
	if !errors.As(err, &denied) || denied.StatusCode != 403 || denied.Message != "Permission denied: node secret ID does not match" {
		t.Fatalf("re-register by name without the secret, ACLs off: %v", err)
	}
	resp2, err := c.WithNodeSecret(resp.SecretID).RegisterNode(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if resp2.NodeID != reg.ID || resp2.SecretID != "" {
		t.Fatalf("re-register by name got %+v, want ID %s and no secret", resp2, reg.ID)
	}
	n2, _, _ := c.Node(ctx, reg.ID, nil)
	if n2.CreateIndex != n.CreateIndex || n2.ModifyIndex <= n.ModifyIndex {
		t.Errorf("re-register indexes: create %d→%d modify %d→%d", n.CreateIndex, n2.CreateIndex, n.ModifyIndex, n2.ModifyIndex)
	}

	// A live allocation on the node is lost when the node misses its TTL:
	// the scheduler decides it from the node-update evaluation.
	job := ntJob(t, env.ts, "web", nil, nil)
	allocs, _ := ntPlace(t, env.ts, job, reg.ID, reg.Name, 1, env.clock.Now())
	env.clock.Advance(time.Minute)
	down := ntWaitNode(t, c, reg.ID, state.NodeStatusDown)
	if down.StatusDescription != "Node heartbeat missed" || down.StatusUpdatedAt != env.clock.Now().UnixNano() {
		t.Errorf("down node: %+v", down)
	}
	a := ntAlloc(t, env.ts, allocs[0].ID)
	for deadline := time.Now().Add(10 * time.Second); a.ClientStatus != state.AllocClientStatusLost && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		a = ntAlloc(t, env.ts, allocs[0].ID)
	}
	if a.ClientStatus != state.AllocClientStatusLost || a.DesiredStatus != state.AllocDesiredStatusStop {
		t.Errorf("alloc after node down: client %s desired %s", a.ClientStatus, a.DesiredStatus)
	}
	evals := ntEvals(t, env.ts, "web", state.EvalTriggerNodeUpdate)
	if len(evals) != 1 {
		t.Fatalf("node-update evals: %d", len(evals))
	}
	ev := evals[0]
	// The scheduler may have processed it already.
	if ev.Status == state.EvalStatusFailed || ev.Priority != 70 || ev.Type != state.JobTypeService ||
		ev.NodeID != reg.ID || ev.CreateIndex != down.ModifyIndex || a.ModifyIndex < ev.CreateIndex {
		t.Errorf("node-update eval %+v (node modify %d, alloc modify %d)", ev, down.ModifyIndex, a.ModifyIndex)
	}

	// A heartbeat brings it back.
	hb, err := nc.Heartbeat(ctx, reg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if hb.HeartbeatTTL != 300*time.Millisecond {
		t.Errorf("heartbeat TTL %v", hb.HeartbeatTTL)
	}
	if n, _, _ := c.Node(ctx, reg.ID, nil); n.Status != state.NodeStatusReady {
		t.Errorf("after heartbeat: %s", n.Status)
	}
	if env.svc.TrackedNodes() != 1 {
		t.Errorf("tracked nodes %d, want 1", env.svc.TrackedNodes())
	}

	// Unknown nodes are not found; malformed IDs are refused.
	_, err = nc.Heartbeat(ctx, uuid.NewString())
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.HasPrefix(apiErr.Message, "node ") {
		t.Errorf("heartbeat of unknown node: %v", err)
	}
	expectError(t, env.srv.Do(t, "PUT", "/v1/client/heartbeat/abc", ""), 400, `Invalid node ID "abc": a 36-character UUID is required`)
	expectError(t, env.srv.Do(t, "GET", "/v1/node/"+otherID, ""), 404, "node not found")
	expectError(t, env.srv.Do(t, "GET", "/v1/client/allocations/"+otherID, ""), 404, "node "+otherID+" not found")
}

func TestNodeAllocUpdatesHealthAndFailures(t *testing.T) {
	env := ntStart(t, time.Minute)
	c := env.client(t, "")
	ctx := context.Background()
	reg := ntNode("node-b")
	nc := ntRegister(t, c, reg)
	update := &state.UpdateStrategy{MaxParallel: 2, HealthCheck: state.UpdateHealthTaskStates, MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
	job := ntJob(t, env.ts, "api", update, map[string]any{"run_for": "1h"})
	allocs, depID := ntPlace(t, env.ts, job, reg.ID, reg.Name, 2, env.clock.Now())

	// The client sees its allocations with the group (and the job's update strategy).
	cas, meta, err := nc.NodeAllocations(ctx, reg.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cas) != 2 || cas[0].TaskGroup == nil || cas[0].TaskGroup.Name != "web" || cas[0].TaskGroup.Update == nil ||
		cas[0].TaskGroup.Update.MinHealthyTime != time.Second || cas[0].TaskGroup.Tasks[0].Config["run_for"] != "1h" {
		t.Fatalf("client allocs: %+v", cas)
	}
	expectHeader(t, &servertest.Response{Header: env.srv.Do(t, "GET", "/v1/client/allocations/"+reg.ID, "", api.NodeSecretHeader, nc.secret).Header}, "X-Service-Index", fmt.Sprint(meta.LastIndex))

	healthy := true
	ts := env.clock.Now().Add(5 * time.Second)
	running := map[string]*api.TaskState{"server": {State: api.TaskStateRunning, StartedAt: env.clock.Now(),
		Events: []*api.TaskEvent{{Type: api.TaskReceived}, {Type: api.TaskSetup}, {Type: api.TaskStarted}}}}
	_, err = nc.UpdateAllocations(ctx, reg.ID, []*api.AllocClientUpdate{
		{ID: allocs[0].ID, ClientStatus: state.AllocClientStatusRunning, TaskStates: running,
			DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &healthy, Timestamp: ts}},
		{ID: allocs[1].ID, ClientStatus: state.AllocClientStatusRunning, TaskStates: running},
		// Unknown allocations are dropped.
		{ID: uuid.NewString(), ClientStatus: state.AllocClientStatusRunning},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, d, _ := env.ts.Server.State().Deployment(nil, depID)
	if g := d.TaskGroups["web"]; g.HealthyAllocs != 1 || g.UnhealthyAllocs != 0 {
		t.Fatalf("deployment counters after healthy: %+v", g)
	}
	a0 := ntAlloc(t, env.ts, allocs[0].ID)
	if !a0.DeploymentStatus.IsHealthy() || !a0.DeploymentStatus.Timestamp.Equal(ts) || a0.TaskStates["server"].State != state.TaskStateRunning {
		t.Errorf("alloc 0 after update: %+v", a0)
	}
	if len(ntEvals(t, env.ts, "api", state.EvalTriggerRetryFailedAlloc)) != 0 {
		t.Fatal("running allocations must not cause evaluations")
	}

	// One failing: unhealthy, and an alloc-failure evaluation in the same entry.
	unhealthy := false
	dead := map[string]*api.TaskState{"server": {State: api.TaskStateDead, Failed: true, FinishedAt: env.clock.Now()}}
	res, err := nc.UpdateAllocations(ctx, reg.ID, []*api.AllocClientUpdate{
		{ID: allocs[1].ID, ClientStatus: state.AllocClientStatusFailed, TaskStates: dead,
			DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &unhealthy, Timestamp: ts}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, d, _ = env.ts.Server.State().Deployment(nil, depID)
	if g := d.TaskGroups["web"]; g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 {
		t.Fatalf("deployment counters after unhealthy: %+v", g)
	}
	evals := ntEvals(t, env.ts, "api", state.EvalTriggerRetryFailedAlloc)
	a1 := ntAlloc(t, env.ts, allocs[1].ID)
	if len(evals) != 1 || evals[0].Priority != 70 || evals[0].Type != state.JobTypeService ||
		evals[0].CreateIndex != res.Index || a1.ModifyIndex < res.Index || a1.ClientStatus != state.AllocClientStatusFailed {
		t.Fatalf("alloc-failure evals %+v (alloc modify %d, answered %d)", evals, a1.ModifyIndex, res.Index)
	}
	// What ended on the client is no longer sent to it.
	cas, _, err = nc.NodeAllocations(ctx, reg.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ca := range cas {
		if ca.Allocation.ID == allocs[1].ID {
			t.Errorf("the failed allocation is still listed for the client")
		}
	}
	// Reporting the same failure again is not a new failure.
	if _, err := nc.UpdateAllocations(ctx, reg.ID, []*api.AllocClientUpdate{{ID: allocs[1].ID, ClientStatus: state.AllocClientStatusFailed, TaskStates: dead}}); err != nil {
		t.Fatal(err)
	}
	if n := len(ntEvals(t, env.ts, "api", state.EvalTriggerRetryFailedAlloc)); n != 1 {
		t.Errorf("a repeated failure made %d evals", n)
	}

	// Another node's report about our allocation is refused, whole.
	other := ntNode("node-c")
	oc := ntRegister(t, c, other)
	_, err = oc.UpdateAllocations(ctx, other.ID, []*api.AllocClientUpdate{{ID: allocs[0].ID, ClientStatus: state.AllocClientStatusComplete}})
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 ||
		apiErr.Message != "Permission denied: allocation "+allocs[0].ID+" is not placed on node "+other.ID+"; the report was refused as a whole" {
		t.Fatalf("another node's report: %v", err)
	}
	if a := ntAlloc(t, env.ts, allocs[0].ID); a.ClientStatus != state.AllocClientStatusRunning {
		t.Errorf("another node changed the alloc to %s", a.ClientStatus)
	}
}

func TestNodeClientAllocationsBlocks(t *testing.T) {
	env := ntStart(t, time.Minute)
	c := env.client(t, "")
	ctx := context.Background()
	reg := ntNode("node-d")
	nc := ntRegister(t, c, reg)
	_, meta, err := nc.NodeAllocations(ctx, reg.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		allocs []*api.ClientAlloc
		meta   *api.QueryMeta
		err    error
	}
	done := make(chan result, 1)
	go func() {
		allocs, m, err := nc.NodeAllocations(ctx, reg.ID, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		done <- result{allocs, m, err}
	}()
	// Nothing changed: no answer yet.
	select {
	case r := <-done:
		t.Fatalf("the read did not block: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	job := ntJob(t, env.ts, "blocker", nil, nil)
	allocs, _ := ntPlace(t, env.ts, job, reg.ID, reg.Name, 1, env.clock.Now())
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.allocs) != 1 || r.allocs[0].Allocation.ID != allocs[0].ID || r.meta.LastIndex <= meta.LastIndex {
		t.Fatalf("blocked read answered %+v at %d (was %d)", r.allocs, r.meta.LastIndex, meta.LastIndex)
	}
	// A wait that runs out answers with the current data.
	again, m2, err := nc.NodeAllocations(ctx, reg.ID, &api.QueryOptions{WaitIndex: r.meta.LastIndex, WaitTime: 10 * time.Millisecond})
	if err != nil || len(again) != 1 || m2.LastIndex != r.meta.LastIndex {
		t.Fatalf("timed-out read: %v %+v %v", again, m2, err)
	}
	// The read API shows the same allocation, with Nomad's headers.
	resp := env.srv.Do(t, "GET", "/v1/node/"+reg.ID+"/allocations", "")
	expectHeader(t, resp, "X-Nomad-Index", resp.Header.Get("X-Service-Index"))
	var listed []*state.Allocation
	resp.JSON(t, &listed)
	if len(listed) != 1 || listed[0].ID != allocs[0].ID {
		t.Fatalf("node allocations: %s", resp.Body)
	}
	got, _, err := c.Allocation(ctx, allocs[0].ID, nil)
	if err != nil || got.ID != allocs[0].ID {
		t.Fatalf("allocation read: %v %v", got, err)
	}
	list, _, err := c.Allocations(ctx, &api.QueryOptions{Params: map[string]string{"prefix": allocs[0].ID[:4]}})
	if err != nil || len(list) != 1 {
		t.Fatalf("allocation list by prefix: %v %v", list, err)
	}
	expectError(t, env.srv.Do(t, "GET", "/v1/allocations?prefix=abc", ""), 400, `Invalid prefix "abc": it must have an even number of hexadecimal characters`)
	expectError(t, env.srv.Do(t, "GET", "/v1/allocation/"+otherID, ""), 404, "alloc not found")
}

func TestNodeClientProtocolACL(t *testing.T) {
	env := ntStart(t, time.Minute, servertest.ACL("root-secret"))
	admin := &acxServer{TestServer: env.srv, mgmt: "root-secret"}
	admin.waitACLReady(t)
	nodeTok := admin.tokenWithRules(t, "node-writer", `node = "write"`, "")
	readTok := admin.tokenWithRules(t, "node-reader", `node = "read"`+"\n"+`namespace "default" { policy = "read" }`, "")
	ctx := context.Background()

	reg := ntNode("node-e")
	for _, c := range []struct {
		name, secret string
	}{{"anonymous", ""}, {"read-only", readTok.SecretID}, {"unknown", uuid.NewString()}} {
		_, err := env.client(t, c.secret).RegisterNode(ctx, reg)
		var apiErr *api.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || !strings.HasPrefix(apiErr.Message, "Permission denied") {
			t.Errorf("%s register: %v", c.name, err)
		}
	}
	tc := env.client(t, nodeTok.SecretID)
	nc := ntRegister(t, tc, reg)
	if _, err := nc.Heartbeat(ctx, reg.ID); err != nil {
		t.Fatalf("node heartbeat: %v", err)
	}
	// The introduction token alone is not the node.
	if _, err := tc.Heartbeat(ctx, reg.ID); err == nil {
		t.Error("a node:write token heartbeated without the node's secret")
	}
	if _, err := env.client(t, readTok.SecretID).Heartbeat(ctx, reg.ID); err == nil {
		t.Error("a read-only token heartbeated")
	}
	job := ntJob(t, env.ts, "secured", nil, nil)
	allocs, _ := ntPlace(t, env.ts, job, reg.ID, reg.Name, 1, env.clock.Now())

	// Reads: node:read for nodes, read-job for allocations.
	expectError(t, env.srv.Do(t, "GET", "/v1/nodes", ""), 403, "Permission denied")
	expectError(t, env.srv.Do(t, "GET", "/v1/allocation/"+allocs[0].ID, ""), 403, "Permission denied")
	expectError(t, env.srv.Do(t, "GET", "/v1/allocations", "", "X-Service-Token", nodeTok.SecretID), 403, "Permission denied")
	rc := env.client(t, readTok.SecretID)
	if nodes, _, err := rc.Nodes(ctx, nil); err != nil || len(nodes) != 1 {
		t.Errorf("read token lists nodes: %v %v", nodes, err)
	}
	if a, _, err := rc.Allocation(ctx, allocs[0].ID, nil); err != nil || a.ID != allocs[0].ID {
		t.Errorf("read token reads alloc: %v %v", a, err)
	}
	if _, _, err := rc.NodeAllocations(ctx, reg.ID, nil); err == nil {
		t.Error("a read-only token used the client protocol")
	}
	// The node sees its allocations (its token has no namespace rights).
	if cas, _, err := nc.NodeAllocations(ctx, reg.ID, nil); err != nil || len(cas) != 1 {
		t.Errorf("node token allocations: %v %v", cas, err)
	}
}

func TestNodeClientBodyCaps(t *testing.T) {
	env := ntStart(t, time.Minute)
	c := env.client(t, "")
	ctx := context.Background()
	reg := ntNode("node-f")
	nc := ntRegister(t, c, reg)
	id := uuid.NewString()
	many := func(n int) []*api.AllocClientUpdate {
		out := make([]*api.AllocClientUpdate, n)
		for i := range out {
			out[i] = &api.AllocClientUpdate{ID: id, ClientStatus: "running"}
		}
		return out
	}
	manyChecks := func(n int) map[string]*api.CheckResult {
		out := map[string]*api.CheckResult{}
		for i := range n {
			out[fmt.Sprint("c", i)] = &api.CheckResult{Status: "success", Mode: "healthiness"}
		}
		return out
	}
	states := map[string]*api.TaskState{}
	for i := range 101 {
		states[fmt.Sprint("t", i)] = &api.TaskState{State: "running"}
	}
	events := make([]*api.TaskEvent, 201)
	for i := range events {
		events[i] = &api.TaskEvent{Type: "Started"}
	}
	cases := []struct {
		updates []*api.AllocClientUpdate
		msg     string
	}{
		{many(1001), "Allocs has 1001 updates: at most 1000 are allowed"},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", TaskStates: states}}, "Allocs[0].TaskStates has 101 tasks: at most 100 are allowed"},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", TaskStates: map[string]*api.TaskState{"t": {State: "running", Events: events}}}},
			`Allocs[0].TaskStates["t"].Events has 201 events: at most 200 are allowed`},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "exploded"}}, `Allocs[0].ClientStatus "exploded" is invalid: one of pending, running, complete, failed, lost`},
		{[]*api.AllocClientUpdate{{ID: "short", ClientStatus: "running"}}, `Allocs[0].ID "short" is invalid: a 36-character UUID is required`},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", CheckResults: manyChecks(257)}}, "Allocs[0].CheckResults has 257 checks: at most 256 are allowed"},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", CheckResults: map[string]*api.CheckResult{"c": nil}}}, `Allocs[0].CheckResults["c"] is null`},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", CheckResults: map[string]*api.CheckResult{"c": {Status: "great", Mode: "healthiness"}}}},
			`Allocs[0].CheckResults["c"].Status "great" is invalid: one of success, failure, pending`},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", CheckResults: map[string]*api.CheckResult{"c": {Status: "success", Mode: "x"}}}},
			`Allocs[0].CheckResults["c"].Mode "x" is invalid: one of healthiness, readiness`},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", CheckResults: map[string]*api.CheckResult{"c": {Status: "failure", Mode: "healthiness", Output: strings.Repeat("x", 4097)}}}},
			`Allocs[0].CheckResults["c"].Output is longer than 4096 bytes`},
		{[]*api.AllocClientUpdate{{ID: id, ClientStatus: "running", CheckResults: map[string]*api.CheckResult{"c": {Status: "success", Mode: "healthiness", Service: strings.Repeat("s", 513)}}}},
			`Allocs[0].CheckResults["c"] has a name longer than 512 bytes`},
	}
	for _, tc := range cases {
		_, err := nc.UpdateAllocations(ctx, reg.ID, tc.updates)
		var apiErr *api.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != tc.msg {
			t.Errorf("got %v, want 400 %q", err, tc.msg)
		}
	}
	meta := map[string]string{}
	for i := range 513 {
		meta[fmt.Sprint("k", i)] = "v"
	}
	bad := ntNode("node-g")
	bad.Meta = meta
	_, err := c.RegisterNode(ctx, bad)
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != "Meta has 513 entries: at most 512 are allowed" {
		t.Errorf("meta cap: %v", err)
	}
	expectError(t, env.srv.Do(t, "PUT", "/v1/client/register", `{"Name":"x","Status":"down"}`), 400, `Node decoding failed: json: unknown field "Status"`)
	expectError(t, env.srv.Do(t, "PUT", "/v1/client/register", `{"Name":"bad name!"}`), 400, `Node Name "bad name!" is invalid: letters, digits, '.', '_' and '-', at most 128 characters`)
	expectError(t, env.srv.Do(t, "PUT", "/v1/client/allocations", `{"NodeID":"`+otherID+`","Allocs":[]}`), 404, "node "+otherID+" not found")
}

func TestNodeHeartbeatsFollowLeadership(t *testing.T) {
	env := ntStart(t, time.Minute)
	c := env.client(t, "")
	ctx := context.Background()
	a, b := ntNode("node-h"), ntNode("node-i")
	na := ntRegister(t, c, a)
	ntRegister(t, c, b)
	// Not leading: no timers, and heartbeats are still answered.
	if n := env.svc.TrackedNodes(); n != 0 {
		t.Fatalf("tracked %d nodes while not leading", n)
	}
	if _, err := na.Heartbeat(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	// Leadership starts: every known live node gets a timer.
	lead, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); env.svc.RunHeartbeats(lead) }()
	deadline := time.Now().Add(10 * time.Second)
	for env.svc.TrackedNodes() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("tracked %d nodes, want 2", env.svc.TrackedNodes())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Leadership ends: the timers go with it.
	cancel()
	<-done
	if n := env.svc.TrackedNodes(); n != 0 {
		t.Fatalf("tracked %d nodes after leadership ended", n)
	}
	for _, reg := range []*api.NodeRegistration{a, b} {
		if n, _, _ := c.Node(ctx, reg.ID, nil); n.Status != state.NodeStatusReady {
			t.Errorf("node %s is %s", reg.Name, n.Status)
		}
	}
}

// Registration caps: resources > 0, a node's record at most 64 KiB as
// JSON, at most MaxNodes nodes (a re-registration is not a new node).
func TestNodeRegistrationCaps(t *testing.T) {
	env := ntStartWith(t, nodes.Config{HeartbeatTTL: time.Minute, MaxNodes: 2})
	c := env.client(t, "")
	ctx := context.Background()
	refused := func(what string, reg *api.NodeRegistration, msg string) {
		t.Helper()
		_, err := c.RegisterNode(ctx, reg)
		var apiErr *api.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != msg {
			t.Errorf("%s: got %v, want 400 %q", what, err, msg)
		}
	}
	noCPU := ntNode("no-cpu")
	noCPU.Resources.CPU = 0
	refused("no CPU", noCPU, "Node Resources.CPU must be greater than 0 (MHz), got 0")
	noMem := ntNode("no-mem")
	noMem.Resources.MemoryMB = -1
	refused("negative memory", noMem, "Node Resources.MemoryMB must be greater than 0, got -1")
	big := ntNode("big")
	big.Meta = map[string]string{}
	for i := range 40 {
		big.Meta[fmt.Sprint("k", i)] = strings.Repeat("x", 2000)
	}
	_, err := c.RegisterNode(ctx, big)
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "as JSON: the limit is 65536") {
		t.Errorf("a 80 KB node: %v", err)
	}
	a := ntRegister(t, c, ntNode("n1"))
	ntRegister(t, c, ntNode("n2"))
	refused("a third node", ntNode("n3"), "Too many nodes: 2 are registered, the limit is 2 (server -max-nodes); remove down nodes (system gc) or raise it")
	// The first node registers again: not a new node.
	again := ntNode("n1")
	again.ID = ""
	if _, err := c.WithNodeSecret(a.secret).RegisterNode(ctx, again); err != nil {
		t.Errorf("re-registration at the cap: %v", err)
	}
	if n, _ := env.ts.Server.State().NodeCount(); n != 2 {
		t.Errorf("%d nodes, want 2", n)
	}
}
