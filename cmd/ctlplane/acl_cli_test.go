package main

// These tests run the acl, login and logout commands in-process through
// run() against real servers (servertest) or, for request construction, an
// httptest server that checks what the command sends.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const mgmtSecret = "4f1a9a3e-5a63-4c8e-9d7e-6a5b2f0c1d11"

// cliResult is one run of a command.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs `ctlplane args...` in-process.
func runCLI(args ...string) cliResult {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return cliResult{code, stdout.String(), stderr.String()}
}

// cliAt runs a command against the server at url with token (appended as flags).
func cliAt(url, token string, args ...string) cliResult {
	return runCLI(append(args, "-address="+url, "-token="+token)...)
}

// ok fails the test unless the command succeeded, and returns its output.
func (r cliResult) ok(t *testing.T) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

// fails checks that the command exited 1 and printed wantErr (a prefix of
// its stderr).
func (r cliResult) fails(t *testing.T, wantErr string) {
	t.Helper()
	if r.code != 1 || !strings.HasPrefix(r.stderr, wantErr) {
		t.Fatalf("want exit 1 and stderr starting %q, got exit %d, stderr %q, stdout %q", wantErr, r.code, r.stderr, r.stdout)
	}
}

// jsonOut decodes a -format=json output.
func jsonOut(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}

// kvField returns a field of a key/value block ("Name:   value").
func kvField(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:[ ]+(\S.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s field in:\n%s", name, out)
	}
	return m[1]
}

func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestACLBootstrapCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(""))
	out := runCLI("acl", "bootstrap", "-address="+ts.URL).ok(t)
	mustContain(t, out, "Bootstrap Token (Global Management)", "global-management", "Policies:")
	secret := kvField(t, out, "SecretID")
	accessor := kvField(t, out, "AccessorID")

	// The minted token works, and is a management token.
	var self api.ACLToken
	jsonOut(t, cliAt(ts.URL, secret, "acl", "token", "read", "-self", "-format=json").ok(t), &self)
	if self.AccessorID != accessor || len(self.Policies) != 1 || self.Policies[0].ID != api.GlobalManagementPolicyID {
		t.Fatalf("token/self = %+v", self)
	}

	// Once only.
	runCLI("acl", "bootstrap", "-address="+ts.URL).fails(t, "Error: 403 Permission denied: ACL bootstrap no longer allowed (reset index: ")
	runCLI("acl", "bootstrap", "-address="+ts.URL, "-format=json").fails(t, "Error: 403 Permission denied: ACL bootstrap no longer allowed (reset index: ")
}

func TestACLPolicyCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	acl := func(args ...string) cliResult {
		return cliAt(ts.URL, mgmtSecret, append([]string{"acl", "policy"}, args...)...)
	}

	rulesFile := filepath.Join(t.TempDir(), "readers.hcl")
	if err := os.WriteFile(rulesFile, []byte("acl = \"read\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := acl("create", "-name=readers", "-description=read ACLs", "-rules=@"+rulesFile).ok(t)
	mustContain(t, out, "Rules:\nacl = \"read\"\n")
	if kvField(t, out, "Name") != "readers" || kvField(t, out, "Description") != "read ACLs" {
		t.Fatalf("create printed:\n%s", out)
	}
	id := kvField(t, out, "ID")

	var p api.ACLPolicy
	jsonOut(t, acl("read", "-name=readers", "-format=json").ok(t), &p)
	if p.ID != id || p.Name != "readers" || p.Rules != "acl = \"read\"\n" || p.CreateIndex == 0 {
		t.Fatalf("read -name = %+v", p)
	}
	mustContain(t, acl("read", "-id="+id).ok(t), "readers", "Rules:")
	mustContain(t, acl("list").ok(t), "readers", "global-management")
	var list []api.ACLPolicy
	jsonOut(t, acl("list", "-format=json").ok(t), &list)
	if len(list) != 2 {
		t.Fatalf("list = %+v", list)
	}

	// update: rules from stdin; then by name, with the rules kept.
	aclStdin = strings.NewReader(`operator = "read"`)
	t.Cleanup(func() { aclStdin = os.Stdin })
	mustContain(t, acl("update", "-id="+id, "-description=ops", "-rules=-").ok(t), `operator = "read"`, "ops")
	jsonOut(t, acl("update", "-name=readers", "-description=again", "-format=json").ok(t), &p)
	if p.ID != id || p.Description != "again" || p.Rules != `operator = "read"` {
		t.Fatalf("update -name = %+v", p)
	}
	// rename through -id
	if kvField(t, acl("update", "-id="+id, "-name=operators").ok(t), "Name") != "operators" {
		t.Fatal("rename did not happen")
	}

	// The server's validation message comes through.
	acl("create", "-name=bad", `-rules=acl = "list"`).fails(t, `Error: 400 Invalid acl policy: "list"`)

	if out := acl("delete", "-name=operators").ok(t); out != "Policy \"operators\" deleted successfully\n" {
		t.Fatalf("delete printed %q", out)
	}
	acl("read", "-id="+id).fails(t, "Error: 404 Requested policy does not exist: ACL not found\n")
	acl("delete", "-id="+id).fails(t, "Error: 404 Cannot find policy to delete\n")
}

func TestACLTokenCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	acl := func(args ...string) cliResult { return cliAt(ts.URL, mgmtSecret, append([]string{"acl"}, args...)...) }
	acl("policy", "create", "-name=ops", `-rules=operator = "read"`).ok(t)

	var tok api.ACLToken
	jsonOut(t, acl("token", "create", "-description=ci", "-policy-name=ops", "-expires-ttl=1h",
		"-service-identity=web:dc1,dc2", "-node-identity=n1:dc1", "-format=json").ok(t), &tok)
	if tok.Description != "ci" || len(tok.Policies) != 1 || tok.Policies[0].Name != "ops" || tok.ExpirationTTL != time.Hour ||
		tok.ExpirationTime == nil || time.Until(*tok.ExpirationTime) < 50*time.Minute || tok.SecretID == "" {
		t.Fatalf("created %+v", tok)
	}
	wantSI := []*api.ACLServiceIdentity{{ServiceName: "web", Datacenters: []string{"dc1", "dc2"}}}
	if !reflect.DeepEqual(tok.ServiceIdentities, wantSI) || len(tok.NodeIdentities) != 1 || *tok.NodeIdentities[0] != (api.ACLNodeIdentity{NodeName: "n1", Datacenter: "dc1"}) {
		t.Fatalf("identities %+v %+v", tok.ServiceIdentities, tok.NodeIdentities)
	}

	out := acl("token", "read", "-id="+tok.AccessorID).ok(t)
	if kvField(t, out, "AccessorID") != tok.AccessorID || kvField(t, out, "SecretID") != tok.SecretID || kvField(t, out, "Description") != "ci" {
		t.Fatalf("read printed:\n%s", out)
	}
	mustContain(t, out, "Expiration Time:", "Policies:\n   "+tok.Policies[0].ID+" - ops\n",
		"web (Datacenters: dc1, dc2)", "n1 (Datacenter: dc1)")

	// The new token reads itself, and lacks acl:write.
	mustContain(t, cliAt(ts.URL, tok.SecretID, "acl", "token", "read", "-self").ok(t), tok.AccessorID)
	cliAt(ts.URL, tok.SecretID, "acl", "policy", "create", "-name=x").
		fails(t, "Error: 403 Permission denied: token with AccessorID '"+tok.AccessorID+"' lacks permission 'acl:write'\n")
	cliAt(ts.URL, "no-such-secret", "acl", "token", "list").fails(t, "Error: 403 ACL not found\n")

	// update keeps what no flag gives.
	var upd api.ACLToken
	jsonOut(t, acl("token", "update", "-id="+tok.AccessorID, "-description=ci2", "-format=json").ok(t), &upd)
	if upd.Description != "ci2" || len(upd.Policies) != 1 || upd.Policies[0].Name != "ops" || upd.ExpirationTTL != time.Hour || len(upd.ServiceIdentities) != 1 {
		t.Fatalf("updated %+v", upd)
	}
	jsonOut(t, acl("token", "update", "-id="+tok.AccessorID, "-node-identity=n2:dc2", "-format=json").ok(t), &upd)
	if len(upd.NodeIdentities) != 1 || upd.NodeIdentities[0].NodeName != "n2" || upd.Description != "ci2" {
		t.Fatalf("updated %+v", upd)
	}

	// chosen IDs
	accessor, secret := "6f3c1f2e-3a0b-4c55-8a8e-9b0d2c4e5f61", "0b7e4d2a-1c3f-4e5a-9b8c-7d6e5f4a3b21"
	out = acl("token", "create", "-accessor="+accessor, "-secret="+secret, "-local").ok(t)
	if kvField(t, out, "AccessorID") != accessor || kvField(t, out, "SecretID") != secret || kvField(t, out, "Local") != "true" {
		t.Fatalf("create with IDs printed:\n%s", out)
	}

	mustContain(t, acl("token", "list").ok(t), tok.AccessorID, accessor, api.AnonymousTokenID)
	if out := acl("token", "delete", "-id="+tok.AccessorID).ok(t); out != "Token \""+tok.AccessorID+"\" deleted successfully\n" {
		t.Fatalf("delete printed %q", out)
	}
	acl("token", "read", "-id="+tok.AccessorID).fails(t, "Error: 404 Requested token does not exist: ACL not found\n")
	acl("token", "create", "-policy-name=nope").fails(t, `Error: 400 No such ACL policy with name "nope"`)
	acl("token", "create", "-expires-ttl=10s").fails(t, "Error: 400 Token Expiration TTL '10s' should be between 1m0s and 24h0m0s")
}

func TestACLRoleCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	acl := func(args ...string) cliResult { return cliAt(ts.URL, mgmtSecret, append([]string{"acl"}, args...)...) }
	acl("policy", "create", "-name=ops", `-rules=operator = "read"`).ok(t)

	out := acl("role", "create", "-name=web-role", "-description=web", "-policy-name=ops",
		"-service-identity=web", "-node-identity=n1:dc1").ok(t)
	mustContain(t, out, " - ops\n", "web (Datacenters: all)", "n1 (Datacenter: dc1)")
	id := kvField(t, out, "ID")

	var role api.ACLRole
	jsonOut(t, acl("role", "read", "-name=web-role", "-format=json").ok(t), &role)
	if role.ID != id || role.Description != "web" || len(role.Policies) != 1 || role.Policies[0].Name != "ops" {
		t.Fatalf("read %+v", role)
	}

	var tok api.ACLToken
	jsonOut(t, acl("token", "create", "-role-name=web-role", "-format=json").ok(t), &tok)
	if len(tok.Roles) != 1 || tok.Roles[0].ID != id || tok.Roles[0].Name != "web-role" {
		t.Fatalf("token roles %+v", tok.Roles)
	}

	jsonOut(t, acl("role", "update", "-id="+id, "-name=renamed", "-format=json").ok(t), &role)
	if role.Name != "renamed" || role.Description != "web" || len(role.Policies) != 1 || len(role.ServiceIdentities) != 1 {
		t.Fatalf("update %+v", role)
	}
	mustContain(t, acl("role", "list").ok(t), "renamed")
	acl("role", "delete", "-name=renamed").ok(t)
	acl("role", "read", "-id="+id).fails(t, "Error: 404 Requested role does not exist: ACL not found\n")
}

func TestACLBindingRuleCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	acl := func(args ...string) cliResult {
		return cliAt(ts.URL, mgmtSecret, append([]string{"acl", "binding-rule"}, args...)...)
	}

	var rule api.BindingRule
	jsonOut(t, acl("create", "-method=minikube", "-bind-type=service", "-bind-name=k8s-${serviceaccount.name}",
		"-selector=serviceaccount.namespace==default", "-description=k8s", "-format=json").ok(t), &rule)
	want := api.BindingRule{ID: rule.ID, Description: "k8s", AuthMethod: "minikube", Selector: "serviceaccount.namespace==default",
		BindType: "service", BindName: "k8s-${serviceaccount.name}", Namespace: "default", CreateIndex: rule.CreateIndex, ModifyIndex: rule.ModifyIndex}
	if rule != want || rule.ID == "" {
		t.Fatalf("created %+v", rule)
	}

	out := acl("read", "-id="+rule.ID).ok(t)
	if kvField(t, out, "ID") != rule.ID || kvField(t, out, "AuthMethod") != "minikube" || kvField(t, out, "BindName") != "k8s-${serviceaccount.name}" ||
		kvField(t, out, "Selector") != "serviceaccount.namespace==default" {
		t.Fatalf("read printed:\n%s", out)
	}

	var list []api.BindingRule
	jsonOut(t, acl("list", "-method=minikube", "-format=json").ok(t), &list)
	if len(list) != 1 || list[0].ID != rule.ID {
		t.Fatalf("list -method=minikube = %+v", list)
	}
	jsonOut(t, acl("list", "-method=other", "-format=json").ok(t), &list)
	if len(list) != 0 {
		t.Fatalf("list -method=other = %+v", list)
	}
	mustContain(t, acl("list").ok(t), rule.ID)

	jsonOut(t, acl("update", "-id="+rule.ID, "-bind-type=role", "-bind-name=admins", "-format=json").ok(t), &rule)
	if rule.BindType != "role" || rule.BindName != "admins" || rule.Selector != "serviceaccount.namespace==default" || rule.Description != "k8s" || rule.AuthMethod != "minikube" {
		t.Fatalf("updated %+v", rule)
	}
	acl("update", "-id="+rule.ID, "-bind-type=nope").fails(t, "Error: 400 ")

	if out := acl("delete", "-id="+rule.ID).ok(t); out != "Binding rule \""+rule.ID+"\" deleted successfully\n" {
		t.Fatalf("delete printed %q", out)
	}
	acl("read", "-id="+rule.ID).fails(t, "Error: 404 Requested binding rule does not exist: ACL not found\n")
	acl("read", "-id=not-a-uuid").fails(t, "Error: 400 Invalid binding rule ID \"not-a-uuid\"")
}

func TestACLCLIUsageErrors(t *testing.T) {
	addr := "-address=http://127.0.0.1:1"
	for _, c := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"acl"}, "Usage: ctlplane acl"},
		{[]string{"acl", "frob"}, `unknown acl command "frob"`},
		{[]string{"acl", "policy"}, "Usage: ctlplane acl policy"},
		{[]string{"acl", "policy", "frob"}, `unknown acl policy command "frob"`},
		{[]string{"acl", "policy", "create", addr}, "Error: -name is required\n\nUsage: ctlplane acl policy"},
		{[]string{"acl", "policy", "read", addr}, "Error: -id or -name is required"},
		{[]string{"acl", "policy", "list", addr, "-format=yaml"}, `Error: invalid -format "yaml"`},
		{[]string{"acl", "policy", "list", addr, "extra"}, "Error: unexpected arguments: [extra]"},
		{[]string{"acl", "policy", "delete", addr, "-format=json"}, "flag provided but not defined: -format"},
		{[]string{"acl", "token", "read", addr}, "Error: -id or -self is required"},
		{[]string{"acl", "token", "update", addr}, "Error: -id is required"},
		{[]string{"acl", "token", "create", addr, "-node-identity=n1"}, `Error: invalid -node-identity "n1": use NAME:DATACENTER`},
		{[]string{"acl", "token", "create", addr, "-service-identity=:dc1"}, `Error: invalid -service-identity ":dc1"`},
		{[]string{"acl", "role", "create", addr}, "Error: -name is required"},
		{[]string{"acl", "auth-method", "create", addr, "-name=m"}, "Error: -type is required"},
		{[]string{"acl", "auth-method", "read", addr}, "Error: -name is required"},
		{[]string{"acl", "binding-rule", "create", addr, "-method=m"}, "Error: -method, -bind-type and -bind-name are required"},
		{[]string{"acl", "binding-rule", "delete", addr}, "Error: -id is required"},
		{[]string{"login", addr, "-method=m"}, "Error: -method and -bearer-token-file are required"},
		{[]string{"login", addr, "-method=m", "-bearer-token-file=x", "-meta=novalue"}, `Error: invalid -meta "novalue": use KEY=VALUE`},
		{[]string{"logout", addr, "-token="}, "Error: a token is required"},
		// a server that cannot be reached
		{[]string{"acl", "policy", "list", addr}, "Error: Get \"http://127.0.0.1:1/v1/acl/policies\""},
	} {
		r := runCLI(c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.wantErr) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and stderr with %q", c.args, r.code, r.stdout, r.stderr, c.wantErr)
		}
	}
	if r := runCLI("acl", "-h"); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: ctlplane acl") {
		t.Errorf("acl -h: %+v", r)
	}
}

// fakeServer answers the requests a test expects, in order; each check
// inspects the request (its body already read) and returns the answer.
type fakeStep struct {
	method, path string
	check        func(t *testing.T, r *http.Request, body []byte) (int, string)
}

func fakeServer(t *testing.T, steps ...fakeStep) *httptest.Server {
	t.Helper()
	next := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if next >= len(steps) {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		s := steps[next]
		next++
		if r.Method != s.method || r.URL.RequestURI() != s.path {
			t.Errorf("request %d: %s %s, want %s %s", next, r.Method, r.URL.RequestURI(), s.method, s.path)
		}
		code, answer := s.check(t, r, body)
		if code != http.StatusOK {
			http.Error(w, answer, code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(func() {
		ts.Close()
		if next != len(steps) {
			t.Errorf("%d of %d expected requests were made", next, len(steps))
		}
	})
	return ts
}

// strictBody decodes body into v, rejecting unknown fields.
func strictBody(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("body %s: %v", body, err)
	}
}

const loginToken = `{"AccessorID":"a1b2c3d4-0000-4000-8000-000000000001","SecretID":"5ec2e7ab-0000-4000-8000-000000000002","Description":"token created via login: {\"host\":\"h1\"}","AuthMethod":"minikube","Local":true,"CreateTime":"2024-01-01T00:00:00Z","Hash":null,"Namespace":"default","CreateIndex":9,"ModifyIndex":9}`

func TestLoginCLI(t *testing.T) {
	dir := t.TempDir()
	bearer := filepath.Join(dir, "jwt")
	if err := os.WriteFile(bearer, []byte("header.payload.signature\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkLogin := func(t *testing.T, r *http.Request, body []byte) (int, string) {
		if r.Header.Get("X-Service-Token") != "" {
			t.Errorf("login sent a token: %q", r.Header.Get("X-Service-Token"))
		}
		var req loginRequest
		strictBody(t, body, &req)
		want := loginRequest{AuthMethod: "minikube", BearerToken: "header.payload.signature", Meta: map[string]string{"host": "h1", "env": "a=b"}}
		if !reflect.DeepEqual(req, want) {
			t.Errorf("login body %+v, want %+v", req, want)
		}
		return http.StatusOK, loginToken
	}
	login := fakeStep{http.MethodPost, "/v1/acl/login", checkLogin}
	ts := fakeServer(t, login, login, login, login,
		fakeStep{http.MethodPost, "/v1/acl/login", func(*testing.T, *http.Request, []byte) (int, string) {
			return http.StatusUnauthorized, "Failed to validate bearer token: token is expired"
		}},
		fakeStep{http.MethodPost, "/v1/acl/logout", func(t *testing.T, r *http.Request, body []byte) (int, string) {
			if got := r.Header.Get("X-Service-Token"); got != "5ec2e7ab-0000-4000-8000-000000000002" {
				t.Errorf("logout token %q", got)
			}
			if len(body) != 0 {
				t.Errorf("logout body %q", body)
			}
			return http.StatusOK, "true"
		}},
		fakeStep{http.MethodPost, "/v1/acl/logout", func(*testing.T, *http.Request, []byte) (int, string) {
			return http.StatusForbidden, "ACL not found"
		}},
	)
	args := []string{"login", "-address=" + ts.URL, "-token=stale-env-token", "-method=minikube", "-bearer-token-file=" + bearer, "-meta=host=h1", "-meta=env=a=b"}

	if out := runCLI(args...).ok(t); out != "5ec2e7ab-0000-4000-8000-000000000002\n" {
		t.Fatalf("login printed %q", out)
	}
	var tok api.ACLToken
	jsonOut(t, runCLI(append(args, "-format=json")...).ok(t), &tok)
	if tok.AuthMethod != "minikube" || tok.SecretID != "5ec2e7ab-0000-4000-8000-000000000002" {
		t.Fatalf("login -format=json = %+v", tok)
	}

	// The sink file gets the secret alone, mode 0600, also over an existing file.
	sink := filepath.Join(dir, "token")
	if out := runCLI(append(args, "-token-sink-file="+sink)...).ok(t); out != "" {
		t.Fatalf("login with a sink printed %q", out)
	}
	if err := os.Chmod(sink, 0o644); err != nil {
		t.Fatal(err)
	}
	runCLI(append(args, "-token-sink-file="+sink)...).ok(t)
	b, err := os.ReadFile(sink)
	if err != nil || string(b) != "5ec2e7ab-0000-4000-8000-000000000002" {
		t.Fatalf("sink holds %q (%v)", b, err)
	}
	if fi, err := os.Stat(sink); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("sink mode %v (%v)", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("left files behind: %v", entries)
	}

	runCLI(args...).fails(t, "Error: 401 Failed to validate bearer token: token is expired\n")

	if r := runCLI("logout", "-address="+ts.URL, "-token=5ec2e7ab-0000-4000-8000-000000000002"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("logout: %+v", r)
	}
	runCLI("logout", "-address="+ts.URL, "-token=5ec2e7ab-0000-4000-8000-000000000002").fails(t, "Error: 403 ACL not found\n")
}

// TestACLAuthMethodCLI checks what the auth-method commands send.
func TestACLAuthMethodCLI(t *testing.T) {
	configFile := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(configFile, []byte(`{"BoundIssuer":"https://issuer","JWTValidationPubKeys":["PEM"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stored := `{"Name":"minikube","Type":"jwt","DisplayName":"Minikube","MaxTokenTTL":"1h0m0s","TokenLocality":"local","Config":{"BoundIssuer":"https://issuer","JWTValidationPubKeys":["PEM"]},"Namespace":"default","CreateIndex":5,"ModifyIndex":5}`
	ok := func(answer string, check func(t *testing.T, m map[string]any)) func(*testing.T, *http.Request, []byte) (int, string) {
		return func(t *testing.T, r *http.Request, body []byte) (int, string) {
			if r.Header.Get("X-Service-Token") != mgmtSecret {
				t.Errorf("token %q", r.Header.Get("X-Service-Token"))
			}
			if check != nil {
				var m map[string]any
				strictBody(t, body, &m)
				check(t, m)
			}
			return http.StatusOK, answer
		}
	}
	ts := fakeServer(t,
		fakeStep{http.MethodPut, "/v1/acl/auth-method", ok(stored, func(t *testing.T, m map[string]any) {
			want := map[string]any{"Name": "minikube", "Type": "jwt", "DisplayName": "Minikube", "MaxTokenTTL": "1h0m0s", "TokenLocality": "local",
				"Config": map[string]any{"BoundIssuer": "https://issuer", "JWTValidationPubKeys": []any{"PEM"}}}
			if !reflect.DeepEqual(m, want) {
				t.Errorf("create body %v", m)
			}
		})},
		fakeStep{http.MethodGet, "/v1/acl/auth-method/minikube", ok(stored, nil)},
		fakeStep{http.MethodGet, "/v1/acl/auth-method/minikube", ok(stored, nil)},
		fakeStep{http.MethodPut, "/v1/acl/auth-method/minikube", ok(stored, func(t *testing.T, m map[string]any) {
			if m["Description"] != "dev cluster" || m["MaxTokenTTL"] != "1h0m0s" || m["Type"] != "jwt" || m["Config"] == nil {
				t.Errorf("update body %v", m)
			}
		})},
		fakeStep{http.MethodGet, "/v1/acl/auth-methods", ok("["+stored+"]", nil)},
		fakeStep{http.MethodDelete, "/v1/acl/auth-method/minikube", ok("true", nil)},
	)
	acl := func(args ...string) cliResult {
		return cliAt(ts.URL, mgmtSecret, append([]string{"acl", "auth-method"}, args...)...)
	}
	out := acl("create", "-name=minikube", "-type=jwt", "-display-name=Minikube", "-max-token-ttl=1h", "-token-locality=local", "-config=@"+configFile).ok(t)
	if kvField(t, out, "MaxTokenTTL") != "1h0m0s" || kvField(t, out, "Type") != "jwt" {
		t.Fatalf("create printed:\n%s", out)
	}
	mustContain(t, out, "Config:\n{\n", `"BoundIssuer": "https://issuer"`)
	var m authMethod
	jsonOut(t, acl("read", "-name=minikube", "-format=json").ok(t), &m)
	if m.Name != "minikube" || time.Duration(m.MaxTokenTTL) != time.Hour {
		t.Fatalf("read %+v", m)
	}
	acl("update", "-name=minikube", "-description=dev cluster").ok(t)
	mustContain(t, acl("list").ok(t), "minikube")
	if out := acl("delete", "-name=minikube").ok(t); out != "Auth method \"minikube\" deleted successfully\n" {
		t.Fatalf("delete printed %q", out)
	}
}

// TestLoginCLIWithServer logs in through a real jwt auth method set up with
// the CLI, and logs out.
func TestLoginCLIWithServer(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	acl := func(args ...string) cliResult { return cliAt(ts.URL, mgmtSecret, append([]string{"acl"}, args...)...) }

	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]any{
		"JWTValidationPubKeys": []string{string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))},
		"BoundIssuer":          "https://issuer.example",
		"ClaimMappings":        map[string]string{"sub": "name"},
	})
	dir := t.TempDir()
	configFile := filepath.Join(dir, "config.json")
	if err := os.WriteFile(configFile, config, 0o600); err != nil {
		t.Fatal(err)
	}

	out := acl("auth-method", "create", "-name=minikube", "-type=jwt", "-display-name=Minikube", "-max-token-ttl=1h", "-config=@"+configFile).ok(t)
	if kvField(t, out, "Name") != "minikube" || kvField(t, out, "MaxTokenTTL") != "1h0m0s" {
		t.Fatalf("create printed:\n%s", out)
	}
	mustContain(t, out, `"BoundIssuer": "https://issuer.example"`)
	var m authMethod
	jsonOut(t, acl("auth-method", "update", "-name=minikube", "-description=dev", "-format=json").ok(t), &m)
	if m.Description != "dev" || m.DisplayName != "Minikube" || time.Duration(m.MaxTokenTTL) != time.Hour || m.Config["BoundIssuer"] != "https://issuer.example" {
		t.Fatalf("update %+v", m)
	}
	mustContain(t, acl("auth-method", "list").ok(t), "minikube")
	acl("auth-method", "read", "-name=nope").fails(t, "Error: 404 ")
	acl("binding-rule", "create", "-method=minikube", "-bind-type=service", "-bind-name=svc-${value.name}").ok(t)

	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	jwtText, err := jwt.Signed(signer).Claims(map[string]any{
		"iss": "https://issuer.example", "sub": "web", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	bearer := filepath.Join(dir, "jwt")
	if err := os.WriteFile(bearer, []byte(jwtText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	secret := strings.TrimSpace(runCLI("login", "-address="+ts.URL, "-method=minikube", "-bearer-token-file="+bearer, "-meta=host=h1").ok(t))
	var tok api.ACLToken
	jsonOut(t, cliAt(ts.URL, secret, "acl", "token", "read", "-self", "-format=json").ok(t), &tok)
	if tok.AuthMethod != "minikube" || len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "svc-web" || tok.ExpirationTime == nil {
		t.Fatalf("login token %+v", tok)
	}

	sink := filepath.Join(dir, "token")
	runCLI("login", "-address="+ts.URL, "-method=minikube", "-bearer-token-file="+bearer, "-token-sink-file="+sink).ok(t)
	sunk, err := os.ReadFile(sink)
	if err != nil || !uuidLike.Match(sunk) {
		t.Fatalf("sink holds %q (%v)", sunk, err)
	}

	if err := os.WriteFile(bearer, []byte("not-a-jwt"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI("login", "-address="+ts.URL, "-method=minikube", "-bearer-token-file="+bearer).fails(t, "Error: 401 ")

	if r := runCLI("logout", "-address="+ts.URL, "-token="+secret); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("logout: %+v", r)
	}
	cliAt(ts.URL, secret, "acl", "token", "read", "-self").fails(t, "Error: 403 token does not exist: ACL not found\n")
	runCLI("logout", "-address="+ts.URL, "-token="+mgmtSecret).fails(t, "Error: 403 Permission denied: token wasn't created via login\n")

	if out := acl("auth-method", "delete", "-name=minikube").ok(t); out != "Auth method \"minikube\" deleted successfully\n" {
		t.Fatalf("delete printed %q", out)
	}
	// Deleting the method deleted the tokens it minted.
	cliAt(ts.URL, string(sunk), "acl", "token", "read", "-self").fails(t, "Error: 403 token does not exist: ACL not found\n")
}

var uuidLike = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
