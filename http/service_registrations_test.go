package http_test

import "net/http"

// servicesMatrixRows are the native service discovery endpoints' rows of
// the permission matrix: reads need read-job in the namespace, a delete
// submit-job (the matrix server has no registrations: it ends in a 404
// after the check); an allocation's checks are checked on the allocation
// found, so only an unknown secret is refused before the ID's 400.
func servicesMatrixRows() []acxEndpoint {
	return []acxEndpoint{
		{method: "GET", path: "/v1/services", need: needNSReadJob, ok: acxWant{http.StatusOK, "[]"}},
		{method: "GET", path: "/v1/service/web", need: needNSReadJob, ok: acxWant{http.StatusOK, "[]"}},
		{method: "DELETE", path: "/v1/service/web/_nomad-task-x", need: needNSSubmitJob, ok: acxWant{http.StatusNotFound, "service registration not found"}},
		{method: "GET", path: "/v1/job/web/services", need: needNSReadJob, ok: acxWant{http.StatusNotFound, "job not found"}},
		{method: "GET", path: "/v1/allocation/x/services", need: needNSReadJob, ok: acxWant{http.StatusBadRequest, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/allocation/x/checks", need: needNomadToken, ok: acxWant{http.StatusBadRequest, `Invalid allocation ID "x": a 36-character UUID is required`}},
	}
}
