package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// serviceJob is a one-allocation mock job in ns with group service svc.
func serviceJob(ns, id, svc, tags string) string {
	return fmt.Sprintf(`{"Job":{"ID":%q,"Namespace":%q,"Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,`+
		`"Networks":[{"DynamicPorts":[{"Label":"http"}]}],`+
		`"Services":[{"Name":%q,"PortLabel":"http","Provider":"nomad","Tags":[%s]}],`+
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{}}]}]}}`, id, ns, svc, tags)
}

// TestServicesACLAndInPlaceUpdate: service reads need read-job in the
// namespace (a list of every namespace shows only the readable ones), a
// delete submit-job; a change of a service's tags is an in-place update
// that rewrites the registration (same allocation, same CreateIndex).
func TestServicesACLAndInPlaceUpdate(t *testing.T) {
	const mgmt = "5e5e5e5e-0000-4000-8000-00000000aaaa"
	ts := servertest.Start(t, servertest.ACL(mgmt), servertest.DevNodes(1))
	do := func(token, method, path, body string) *servertest.Response {
		return ts.Do(t, method, path, body, "X-Nomad-Token", token)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var nodes []*state.Node
		if r := do(mgmt, http.MethodGet, "/v1/nodes", ""); r.Status == http.StatusOK {
			r.JSON(t, &nodes)
		}
		if len(nodes) == 1 && nodes[0].Status == state.NodeStatusReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dev node did not register")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustDo := func(method, path, body string) *servertest.Response {
		t.Helper()
		r := do(mgmt, method, path, body)
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s: %s", method, path, r)
		}
		return r
	}
	mustDo(http.MethodPut, "/v1/namespace/other", `{"Name":"other"}`)
	var pol state.ACLPolicy
	mustDo(http.MethodPut, "/v1/acl/policy", `{"Name":"reader","Rules":"namespace \"default\" { policy = \"read\" }"}`).JSON(t, &pol)
	var tok state.ACLToken
	mustDo(http.MethodPut, "/v1/acl/token", fmt.Sprintf(`{"Policies":[{"ID":%q}]}`, pol.ID)).JSON(t, &tok)

	mustDo(http.MethodPut, "/v1/jobs", serviceJob("default", "a", "web", `"v1"`))
	mustDo(http.MethodPut, "/v1/jobs", serviceJob("other", "b", "api", ""))
	type reg struct {
		ID, AllocID, Namespace string
		Tags                   []string
		CreateIndex            uint64
		ModifyIndex            uint64
	}
	waitReg := func(ns, name, tags string) reg {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var regs []reg
			do(mgmt, http.MethodGet, "/v1/service/"+name+"?namespace="+ns, "").JSON(t, &regs)
			if len(regs) == 1 && strings.Join(regs[0].Tags, ",") == tags {
				return regs[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("service %s/%s: %+v", ns, name, regs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	web := waitReg("default", "web", "v1")
	waitReg("other", "api", "")

	if r := do(mgmt, http.MethodGet, "/v1/services?namespace=*", ""); r.Status != http.StatusOK ||
		r.Body != `[{"Namespace":"default","Services":[{"ServiceName":"web","Tags":["v1"]}]},{"Namespace":"other","Services":[{"ServiceName":"api","Tags":[]}]}]` {
		t.Fatalf("management's list: %s", r)
	}
	if r := do(tok.SecretID, http.MethodGet, "/v1/services?namespace=*", ""); r.Status != http.StatusOK ||
		r.Body != `[{"Namespace":"default","Services":[{"ServiceName":"web","Tags":["v1"]}]}]` {
		t.Fatalf("reader's list: %s", r)
	}
	for _, c := range []struct{ token, method, path string }{
		{tok.SecretID, http.MethodGet, "/v1/services?namespace=other"},
		{tok.SecretID, http.MethodGet, "/v1/service/api?namespace=other"},
		{tok.SecretID, http.MethodDelete, "/v1/service/web/" + web.ID},
		{"", http.MethodGet, "/v1/services"},
		{"", http.MethodGet, "/v1/client/allocation/" + web.AllocID + "/checks"},
	} {
		if r := do(c.token, c.method, c.path, ""); r.Status != http.StatusForbidden || r.Body != "Permission denied" {
			t.Errorf("%s %s: %s", c.method, c.path, r)
		}
	}
	if r := do(tok.SecretID, http.MethodGet, "/v1/services?namespace=bad!", ""); r.Status != http.StatusBadRequest {
		t.Errorf("bad namespace: %s", r)
	}
	if r := do(tok.SecretID, http.MethodGet, "/v1/client/allocation/"+web.AllocID+"/checks", ""); r.Status != http.StatusOK || r.Body != "{}" {
		t.Errorf("checks of an allocation without any: %s", r)
	}

	// New tags: in place, the registration rewritten.
	mustDo(http.MethodPut, "/v1/jobs", serviceJob("default", "a", "web", `"v2","extra"`))
	again := waitReg("default", "web", "v2,extra")
	if again.ID != web.ID || again.AllocID != web.AllocID || again.CreateIndex != web.CreateIndex || again.ModifyIndex <= web.ModifyIndex {
		t.Fatalf("after the in-place update %+v, before %+v", again, web)
	}
}
