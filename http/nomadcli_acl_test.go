package http_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/state"
)

// needNSAdmin: Nomad namespace writes (management or operator:write),
// refused with Nomad's "Permission denied".
const needNSAdmin = "namespace:admin"

// nomadCLIMatrixRows are the rows of the endpoints Nomad's CLI reads
// beyond the jobs and deployments APIs, for the permission matrix. The
// matrix server has no jobs and only the default namespace: answers stop
// at not-found or validation, after the check.
func nomadCLIMatrixRows() []acxEndpoint {
	badName := acxWant{http.StatusBadRequest, "Invalid namespace \"bad_name\": 1 error occurred:\n\t* invalid name \"bad_name\". Must match regex ^[a-zA-Z0-9-]{1,128}$\n\n"}
	rows := []acxEndpoint{
		{method: "GET", path: "/v1/job/web/summary", need: needNSReadJob, ok: acxWant{404, "job not found"}},
		{method: "GET", path: "/v1/job/web/scale", need: needNSReadJob, ok: acxWant{404, "job not found"}},
		{method: "GET", path: "/v1/agent/self", need: needOpRead, ok: acxWant{200, ""}},
		{method: "GET", path: "/v1/agent/members", need: needNodeRead, ok: acxWant{200, ""}},
		{method: "GET", path: "/v1/agent/health", need: needOpen, ok: acxWant{200, `{"server":{"ok":true,"message":"ok"}}`}},
		{method: "GET", path: "/v1/regions", need: needOpen, ok: acxWant{200, `["global"]`}},
		{method: "GET", path: "/v1/namespaces?prefix=zzz", need: needNomadToken, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/namespace/nope", need: needNSReadJob, ok: acxWant{404, "Namespace not found"}},
		{method: "DELETE", path: "/v1/namespace/nope", need: needNSAdmin, ok: acxWant{404, "namespace not found"}},
	}
	for _, m := range []string{"PUT", "POST"} {
		rows = append(rows,
			acxEndpoint{method: m, path: "/v1/job/web/scale", body: `{"Count":2,"Target":{"Group":"g"}}`, need: needNSSubmitJob, ok: acxWant{404, `job "web" not found`}},
			acxEndpoint{method: m, path: "/v1/allocation/x/stop", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
			acxEndpoint{method: m, path: "/v1/search", body: `{"Prefix":"zzz","Context":"jobs"}`, need: needNSReadJob, ok: acxWant{200, `{"Matches":{"jobs":null},"Truncations":{"jobs":false}}`}},
			acxEndpoint{method: m, path: "/v1/search/fuzzy", body: `{"Text":"zzz","Context":"jobs"}`, need: needNSReadJob, ok: acxWant{200, `{"Matches":{},"Truncations":{"jobs":false}}`}},
			acxEndpoint{method: m, path: "/v1/namespace", body: `{"Name":"bad_name"}`, need: needNSAdmin, ok: badName},
			acxEndpoint{method: m, path: "/v1/namespace/bad_name", body: `{"Name":"bad_name"}`, need: needNSAdmin, ok: badName},
		)
	}
	return rows
}

// TestNomadCLIServicesCheckTheirCaller: scale, allocation stop and the
// namespace writes refuse a caller without the capability when called
// directly, not only through HTTP, and change nothing.
func TestNomadCLIServicesCheckTheirCaller(t *testing.T) {
	w := newAuthzWorld(t)
	js := jobs.New(w.f.Deps)
	nss := namespaces.New(w.f.Deps)
	reader := acl.NewAuthorizer([]*acl.Rules{mustRules(t, `namespace "prod" { policy = "read" }`)})
	writer := acl.NewAuthorizer([]*acl.Rules{mustRules(t, `namespace "default" { policy = "write" }`)})
	before := w.f.Server.State().Counts()
	for name, caller := range map[string]acl.Caller{"zero caller": {}, "reader": {Authz: reader}, "other ns": {Authz: writer}} {
		for op, call := range map[string]func() error{
			"scale": func() error {
				_, err := js.Scale(caller, &jobs.ScaleRequest{Namespace: "prod", JobID: "api", Group: "g", Count: new(int64(3))})
				return err
			},
			"alloc stop":       func() error { _, _, err := js.StopAlloc(caller, w.prodAlloc); return err },
			"namespace upsert": func() error { _, err := nss.Upsert(caller, &state.Namespace{Name: "dev"}); return err },
			"namespace delete": func() error { _, err := nss.Delete(caller, "prod"); return err },
		} {
			if err := call(); !acl.IsPermissionDenied(err) {
				t.Errorf("%s %s: got %v, want Permission denied", name, op, err)
			}
		}
	}
	if after := w.f.Server.State().Counts(); !reflect.DeepEqual(before, after) {
		t.Errorf("refused calls changed the state: %v, then %v", before, after)
	}
}
