package http_test

import "net/http"

// deploymentsMatrixRows are the deployment endpoints' rows of the
// permission matrix. The matrix server has no deployments: every
// operation on one finds nothing (the namespace permission is checked on
// the deployment found, so only an unknown secret is refused up front).
// The list needs read-job in default up front.
func deploymentsMatrixRows() []acxEndpoint {
	notFound := acxWant{http.StatusNotFound, "deployment not found"}
	rows := []acxEndpoint{
		{method: "GET", path: "/v1/deployments", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/deployment/" + otherID, need: needNomadToken, ok: notFound},
		{method: "GET", path: "/v1/deployment/allocations/" + otherID, need: needNomadToken, ok: notFound},
		{method: "GET", path: "/v1/deployment/history/" + otherID, need: needNomadToken, ok: notFound},
	}
	for _, op := range []struct{ path, body string }{
		{"fail", ""}, {"pause", `{"Pause":true}`}, {"promote", `{"All":true}`},
		{"allocation-health", `{"HealthyAllocationIDs":["` + otherID + `"]}`}, {"unblock", ""},
	} {
		for _, m := range []string{"PUT", "POST"} {
			rows = append(rows, acxEndpoint{method: m, path: "/v1/deployment/" + op.path + "/" + otherID, body: op.body,
				need: needNomadToken, ok: notFound})
		}
	}
	return rows
}
