package http_test

import (
	"fmt"
	"testing"

	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// Deployment endpoints need read-job / submit-job in the deployment's
// namespace; anything else is 403 `Permission denied` (design §7).
func TestDeploymentACL(t *testing.T) {
	const root = "8f2d6a52-5f1e-4c7a-9d43-0b6f1f6f7a11"
	f := deploytest.Start(t, servertest.ACL(root))
	admin := func(path, body string) *deploytest.Response {
		resp := f.Do("PUT", path, body, "X-Service-Token", root)
		if resp.Status != 200 {
			t.Fatalf("PUT %s: %s", path, resp)
		}
		return resp
	}
	token := func(name, rules string) (secret, accessor string) {
		admin("/v1/acl/policy", fmt.Sprintf(`{"Name":%s,"Rules":%s}`, js(name), js(rules)))
		var tok struct{ SecretID, AccessorID string }
		admin("/v1/acl/token", fmt.Sprintf(`{"Policies":[{"Name":%s}]}`, js(name))).JSON(t, &tok)
		return tok.SecretID, tok.AccessorID
	}
	reader, _ := token("reader", `namespace "default" { policy = "read" }`)
	writer, writerAccessor := token("writer", `namespace "default" { policy = "write" }`)
	scaler, _ := token("scaler", `namespace "default" { policy = "scale" }`)

	def := newWorldOn(t, f)
	prodJob := f.RegisterJob(deploytest.Job("prod", "api", "v0", deploytest.Group{Name: "g", Count: 1}))
	prod, _ := f.Deploy(prodJob)

	const denied = "Permission denied"
	for _, c := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
	}{
		{"anonymous read", "GET", depPath + def.d.ID, "", nil, 403},
		{"anonymous list", "GET", "/v1/deployments", "", nil, 403},
		{"unknown token", "GET", depPath + def.d.ID, "", []string{"X-Nomad-Token", "6e1f0c43-79c5-4df5-8f63-bb4b3c7a5d33"}, 403},
		{"garbage token", "GET", "/v1/deployments", "", []string{"Authorization", "Bearer garbage"}, 403},
		{"reader reads", "GET", depPath + def.d.ID, "", []string{"X-Service-Token", reader}, 200},
		{"reader allocations", "GET", depPath + "allocations/" + def.d.ID, "", []string{"X-Nomad-Token", reader}, 200},
		{"reader history", "GET", depPath + "history/" + def.d.ID, "", []string{"X-Nomad-Token", reader}, 200},
		{"reader lists", "GET", "/v1/deployments", "", []string{"X-Service-Token", reader}, 200},
		{"reader other namespace", "GET", depPath + prod.ID, "", []string{"X-Service-Token", reader}, 403},
		{"reader other namespace allocations", "GET", depPath + "allocations/" + prod.ID, "", []string{"X-Service-Token", reader}, 403},
		{"reader lists other namespace", "GET", "/v1/deployments?namespace=prod", "", []string{"X-Service-Token", reader}, 403},
		{"reader fails", "PUT", depPath + "fail/" + def.d.ID, "", []string{"X-Service-Token", reader}, 403},
		{"reader pauses", "PUT", depPath + "pause/" + def.d.ID, `{"Pause":true}`, []string{"X-Service-Token", reader}, 403},
		{"reader promotes", "PUT", depPath + "promote/" + def.d.ID, `{"All":true}`, []string{"X-Service-Token", reader}, 403},
		{"reader sets health", "PUT", depPath + "allocation-health/" + def.d.ID, `{"HealthyAllocationIDs":["` + def.allocs[0].ID + `"]}`, []string{"X-Service-Token", reader}, 403},
		{"reader unblocks", "PUT", depPath + "unblock/" + def.d.ID, "", []string{"X-Service-Token", reader}, 403},
		{"scaler pauses", "PUT", depPath + "pause/" + def.d.ID, `{"Pause":true}`, []string{"X-Service-Token", scaler}, 403},
		{"writer other namespace", "PUT", depPath + "fail/" + prod.ID, "", []string{"X-Service-Token", writer}, 403},
		{"anonymous fail", "PUT", depPath + "fail/" + def.d.ID, "", nil, 403},
	} {
		resp := f.Do(c.method, c.path, c.body, c.headers...)
		if c.status == 403 {
			expectError(t, resp, 403, denied)
		} else if resp.Status != c.status {
			t.Errorf("%s: %s", c.name, resp)
		}
	}
	// namespace=* lists only what the token may read.
	expectPageAs(t, f, "?namespace=*", []*state.Deployment{def.deployment(t)}, "X-Service-Token", reader)
	expectPageAs(t, f, "?namespace=*", []*state.Deployment{def.deployment(t), prod}, "X-Service-Token", root)
	// The writer may act, and the history names its token.
	expectAction(t, f.Do("PUT", depPath+"fail/"+def.d.ID, "", "X-Nomad-Token", writer), true, false, nil)
	_, events, _ := f.Deps.State().DeploymentHistory(nil, def.d.ID)
	if last := events[len(events)-1]; last.Cause.Kind != "operation" || last.Cause.Operation != "fail" || last.Cause.AccessorID != writerAccessor {
		t.Errorf("history cause: %+v", last.Cause)
	}
	// Unknown deployments are 404 whoever asks (existence before permission, as Nomad).
	expectError(t, f.Do("PUT", depPath+"fail/"+otherID, "", "X-Service-Token", reader), 404, "deployment not found")
}

func expectPageAs(t *testing.T, f *deploytest.Fixture, query string, want []*state.Deployment, headers ...string) {
	t.Helper()
	resp := f.Do("GET", "/v1/deployments"+query, "", headers...)
	expectJSON(t, resp, mustJSON(t, want))
}
