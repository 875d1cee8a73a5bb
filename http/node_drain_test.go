package http_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	nomad "github.com/hashicorp/nomad/api"
)

// ndStart is ntStart with the drain endpoints wired too. The agent's own
// drainer runs on the real clock: the fake one starts at the real time, so
// that the deadlines set here are ahead for it too.
func ndStart(t *testing.T, opts ...servertest.Option) *ntEnv {
	t.Helper()
	ts := servertest.Start(t, opts...)
	clock := &ntClock{now: time.Now().UTC().Truncate(time.Second)}
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: clock.Now, Logger: hclog.NewNullLogger()}
	s := nodes.New(deps, nodes.Config{HeartbeatTTL: time.Hour})
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts.Server), Nodes: s, NodeDrain: s}))
	t.Cleanup(hs.Close)
	view := *ts
	view.URL = hs.URL
	return &ntEnv{ts: ts, svc: s, clock: clock, url: hs.URL, srv: &view}
}

// Nomad's own client drives a drain from start to cancel: the node's
// fields as `nomad node status` reads them, eligibility refused while
// draining, the start kept on an update, eligible again on cancel with
// node-update evaluations of the jobs on it.
func TestNodeDrainNomadAPI(t *testing.T) {
	env := ndStart(t)
	ctx := context.Background()
	reg := ntNode("drain-1")
	if _, err := env.client(t, "").RegisterNode(ctx, reg); err != nil {
		t.Fatal(err)
	}
	job := ntJob(t, env.ts, "web", nil, nil)
	ntPlace(t, env.ts, job, reg.ID, reg.Name, 1, env.clock.Now())
	nc := nomadClient(t, env.srv, "")
	start := env.clock.Now()

	resp, err := nc.Nodes().UpdateDrainOpts(reg.ID, &nomad.DrainOptions{
		DrainSpec: &nomad.DrainSpec{Deadline: time.Hour}, Meta: map[string]string{"reason": "kernel"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.NodeModifyIndex == 0 || resp.LastIndex != resp.NodeModifyIndex || len(resp.EvalIDs) != 0 || resp.EvalCreateIndex != 0 {
		t.Fatalf("drain response: %+v", resp)
	}
	n, _, err := nc.Nodes().Info(reg.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !n.Drain || n.DrainStrategy == nil || n.DrainStrategy.Deadline != time.Hour || !n.DrainStrategy.StartedAt.Equal(start) ||
		!n.DrainStrategy.ForceDeadline.Equal(start.Add(time.Hour)) || n.SchedulingEligibility != "ineligible" || n.ModifyIndex != resp.NodeModifyIndex {
		t.Fatalf("draining node: drain %v %+v eligibility %q", n.Drain, n.DrainStrategy, n.SchedulingEligibility)
	}
	if l := n.LastDrain; l == nil || l.Status != nomad.DrainStatusDraining || !l.StartedAt.Equal(start) || l.Meta["reason"] != "kernel" {
		t.Fatalf("LastDrain: %+v", n.LastDrain)
	}
	if stubs, _, err := nc.Nodes().List(nil); err != nil || len(stubs) != 1 || !stubs[0].Drain || stubs[0].SchedulingEligibility != "ineligible" {
		t.Fatalf("node list: %+v %v", stubs, err)
	}

	_, err = nc.Nodes().ToggleEligibility(reg.ID, true, nil)
	nomadErr(t, "eligible while draining", err, 400, "can not set node's scheduling eligibility to eligible while it is draining")

	// An update later: the start stays, the deadline counts from now.
	env.clock.Advance(10 * time.Minute)
	if _, err := nc.Nodes().UpdateDrain(reg.ID, &nomad.DrainSpec{Deadline: 2 * time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	n, _, _ = nc.Nodes().Info(reg.ID, nil)
	if !n.DrainStrategy.StartedAt.Equal(start) || n.DrainStrategy.Deadline != 2*time.Hour ||
		!n.DrainStrategy.ForceDeadline.Equal(start.Add(10*time.Minute+2*time.Hour)) || n.LastDrain.Meta["reason"] != "kernel" {
		t.Fatalf("updated drain: %+v %+v", n.DrainStrategy, n.LastDrain)
	}

	// Cancel, eligible again: one node-update evaluation for the job on it.
	resp, err = nc.Nodes().UpdateDrain(reg.ID, nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.EvalIDs) != 1 || resp.EvalCreateIndex != resp.NodeModifyIndex || resp.LastIndex != resp.NodeModifyIndex {
		t.Fatalf("cancel response: %+v", resp)
	}
	_, ev, _ := env.ts.Server.State().Eval(nil, resp.EvalIDs[0])
	if ev == nil || ev.JobID != "web" || ev.TriggeredBy != state.EvalTriggerNodeUpdate || ev.NodeID != reg.ID {
		t.Fatalf("evaluation: %+v", ev)
	}
	n, _, _ = nc.Nodes().Info(reg.ID, nil)
	if n.Drain || n.DrainStrategy != nil || n.SchedulingEligibility != "eligible" || n.LastDrain.Status != nomad.DrainStatusCanceled ||
		!n.LastDrain.UpdatedAt.Equal(start.Add(10*time.Minute)) {
		t.Fatalf("cancelled: %v %+v %q %+v", n.Drain, n.DrainStrategy, n.SchedulingEligibility, n.LastDrain)
	}

	// Eligibility toggles; setting what is already set writes nothing.
	er, err := nc.Nodes().ToggleEligibility(reg.ID, false, nil)
	if err != nil || er.NodeModifyIndex == 0 || len(er.EvalIDs) != 0 {
		t.Fatalf("ineligible: %+v %v", er, err)
	}
	again, err := nc.Nodes().ToggleEligibility(reg.ID, false, nil)
	if err != nil || again.NodeModifyIndex != 0 || again.LastIndex != er.NodeModifyIndex {
		t.Fatalf("ineligible again: %+v %v", again, err)
	}
	er, err = nc.Nodes().ToggleEligibility(reg.ID, true, nil)
	if err != nil || len(er.EvalIDs) != 1 {
		t.Fatalf("eligible: %+v %v", er, err)
	}
	if n, _, _ = nc.Nodes().Info(reg.ID, nil); n.SchedulingEligibility != "eligible" || n.LastDrain.Status != nomad.DrainStatusCanceled {
		t.Fatalf("eligible node: %+v", n)
	}
}

// Bad input is a 4xx saying what is wrong, and changes nothing.
func TestNodeDrainBadInput(t *testing.T) {
	env := ndStart(t)
	reg := ntNode("drain-2")
	if _, err := env.client(t, "").RegisterNode(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	// A pending allocation keeps the drain going (the agent's drainer
	// would complete the drain of an empty node at once).
	ntPlace(t, env.ts, ntJob(t, env.ts, "web", nil, nil), reg.ID, reg.Name, 1, env.clock.Now())
	before := env.ts.Server.State().NodesIndex()
	p := "/v1/node/" + reg.ID
	expectError(t, env.srv.Do(t, "PUT", p+"/eligibility", `{"Eligibility":"maybe"}`), 400, `invalid scheduling eligibility "maybe"`)
	expectError(t, env.srv.Do(t, "PUT", p+"/eligibility", `{"Eligibility":""}`), 400, `invalid scheduling eligibility ""`)
	expectError(t, env.srv.Do(t, "PUT", p+"/drain", `{"DrainSpec":{"Deadline":"1h"}}`), 400,
		"NodeUpdateDrainRequest decoding failed: json: cannot unmarshal string into Go struct field .DrainSpec.Deadline of type time.Duration")
	expectError(t, env.srv.Do(t, "PUT", p+"/drain", `{"Drain":true}`), 400, `NodeUpdateDrainRequest decoding failed: json: unknown field "Drain"`)
	other := uuid.NewString()
	expectError(t, env.srv.Do(t, "PUT", p+"/drain", `{"NodeID":"`+other+`"}`), 400, `NodeID "`+other+`" does not match the node ID of the path`)
	expectError(t, env.srv.Do(t, "PUT", "/v1/node/"+other+"/drain", `{"DrainSpec":{}}`), 404, "node not found")
	expectError(t, env.srv.Do(t, "POST", "/v1/node/"+other+"/eligibility", `{"Eligibility":"ineligible"}`), 404, "node not found")
	expectError(t, env.srv.Do(t, "PUT", "/v1/node/nope/drain", `{}`), 400, `Invalid node ID "nope": a 36-character UUID is required`)
	big := `{"DrainSpec":{},"Meta":{`
	for i := 0; i < 600; i++ {
		if i > 0 {
			big += ","
		}
		big += `"k` + strconv.Itoa(i) + `":"v"`
	}
	big += `}}`
	if resp := env.srv.Do(t, "PUT", p+"/drain", big); resp.Status != 400 || !strings.HasPrefix(resp.Body, "Meta has 600 entries") {
		t.Errorf("too much Meta: %s", resp)
	}
	if resp := env.srv.Do(t, "GET", p+"/drain", ""); resp.Status != 405 {
		t.Errorf("GET drain: %s", resp)
	}
	if after := env.ts.Server.State().NodesIndex(); after != before {
		t.Fatalf("refused requests wrote: nodes index %d -> %d", before, after)
	}
	// An empty DrainSpec is a drain without deadline (POST as well as PUT).
	resp := env.srv.Do(t, "POST", p+"/drain", `{"DrainSpec":{"Deadline":0,"IgnoreSystemJobs":true},"MarkEligible":false,"Meta":null}`)
	var out struct {
		NodeModifyIndex, EvalCreateIndex, Index uint64
		EvalIDs                                 []string
	}
	resp.JSON(t, &out)
	if resp.Status != 200 || out.NodeModifyIndex == 0 || out.Index != out.NodeModifyIndex || resp.Header.Get("X-Nomad-Index") != strconv.Itoa(int(out.Index)) {
		t.Fatalf("drain: %s", resp)
	}
	_, n, _ := env.ts.Server.State().Node(nil, reg.ID)
	if ok, _ := n.DrainStrategy.DeadlineTime(); ok || !n.DrainStrategy.IgnoreSystemJobs || !n.DrainStrategy.ForceDeadline.IsZero() {
		t.Fatalf("drain without deadline: %+v", n.DrainStrategy)
	}
}

// node:write is needed; the operator's accessor is recorded in LastDrain.
func TestNodeDrainACL(t *testing.T) {
	env := ndStart(t, servertest.ACL("root-secret"))
	admin := &acxServer{TestServer: env.srv, mgmt: "root-secret"}
	admin.waitACLReady(t)
	writer := admin.tokenWithRules(t, "node-writer", `node = "write"`, "")
	reader := admin.tokenWithRules(t, "node-reader", `node = "read"`, "")
	reg := ntNode("drain-3")
	if _, err := env.client(t, "root-secret").RegisterNode(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	ntPlace(t, env.ts, ntJob(t, env.ts, "web", nil, nil), reg.ID, reg.Name, 1, env.clock.Now())
	for _, c := range []struct{ name, secret string }{{"anonymous", ""}, {"read-only", reader.SecretID}, {"unknown", uuid.NewString()}} {
		nc := nomadClient(t, env.srv, c.secret)
		_, err := nc.Nodes().UpdateDrain(reg.ID, &nomad.DrainSpec{}, false, nil)
		nomadErr(t, "without node:write", err, 403, "Permission denied")
		_, err = nc.Nodes().ToggleEligibility(reg.ID, false, nil)
		nomadErr(t, "without node:write", err, 403, "Permission denied")
	}
	nc := nomadClient(t, env.srv, writer.SecretID)
	if _, err := nc.Nodes().UpdateDrain(reg.ID, &nomad.DrainSpec{}, false, nil); err != nil {
		t.Fatal(err)
	}
	// node:write includes node:read.
	n, _, err := nc.Nodes().Info(reg.ID, nil)
	if err != nil || !n.Drain || n.LastDrain == nil || n.LastDrain.AccessorID != writer.AccessorID {
		t.Fatalf("drained node as its operator reads it: %+v %v", n, err)
	}
}
