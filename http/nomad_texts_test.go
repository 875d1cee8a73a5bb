package http_test

import (
	"fmt"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// TestNomadRefusalTexts: the refusals of node pools, namespaces and a
// registration with an index, as Nomad 1.6 words them (raw bodies, with
// go-multierror's trailing blank line where Nomad collects the errors).
// The statuses stay 4xx: Nomad answers several of these as 500.
func TestNomadRefusalTexts(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	waitReadyNodes(t, nomadClient(t, ts, ""), 1)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	if r := ts.Do(t, "PUT", "/v1/namespace/prod", `{"Name":"prod"}`); r.Status != 200 {
		t.Fatalf("namespace prod: %s", r)
	}
	mustWrite(t, ts, "PUT", "/v1/jobs?namespace=prod", jobBody("api", 1, `,"Namespace":"prod"`))
	regex := "^[a-zA-Z0-9-_]{1,128}$"
	long := fmt.Sprintf(`"%0257d"`, 0)
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"pool bad name", "PUT", "/v1/node/pools", `{"Name":"bad name"}`, 400,
			"invalid node pool \"bad name\": 1 error occurred:\n\t* invalid name \"bad name\", must match regex " + regex + "\n\n"},
		{"pool bad name and description", "PUT", "/v1/node/pools", `{"Name":"bad name","Description":` + long + `}`, 400,
			"invalid node pool \"bad name\": 2 errors occurred:\n\t* invalid name \"bad name\", must match regex " + regex + "\n\t* description longer than 256\n\n"},
		{"pool default modified", "PUT", "/v1/node/pools", `{"Name":"default","Description":"x"}`, 400, `modifying node pool "default" is not allowed`},
		{"pool all modified", "PUT", "/v1/node/pool/all", `{"Name":"all"}`, 400, `modifying node pool "all" is not allowed`},
		{"pool all deleted", "DELETE", "/v1/node/pool/all", "", 400, `deleting node pool "all" is not allowed`},
		{"pool default in use", "DELETE", "/v1/node/pool/default", "", 409,
			"2 errors occurred:\n\t* node pool \"default\" has non-terminal jobs in regions: [global]\n\t* node pool \"default\" has nodes in regions: [global]\n\n"},
		{"pool unknown", "DELETE", "/v1/node/pool/nope", "", 404, "node pool nope not found"},
		{"namespace default deleted", "DELETE", "/v1/namespace/default", "", 400, "can not delete default namespace"},
		{"namespace in use", "DELETE", "/v1/namespace/prod", "", 409,
			"1 error occurred:\n\t* namespace \"prod\" has non-terminal jobs in regions: [global]\n\n"},
		{"namespace unknown", "DELETE", "/v1/namespace/nope", "", 404, "namespace not found"},
		{"namespace bad name", "PUT", "/v1/namespace/bad_name", `{"Name":"bad_name"}`, 400,
			"Invalid namespace \"bad_name\": 1 error occurred:\n\t* invalid name \"bad_name\". Must match regex ^[a-zA-Z0-9-]{1,128}$\n\n"},
		{"namespace bad name and description", "PUT", "/v1/namespace", `{"Name":"a.b","Description":` + long + `}`, 400,
			"Invalid namespace \"a.b\": 2 errors occurred:\n\t* invalid name \"a.b\". Must match regex ^[a-zA-Z0-9-]{1,128}$\n\t* description longer than 256\n\n"},
		{"enforce 0 on an existing job", "PUT", "/v1/jobs",
			jobBody("web", 2, "")[:len(jobBody("web", 2, ""))-1] + `,"EnforceIndex":true,"JobModifyIndex":0}`, 409,
			"Enforcing job modify index 0: job already exists"},
		{"enforce on a missing job", "PUT", "/v1/jobs",
			jobBody("nope", 1, "")[:len(jobBody("nope", 1, ""))-1] + `,"EnforceIndex":true,"JobModifyIndex":5}`, 409,
			"Enforcing job modify index 5: job does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.Do(t, c.method, c.path, c.body)
			if r.Status != c.status || r.Body != c.want {
				t.Errorf("%s %s: got %d %q, want %d %q", c.method, c.path, r.Status, r.Body, c.status, c.want)
			}
		})
	}
}
