package http_test

// Fuzz targets for the request decoders of every endpoint family (issue 8),
// through the real handler and a real server: whatever the body, the answer
// is a success or a 4xx, never a 5xx (a panic in a handler is a 500) and
// never a crash. scripts/fuzz.sh runs each briefly.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/go-hclog"
)

// quiet keeps a fuzz server's logs out of the fuzzing output.
func quiet(c *server.Config) { c.Logger = hclog.NewNullLogger() }

// fuzzACLServer is an ACL-enabled server for a fuzz target, shared by its
// iterations.
func fuzzACLServer(f *testing.F) *lgServer {
	s := &lgServer{servertest.Start(f, servertest.ACL(lgMgmt), quiet)}
	waitACLReady(f, s.TestServer, lgMgmt)
	return s
}

// fuzzDo sends one request; *testing.F's helpers must not be used inside
// the fuzz function, so this takes the iteration's *testing.T.
func fuzzDo(t *testing.T, base, method, path, body string, headers ...string) (int, string) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Skip("not a request the client can send")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// expect4xx fails on a server error or a success the target does not allow.
func expect4xx(t *testing.T, what string, status int, body string) {
	t.Helper()
	if status >= 500 || (status >= 300 && status < 400) || status < 200 {
		t.Fatalf("%s: %d %q; want a success or a 4xx", what, status, body)
	}
}

// fuzzWrite fuzzes a create body (and, with update, the update of the object
// at updatePath) of one ACL endpoint as the management token.
func fuzzWrite(f *testing.F, createPath string, updatePath func(s *lgServer) string, seeds ...string) {
	s := fuzzACLServer(f)
	upd := updatePath(s)
	for _, seed := range seeds {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, update bool) {
		path := createPath
		if update {
			path = upd
		}
		status, resp := fuzzDo(t, s.URL, "PUT", path, body, "X-Service-Token", lgMgmt)
		expect4xx(t, "PUT "+path+" "+body, status, resp)
	})
}

// created is the ID of an object made by a PUT that must succeed.
func created(f *testing.F, s *lgServer, path, body, idField string) string {
	resp := s.Do(f, "PUT", path, body, "X-Service-Token", lgMgmt)
	var out map[string]any
	if resp.Status != 200 || json.Unmarshal([]byte(resp.Body), &out) != nil {
		f.Fatalf("PUT %s %s: %s", path, body, resp)
	}
	return fmt.Sprint(out[idField])
}

func FuzzBindingRuleBody(f *testing.F) {
	fuzzWrite(f, rulePath, func(s *lgServer) string {
		return rulePath + "/" + created(f, s, rulePath, minimalBody, "ID")
	},
		minimalBody,
		`{"AuthMethod":"m","Selector":"value.name == \"x\" and list.groups contains \"y\"","BindType":"role","BindName":"r-${value.name}"}`,
		`{"AuthMethod":"m","Selector":"((a == b))","BindType":"node","BindName":"${lower(value.name)}","BindVars":{"Name":"x"}}`,
		`{"AuthMethod":"m","BindType":"service","BindName":"${`+strings.Repeat("(", 40)+`","Description":"d","Namespace":"default"}`,
		`{"ID":"6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d","CreateIndex":1,"ModifyIndex":2}`,
		`[]`, `null`, `{"AuthMethod":1}`, ``,
	)
}

func FuzzTokenBody(f *testing.F) {
	fuzzWrite(f, "/v1/acl/token", func(s *lgServer) string {
		return "/v1/acl/token/" + created(f, s, "/v1/acl/token", `{"Description":"fuzz"}`, "AccessorID")
	},
		`{"Description":"d","Policies":[{"Name":"global-management"}],"Local":false}`,
		`{"ServiceIdentities":[{"ServiceName":"web","Datacenters":["dc1"]}],"NodeIdentities":[{"NodeName":"n","Datacenter":"dc1"}]}`,
		`{"Roles":[{"ID":"6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"}],"ExpirationTTL":"1h"}`,
		`{"ExpirationTime":"2030-01-01T00:00:00Z","AccessorID":"x","SecretID":"y"}`,
		`{"AuthMethod":"m","Namespace":"ns"}`, `{"ExpirationTTL":-1}`, `{}`,
	)
}

func FuzzPolicyBody(f *testing.F) {
	fuzzWrite(f, policyPath, func(s *lgServer) string {
		return policyPath + "/" + created(f, s, policyPath, `{"Name":"fuzz"}`, "ID")
	},
		`{"Name":"p","Rules":"acl = \"read\"\noperator = \"write\""}`,
		`{"Name":"p2","Rules":"namespace \"prod-*\" {\n policy = \"write\"\n capabilities = [\"read-job\"]\n}","Datacenters":["dc1"]}`,
		`{"Name":"p3","Rules":"{\"acl\":\"write\",\"namespace\":{\"x\":{\"policy\":\"deny\"}}}","Description":"json"}`,
		`{"Name":"p4","Rules":"acl = [[[[[ }"}`, `{"Name":"fuzz","Rules":"acl = \"list\""}`, `{"ID":"x"}`,
	)
}

func FuzzRoleBody(f *testing.F) {
	fuzzWrite(f, "/v1/acl/role", func(s *lgServer) string {
		return "/v1/acl/role/" + created(f, s, "/v1/acl/role", `{"Name":"fuzz"}`, "ID")
	},
		`{"Name":"r","Policies":[{"Name":"global-management"}]}`,
		`{"Name":"r2","ServiceIdentities":[{"ServiceName":"web"}],"NodeIdentities":[{"NodeName":"n","Datacenter":"dc1"}]}`,
		`{"Name":"r3","Policies":[{"ID":"00000000-0000-0000-0000-000000000001"},{}]}`,
		`{"Name":"","Description":"x"}`,
	)
}

func FuzzAuthMethodBody(f *testing.F) {
	key := newLgKey(f, jose.ES256)
	fuzzWrite(f, methodPath, func(s *lgServer) string {
		return methodPath + "/" + created(f, s, methodPath, methodBody(f, "fuzz", "", key), "Name")
	},
		methodBody(f, "m", "", key),
		methodBody(f, "m2", `,"MaxTokenTTL":"1h","TokenLocality":"global","DisplayName":"M"`, key),
		`{"Name":"j","Type":"jwt","Config":{"JWKSURL":"https://k.example/keys","JWKSCACert":"x"}}`,
		`{"Name":"o","Type":"jwt","Config":{"OIDCDiscoveryURL":"http://idp.example","ExpirationLeeway":"1s","ClaimMappings":{"a":"b"}}}`,
		`{"Name":"x","Type":"kubernetes","Config":{"Host":1}}`, `{"Name":"x","Type":"jwt","Config":[]}`,
	)
}

// FuzzLoginBody fuzzes login and explain bodies against a method with a
// static key and a binding rule. A fuzzed body never names a method that
// fetches keys, so every refusal is the caller's: 4xx.
func FuzzLoginBody(f *testing.F) {
	s := fuzzACLServer(f)
	key := newLgKey(f, jose.ES256)
	s.Do(f, "PUT", methodPath, methodBody(f, "m", "", key), "X-Service-Token", lgMgmt)
	s.Do(f, "PUT", rulePath, `{"AuthMethod":"m","Selector":"value.team == \"Payments\"","BindType":"service","BindName":"${value.name}"}`, "X-Service-Token", lgMgmt)
	good := key.sign(f, claims(nil))
	for _, seed := range []string{
		loginBody("m", good),
		`{"AuthMethod":"m","BearerToken":"` + good + `","Meta":{"pod":"web-1"}}`,
		`{"AuthMethod":"m","Identity":{"value.name":"x","list.groups":["a"]}}`,
		`{"AuthMethod":"m","BearerToken":"a.b.c"}`,
		`{"AuthMethod":"nope","BearerToken":"x"}`,
		`{"AuthMethod":"m","Identity":{"value.name":1}}`,
		`{}`, `nul`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, explain bool) {
		path, headers := loginPath, []string{}
		if explain {
			path, headers = explainPath, []string{"X-Service-Token", lgMgmt}
		}
		status, resp := fuzzDo(t, s.URL, "POST", path, body, headers...)
		expect4xx(t, "POST "+path+" "+body, status, resp)
	})
}

// FuzzDeploymentOpBody fuzzes the bodies of the deployment operations.
func FuzzDeploymentOpBody(f *testing.F) {
	fx := deploytest.Start(f)
	d, allocs := fx.Deploy(fx.RegisterJob(deploytest.Job("default", "web", "v0", deploytest.Group{Name: "g", Count: 2, Canary: 1})))
	ops := []string{"fail", "pause", "promote", "allocation-health", "unblock"}
	for i, body := range []string{
		fmt.Sprintf(`{"DeploymentID":%q}`, d.ID),
		fmt.Sprintf(`{"DeploymentID":%q,"Pause":true}`, d.ID),
		fmt.Sprintf(`{"DeploymentID":%q,"All":false,"Groups":["g","nope"]}`, d.ID),
		fmt.Sprintf(`{"DeploymentID":%q,"HealthyAllocationIDs":[%q],"UnhealthyAllocationIDs":["x"]}`, d.ID, allocs[0].ID),
		fmt.Sprintf(`{"DeploymentID":%q,"Region":"global","Namespace":"default"}`, d.ID),
	} {
		f.Add(uint8(i), body)
	}
	f.Add(uint8(2), `{"DeploymentID":"x","PromotedAt":-1}`)
	f.Fuzz(func(t *testing.T, op uint8, body string) {
		path := "/v1/deployment/" + ops[int(op)%len(ops)] + "/" + d.ID
		status, resp := fuzzDo(t, fx.URL, "POST", path, body)
		expect4xx(t, "POST "+path+" "+body, status, resp)
	})
}

// FuzzClientProtocolBody fuzzes what client nodes send: registration,
// heartbeat and allocation updates.
func FuzzClientProtocolBody(f *testing.F) {
	ts := servertest.Start(f, quiet)
	reg := ntNode("fuzz-node")
	regJSON, _ := json.Marshal(reg)
	if resp := ts.Do(f, "PUT", "/v1/client/register", string(regJSON)); resp.Status != 200 {
		f.Fatalf("register: %s", resp)
	}
	paths := []string{"/v1/client/register", "/v1/client/heartbeat/" + reg.ID, "/v1/client/allocations"}
	for i, body := range []string{
		string(regJSON),
		``,
		fmt.Sprintf(`{"NodeID":%q,"Allocs":[{"ID":"6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d","ClientStatus":"running","TaskStates":{"t":{"State":"running"}},"DeploymentStatus":{"Healthy":true}}]}`, reg.ID),
	} {
		f.Add(uint8(i), body)
	}
	f.Add(uint8(0), `{"Name":"n","Datacenter":"dc1","Meta":{"a":"b"},"Attributes":{"x":"y"},"Drivers":{"d":null}}`)
	f.Add(uint8(2), `{"NodeID":"x","Allocs":[null]}`)
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		path := paths[int(which)%len(paths)]
		status, resp := fuzzDo(t, ts.URL, "PUT", path, body)
		expect4xx(t, "PUT "+path+" "+body, status, resp)
	})
}
