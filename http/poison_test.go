package http_test

// Issue 31, the poison entry: a token with only scale-job sent a scaling
// Meta nested 1,100 levels deep; it was committed and then failed to decode
// on every server, which panicked, and panicked again at every restart. Now
// every body is bounded where it is decoded (package limits), before Raft
// sees it.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/limits"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// deepJSON is {"a":{"a":...1}} nesting levels objects deep.
func deepJSON(levels int) string {
	return strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels)
}

// TestPoisonScaleMeta: the finding's request (6.6 KB, Meta 1,100 levels)
// and the 1,021-level one that broke snapshots are 400s naming the field
// and the limit, with nothing written; a Meta at the limit is stored, and
// a snapshot of it saves and restores.
func TestPoisonScaleMeta(t *testing.T) {
	const mgmt = "3f1c2b4a-5d6e-4f70-8192-a3b4c5d6e7f8"
	s := acxStart(t, mgmt, servertest.ACL(mgmt))
	s.must(t, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	scaler := s.tokenWithRules(t, "scaler", `namespace "default" { policy = "scale" }`, "").SecretID
	scale := func(meta string) *servertest.Response {
		return s.Do(t, "POST", "/v1/job/web/scale", `{"Target":{"Group":"web"},"Error":true,"Message":"m","Meta":`+meta+`}`, "X-Nomad-Token", scaler)
	}
	// The body's object is level 1: Meta may nest MaxDepth-1 levels.
	const refused = "ScalingRequest decoding failed: Meta.a.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"
	before := s.fingerprint()
	for _, levels := range []int{1100, 1021, limits.MaxDepth} {
		resp := scale(deepJSON(levels))
		expectError(t, resp, 400, refused)
	}
	if len(deepJSON(1100)) < 6600 {
		t.Fatalf("the poison's Meta is %d bytes, the finding's 6.6 KB", len(deepJSON(1100)))
	}
	if after := s.fingerprint(); after != before {
		t.Fatalf("a refused scale wrote: %s -> %s", before, after)
	}

	atLimit := deepJSON(limits.MaxDepth - 1)
	if resp := scale(atLimit); resp.Status != 200 {
		t.Fatalf("Meta at the limit: %s", resp)
	}
	eventMeta := func() string {
		var st struct {
			TaskGroups map[string]struct {
				Events []struct{ Meta json.RawMessage }
			}
		}
		s.must(t, "GET", "/v1/job/web/scale", "").JSON(t, &st)
		ev := st.TaskGroups["web"].Events
		if len(ev) != 1 {
			t.Fatalf("scaling events %+v, want 1", ev)
		}
		return string(ev[0].Meta)
	}
	if got := eventMeta(); got != atLimit {
		t.Fatalf("stored Meta %.80s, want the %d levels sent", got, limits.MaxDepth-1)
	}
	archive := s.must(t, "GET", "/v1/snapshot", "").Body
	s.must(t, "PUT", "/v1/snapshot", archive)
	if got := eventMeta(); got != atLimit {
		t.Fatalf("Meta after a restore %.80s", got)
	}
}

// TestDeepBodiesRefused: the bounds hold for every free-form value, on any
// route, JSON or the client protocol's msgpack, each a 400 that says where
// and which limit.
func TestDeepBodiesRefused(t *testing.T) {
	const mgmt = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	s := acxStart(t, mgmt, servertest.ACL(mgmt))
	msgpackOf := func(v any) string {
		var buf []byte
		if err := codec.NewEncoderBytes(&buf, api.NewMsgpackHandle()).Encode(v); err != nil {
			t.Fatal(err)
		}
		return string(buf)
	}
	var deep any = 1
	for range 100 {
		deep = map[string]any{"a": deep}
	}
	ids := make([]any, limits.MaxElements+1)
	for i := range ids {
		ids[i] = "x"
	}
	for _, c := range []struct {
		name, method, path, body, contentType, want string
	}{
		{"job task Config", "PUT", "/v1/jobs", `{"Job":{"ID":"j","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"mock_driver","Config":` + deepJSON(70) + `}]}]}}`, "",
			"Job decoding failed: Job.TaskGroups[0].Tasks... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"job plan", "PUT", "/v1/job/j/plan", `{"Job":{"ID":"j","Meta":` + deepJSON(100) + `}}`, "",
			"JobPlanRequest decoding failed: Job.Meta.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"auth method Config", "PUT", "/v1/acl/auth-method", `{"Name":"m","Type":"jwt","Config":` + deepJSON(1100) + `}`, "",
			"AuthMethod decoding failed: Config.a.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"policy, deep", "PUT", "/v1/acl/policy", `{"Name":"p","Rules":"","Datacenters":[` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]}`, "",
			"Policy decoding failed: Datacenters[0][0][0]... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"token, wide", "PUT", "/v1/acl/token", `{"Policies":[` + strings.TrimSuffix(strings.Repeat(`{},`, limits.MaxElements+1), ",") + `]}`, "",
			"Token decoding failed: Policies has more than 16384 elements; the limit is 16384"},
		{"binding rule", "PUT", "/v1/acl/binding-rule", `{"AuthMethod":"m","BindType":"service","BindName":"x","BindVars":` + deepJSON(80) + `}`, "",
			"BindingRule decoding failed: BindVars.a.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"namespace Meta", "PUT", "/v1/namespace/ns", `{"Name":"ns","Meta":` + deepJSON(65) + `}`, "",
			"Namespace decoding failed: Meta.a.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"client report, msgpack, deep", "PUT", "/v1/client/allocations", msgpackOf(map[string]any{"NodeID": "n", "Allocs": []any{deep}}), api.MsgpackContentType,
			"AllocUpdateRequest decoding failed: Allocs[0].a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
		{"client report, msgpack, wide", "PUT", "/v1/client/allocations", msgpackOf(map[string]any{"NodeID": "n", "Allocs": ids}), api.MsgpackContentType,
			"AllocUpdateRequest decoding failed: Allocs has more than 16384 elements; the limit is 16384"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.fingerprint()
			headers := []string{"X-Service-Token", mgmt}
			if c.contentType != "" {
				headers = append(headers, "Content-Type", c.contentType)
			}
			expectError(t, s.Do(t, c.method, c.path, c.body, headers...), 400, c.want)
			if after := s.fingerprint(); after != before {
				t.Fatalf("a refused write changed the state: %s -> %s", before, after)
			}
		})
	}
}
