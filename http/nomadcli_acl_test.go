package http_test

import "net/http"

// needNSAdmin: Nomad namespace writes (management or operator:write),
// refused with Nomad's "Permission denied".
const needNSAdmin = "namespace:admin"

// nomadCLIMatrixRows are the rows of the endpoints Nomad's CLI reads
// beyond the jobs and deployments APIs, for the permission matrix. The
// matrix server has no jobs and only the default namespace: answers stop
// at not-found or validation, after the check.
func nomadCLIMatrixRows() []acxEndpoint {
	badName := acxWant{http.StatusBadRequest, `invalid name "bad_name". Must match regex ^[a-zA-Z0-9-]{1,64}$`}
	rows := []acxEndpoint{
		{method: "GET", path: "/v1/job/web/summary", need: needNSReadJob, ok: acxWant{404, "job not found"}},
		{method: "GET", path: "/v1/job/web/scale", need: needNSReadJob, ok: acxWant{404, "job not found"}},
		{method: "GET", path: "/v1/agent/self", need: needOpRead, ok: acxWant{200, ""}},
		{method: "GET", path: "/v1/agent/members", need: needNodeRead, ok: acxWant{200, ""}},
		{method: "GET", path: "/v1/agent/health", need: needOpen, ok: acxWant{200, `{"server":{"ok":true,"message":"ok"}}`}},
		{method: "GET", path: "/v1/regions", need: needOpen, ok: acxWant{200, `["global"]`}},
		{method: "GET", path: "/v1/namespaces?prefix=zzz", need: needNomadToken, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/namespace/nope", need: needNSReadJob, ok: acxWant{404, "Namespace not found"}},
		{method: "DELETE", path: "/v1/namespace/nope", need: needNSAdmin, ok: acxWant{404, `namespace "nope" does not exist`}},
	}
	for _, m := range []string{"PUT", "POST"} {
		rows = append(rows,
			acxEndpoint{method: m, path: "/v1/job/web/scale", body: `{"Count":2,"Target":{"Group":"g"}}`, need: needNSSubmitJob, ok: acxWant{404, `job "web" not found`}},
			acxEndpoint{method: m, path: "/v1/allocation/x/stop", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
			acxEndpoint{method: m, path: "/v1/search", body: `{"Prefix":"zzz","Context":"jobs"}`, need: needNSReadJob, ok: acxWant{200, `{"Matches":{"jobs":[]},"Truncations":{"jobs":false}}`}},
			acxEndpoint{method: m, path: "/v1/namespace", body: `{"Name":"bad_name"}`, need: needNSAdmin, ok: badName},
			acxEndpoint{method: m, path: "/v1/namespace/bad_name", body: `{"Name":"bad_name"}`, need: needNSAdmin, ok: badName},
		)
	}
	return rows
}
