package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The client protocol in msgpack (api.Config.Msgpack): a node's changes
// answer the same as in JSON (only when asked: JSON stays the default), its
// reports are applied alike, and a msgpack body is as strictly read as a
// JSON one (a field the request lacks, data after the object: 400).
func TestClientProtocolMsgpack(t *testing.T) {
	env := ntStart(t, time.Minute)
	ctx := context.Background()
	reg := ntNode("node-m")
	nc := ntRegister(t, env.client(t, ""), reg)
	mc, err := api.NewClient(api.Config{Address: env.url, Msgpack: true})
	if err != nil {
		t.Fatal(err)
	}
	mc = mc.AsNode(nc.secret)
	job := ntJob(t, env.ts, "svc", &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthTaskStates},
		map[string]any{"run_for": "1h", "exit_code": 3, "args": []any{"a", map[string]any{"k": 1.5}}})
	placed, _ := ntPlace(t, env.ts, job, reg.ID, reg.Name, 2, env.clock.Now())

	// The same answer either way (compared as JSON: a config's integers
	// decode as float64 from JSON, as integers from msgpack).
	viaJSON, _, err := nc.NodeAllocationChanges(ctx, reg.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	viaMsgpack, meta, err := mc.NodeAllocationChanges(ctx, reg.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(viaJSON)
	b, _ := json.Marshal(viaMsgpack)
	if string(a) != string(b) || !viaMsgpack.Full || viaMsgpack.Count != 2 || meta.LastIndex == 0 {
		t.Fatalf("changes differ:\njson    %s\nmsgpack %s (index %d)", a, b, meta.LastIndex)
	}
	if got := viaMsgpack.Allocs[0].TaskGroup.Tasks[0].Config["exit_code"]; got != int64(3) {
		t.Errorf("exit_code decoded as %T %v, want int64 3", got, got)
	}
	path := "/v1/client/allocations/" + reg.ID + "?changes_since=0"
	if ct := env.srv.Do(t, "GET", path, "", api.NodeSecretHeader, nc.secret).Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("no Accept: Content-Type %q, want JSON", ct)
	}
	resp := env.srv.Do(t, "GET", path, "", api.NodeSecretHeader, nc.secret, "Accept", api.MsgpackContentType)
	if resp.Status != 200 || resp.Header.Get("Content-Type") != api.MsgpackContentType || resp.Header.Get("X-Service-Index") == "" {
		t.Fatalf("Accept msgpack: %d %v", resp.Status, resp.Header)
	}

	// A report in msgpack is applied.
	healthy := true
	at := env.clock.Now().UTC()
	_, err = mc.UpdateAllocations(ctx, reg.ID, []*api.AllocClientUpdate{{ID: placed[0].ID, ClientStatus: api.AllocClientStatusRunning,
		ClientDescription: "Tasks are running", TaskStates: map[string]*api.TaskState{"server": {State: api.TaskStateRunning, StartedAt: at,
			Events: []*api.TaskEvent{{Type: "Started", Time: at.UnixNano()}}}},
		DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}}})
	if err != nil {
		t.Fatal(err)
	}
	_, got, _ := env.ts.State().Alloc(nil, placed[0].ID)
	if ts := got.TaskStates["server"]; got.ClientStatus != state.AllocClientStatusRunning || ts == nil || ts.State != state.TaskStateRunning ||
		!ts.StartedAt.Equal(at) || len(ts.Events) != 1 || ts.Events[0].Time != at.UnixNano() || !got.DeploymentStatus.IsHealthy() ||
		!got.DeploymentStatus.Timestamp.Equal(at) {
		t.Fatalf("after a msgpack report: %+v, task states %+v, deployment status %+v", got, got.TaskStates["server"], got.DeploymentStatus)
	}

	// As strict as JSON.
	encode := func(v any) string {
		var buf []byte
		if err := codec.NewEncoderBytes(&buf, api.NewMsgpackHandle()).Encode(v); err != nil {
			t.Fatal(err)
		}
		return string(buf)
	}
	put := func(body string) *servertest.Response {
		return env.srv.Do(t, "PUT", "/v1/client/allocations", body, api.NodeSecretHeader, nc.secret, "Content-Type", api.MsgpackContentType)
	}
	bogus := struct {
		NodeID string
		Allocs []any
		Bogus  int
	}{NodeID: reg.ID, Allocs: []any{}, Bogus: 1}
	expectError(t, put(encode(bogus)), 400,
		`AllocUpdateRequest decoding failed: msgpack decode error [pos 15]: no matching struct field found when decoding stream map with key Bogus`)
	expectError(t, put(encode(map[string]any{"NodeID": reg.ID, "Allocs": []any{}})+"x"), 400,
		"AllocUpdateRequest decoding failed: unexpected data after the msgpack object")
	expectError(t, put("\xc1"), 400, "AllocUpdateRequest decoding failed: msgpack decode error [pos 1]: only encoded map or array can be decoded into a struct")

	// Who may send one: the node with its secret (a well-formed report
	// without it is refused; the body is decoded first, as a JSON one is).
	if resp := env.srv.Do(t, "PUT", "/v1/client/allocations", encode(map[string]any{"NodeID": reg.ID, "Allocs": []any{}}),
		"Content-Type", api.MsgpackContentType); resp.Status != 403 {
		t.Errorf("msgpack report without the node's secret: %d %s, want 403", resp.Status, resp.Body)
	}
	// Size: the route's body limit holds for msgpack too.
	big := encode(map[string]any{"NodeID": reg.ID, "Allocs": []any{}, "Pad": strings.Repeat("x", 1<<20)}) // the route limit, maxBodySize, is 1 MiB
	resp = put(big)
	if resp.Status != 413 || !strings.Contains(string(resp.Body), "Request body too large") {
		t.Errorf("msgpack report past the body limit: %d %.100s, want 413", resp.Status, resp.Body)
	}
	// Depth: a report nested 5,000 deep is a 400 and the server goes on (a
	// report's types bound the depth; go-msgpack's own bound is 1,024).
	deep := strings.Repeat("\x91", 5000) + "\xc0"
	nested := "\x82\xa6NodeID" + encode(reg.ID) + "\xa6Allocs\x91\x81\xaaTaskStates\x81\xa1t" + deep
	if resp := put(nested); resp.Status != 400 {
		t.Errorf("deeply nested msgpack report: %d %.200s, want 400", resp.Status, resp.Body)
	}
	if resp := env.srv.Do(t, "GET", path, "", api.NodeSecretHeader, nc.secret); resp.Status != 200 {
		t.Fatalf("after the bad reports: %d", resp.Status)
	}
}
