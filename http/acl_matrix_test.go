package http_test

// The permission matrix of design §7: every endpoint × every kind of caller
// × ACLs on and off, with the exact status and text of each answer.
//
// Callers: no token (the anonymous token), a secret no token has, tokens
// whose policy grants acl:read, acl:write, operator:read or operator:write,
// the management token, and a token of namespace team1 with acl:read (which
// also shows step 3 of namespace resolution: its reads of binding rules
// look in team1).

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// Permissions, as the deny texts name them.
const (
	needNone       = ""               // no check at all: the same answer for every caller, even an unknown secret
	needOpen       = "open"           // /v1/status/*: open to everyone, the token is never looked at
	needACLRead    = "acl:read"       // binding rules and ACL objects, reads
	needACLWrite   = "acl:write"      // binding rules and ACL objects, writes
	needOpRead     = "operator:read"  // raft configuration
	needOpWrite    = "operator:write" // peer removal
	needManagement = "management"     // snapshot save and restore
	needSelf       = "self"           // token/self: any known token, itself
	needKnown      = "known"          // the UI's capabilities: any known token (anonymous too), about itself
	needBootstrap  = "bootstrap"      // PUT /v1/acl/bootstrap: no token needed, once
	needLogin      = "login"          // POST /v1/acl/login: no token needed (any sent is ignored)
	needLogout     = "logout"         // POST /v1/acl/logout: the caller's own token, made by a login
	needNodeRead   = "node:read"      // nodes read API (Nomad-side: every refusal is "Permission denied")
	needNodeWrite  = "node:write"     // the client protocol
	needNSReadJob  = "namespace:read-job"
	needNomadToken = "nomad:token" // allocation read: checked on the allocation's namespace, so only an unknown secret is refused up front
)

// nomadNeeds are the needs of the Nomad-side endpoints, refused with one text.
var nomadNeeds = map[string]bool{needNodeRead: true, needNodeWrite: true, needNSReadJob: true, needNomadToken: true, needNSAdmin: true}

const (
	anonymousDenyFmt = "Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token."
	tokenDenyFmt     = "Permission denied: token with AccessorID '%s' lacks permission '%s'"
	bootstrapHint    = " The ACL system has no management token yet: run `ctlplane acl bootstrap` (PUT /v1/acl/bootstrap) once to create one, or start the agents with -acl-initial-management-token=SECRET."
	aclNotFound      = "ACL not found"
	// selfNotFound is upstream's token/self answer to an unknown secret.
	selfNotFound  = "token does not exist: ACL not found"
	aclDisabled   = "ACL support disabled"
	resetIndexFmt = "Permission denied: ACL bootstrap no longer allowed (reset index: %d)"
)

// anonymousDeny is the 403 text the anonymous token gets on a dev agent,
// or on a persistent agent that has been bootstrapped.
func anonymousDeny(perm string) string { return fmt.Sprintf(anonymousDenyFmt, perm) }

// tokenDeny is the 403 text a known token without the permission gets.
func tokenDeny(accessor, perm string) string { return fmt.Sprintf(tokenDenyFmt, accessor, perm) }

// acxServer is a test server and the management secret the tests act as
// ("" when ACLs are off: no token is needed).
type acxServer struct {
	*servertest.TestServer
	mgmt string
}

// acxStart starts a server and, with ACLs on, waits until the leader has
// created the built-in ACL objects (it does so just after winning the
// election, so the first requests could otherwise meet `ACL not found`).
func acxStart(t *testing.T, mgmt string, opts ...servertest.Option) *acxServer {
	t.Helper()
	ts := servertest.Start(t, opts...)
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	if ts.Config.ACLEnabled {
		s.waitACLReady(t)
	}
	return s
}

// waitACLReady waits until the built-in ACL objects and s's management
// token resolve (waitACLReady below).
func (s *acxServer) waitACLReady(t testing.TB) {
	t.Helper()
	var secrets []string
	if s.mgmt != "" {
		secrets = append(secrets, s.mgmt)
	}
	waitACLReady(t, s.TestServer, secrets...)
}

// as sends a request with secret in X-Service-Token ("" sends no token).
func (s *acxServer) as(t testing.TB, secret, method, path, body string) *servertest.Response {
	t.Helper()
	if secret == "" {
		return s.Do(t, method, path, body)
	}
	return s.Do(t, method, path, body, "X-Service-Token", secret)
}

// mustAs sends a request that must be answered with 200 and returns the body.
func (s *acxServer) mustAs(t testing.TB, secret, method, path, body string) *servertest.Response {
	t.Helper()
	resp := s.as(t, secret, method, path, body)
	if resp.Status != 200 {
		t.Fatalf("%s %s %s: %s, want 200", method, path, body, resp)
	}
	return resp
}

// must is mustAs as the management token.
func (s *acxServer) must(t testing.TB, method, path, body string) *servertest.Response {
	t.Helper()
	return s.mustAs(t, s.mgmt, method, path, body)
}

// policy creates a policy and returns it.
func (s *acxServer) policy(t testing.TB, name, rules string) state.ACLPolicy {
	t.Helper()
	var p state.ACLPolicy
	s.must(t, "PUT", "/v1/acl/policy", fmt.Sprintf(`{"Name":%s,"Rules":%s}`, js(name), js(rules))).JSON(t, &p)
	return p
}

// token creates a token from a JSON body and returns it.
func (s *acxServer) token(t testing.TB, body string) state.ACLToken {
	t.Helper()
	var tok state.ACLToken
	s.must(t, "PUT", "/v1/acl/token", body).JSON(t, &tok)
	return tok
}

// role creates a role from a JSON body and returns it.
func (s *acxServer) role(t testing.TB, body string) state.ACLRole {
	t.Helper()
	var r state.ACLRole
	s.must(t, "PUT", "/v1/acl/role", body).JSON(t, &r)
	return r
}

// tokenWithRules creates a policy with rules and a token linked to it.
func (s *acxServer) tokenWithRules(t testing.TB, name, rules, extra string) state.ACLToken {
	t.Helper()
	p := s.policy(t, name, rules)
	return s.token(t, fmt.Sprintf(`{"Description":%s,"Policies":[{"ID":%s}]%s}`, js(name), js(p.ID), extra))
}

// fingerprint sums up the whole state: every table's row count and index.
// A rejected request must leave it as it was.
func (s *acxServer) fingerprint() string {
	st := s.State()
	counts := st.Counts()
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s:%d@%d ", name, counts[name], st.TableIndex(name))
	}
	return b.String()
}

// acxCaller is one kind of caller of the matrix.
type acxCaller struct {
	name     string
	secret   string // "" sends no token
	accessor string // the token's AccessorID; "" for an unknown secret
	known    bool   // the secret names a token
	perms    map[string]bool
}

func (c *acxCaller) anonymous() bool { return c.known && c.secret == "" }

// acxWant is an expected answer. body "" with status 200 means any JSON body.
type acxWant struct {
	status int
	body   string
}

// acxEndpoint is one row of the matrix: a method and path, what it needs,
// and what a caller that passes the check gets. Placeholders in path and
// body are filled per request (see acxFixture.expand).
type acxEndpoint struct {
	method, path, body string
	need               string
	ok                 acxWant
	// nsOK, when set, is what the team1 token gets instead of ok when it
	// passes the check: its reads look in team1 (resolution step 3).
	nsOK *acxWant
	// okCT is the Content-Type of a success (default application/json).
	okCT string
}

// acxFixture holds the objects the rows act on, created by the management
// token (no token when ACLs are off), and makes fresh ones for the rows
// that change or delete.
type acxFixture struct {
	s      *acxServer
	n      int
	policy state.ACLPolicy
	role   state.ACLRole
	token  state.ACLToken
	rule   rule
	// methodConfig is the Config of a jwt auth method (one static key).
	methodConfig string
}

func newACXFixture(t *testing.T, s *acxServer) *acxFixture {
	f := &acxFixture{s: s}
	f.policy = s.policy(t, "fixture-policy", `acl = "read"`)
	f.role = s.role(t, `{"Name":"fixture-role","Policies":[{"Name":"fixture-policy"}]}`)
	f.token = s.token(t, `{"Description":"fixture token"}`)
	var r rule
	s.must(t, "PUT", rulePath, minimalBody).JSON(t, &r)
	f.rule = r
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	f.methodConfig = fmt.Sprintf(`{"JWTValidationPubKeys":[%s]}`, js(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))))
	s.must(t, "PUT", "/v1/acl/auth-method", f.expand(t, `{"Name":"fixture-method","Type":"jwt","Config":{method-config}}`))
	return f
}

// expand fills the placeholders of a path or body:
//
//	{n}                          a number never used before (for unique names)
//	{policy} {role} {token} {rule}  the fixture objects' IDs
//	{fresh-policy} {fresh-role} {fresh-token} {fresh-rule}  IDs of objects made for this request
//	{fresh-method}               the name of an auth method made for this request
//	{method-config}              a valid jwt auth method Config
//	{snapshot}                   a snapshot archive of the current state
func (f *acxFixture) expand(t *testing.T, s string) string {
	t.Helper()
	f.n++
	s = strings.ReplaceAll(s, "{n}", fmt.Sprint(f.n))
	s = strings.ReplaceAll(s, "{method-config}", f.methodConfig)
	repl := map[string]func() string{
		"{policy}": func() string { return f.policy.ID },
		"{role}":   func() string { return f.role.ID },
		"{token}":  func() string { return f.token.AccessorID },
		"{rule}":   func() string { return f.rule.ID },
		"{fresh-policy}": func() string {
			return f.s.policy(t, fmt.Sprintf("fresh-%d", f.n), `operator = "read"`).ID
		},
		"{fresh-role}": func() string {
			return f.s.role(t, fmt.Sprintf(`{"Name":"fresh-%d"}`, f.n)).ID
		},
		"{fresh-token}": func() string { return f.s.token(t, `{"Description":"fresh"}`).AccessorID },
		"{fresh-rule}": func() string {
			var r rule
			f.s.must(t, "PUT", rulePath, minimalBody).JSON(t, &r)
			return r.ID
		},
		"{fresh-method}": func() string {
			name := fmt.Sprintf("fresh-%d", f.n)
			f.s.must(t, "PUT", "/v1/acl/auth-method", fmt.Sprintf(`{"Name":%q,"Type":"jwt","Config":%s}`, name, f.methodConfig))
			return name
		},
		"{snapshot}": func() string { return f.s.must(t, "GET", "/v1/snapshot", "").Body },
	}
	for k, fn := range repl {
		if strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, fn())
		}
	}
	return s
}

// badPoolName is the refusal of a node pool named "bad name".
const badPoolName = "invalid node pool \"bad name\": 1 error occurred:\n\t* invalid name \"bad name\", must match regex ^[a-zA-Z0-9-_]{1,128}$\n\n"

// acxEndpoints is every route the API serves (the h.handle calls in
// http/*.go), each method on it, and what it needs (design §7).
func acxEndpoints() []acxEndpoint {
	ok := acxWant{200, ""}
	okTrue := acxWant{200, "true"}
	return append(append(append(append(jobsMatrixRows(), deploymentsMatrixRows()...), nomadCLIMatrixRows()...), servicesMatrixRows()...), []acxEndpoint{
		// Status: open.
		{method: "GET", path: "/v1/status/leader", need: needOpen, ok: ok},
		{method: "GET", path: "/v1/status/peers", need: needOpen, ok: ok},
		// The event stream never ends: the row checks its input (ACL
		// filtering is TestEventStreamACL's, server/agent).
		{method: "GET", path: "/v1/event/stream?index=bad", need: needNone, ok: acxWant{400, `Invalid index "bad": it must be a non-negative integer`}},

		// Binding rules: acl:read / acl:write.
		{method: "GET", path: "/v1/acl/binding-rules", need: needACLRead, ok: ok, nsOK: &acxWant{200, "[]"}},
		{method: "PUT", path: "/v1/acl/binding-rule", body: minimalBody, need: needACLWrite, ok: ok},
		{method: "PUT", path: "/v1/acl/binding-rule/", body: minimalBody, need: needACLWrite, ok: ok},
		{method: "GET", path: "/v1/acl/binding-rule/", need: needNone, ok: acxWant{400, "Missing binding rule ID"}},
		{method: "DELETE", path: "/v1/acl/binding-rule/", need: needNone, ok: acxWant{400, "Missing binding rule ID"}},
		{method: "GET", path: "/v1/acl/binding-rule/{rule}", need: needACLRead, ok: ok,
			nsOK: &acxWant{404, "Requested binding rule does not exist: ACL not found"}},
		{method: "PUT", path: "/v1/acl/binding-rule/{rule}", body: `{"BindType":"service","BindName":"web{n}"}`, need: needACLWrite, ok: ok},
		{method: "DELETE", path: "/v1/acl/binding-rule/{fresh-rule}", need: needACLWrite, ok: okTrue},

		// Auth methods: acl:read / acl:write.
		{method: "GET", path: "/v1/acl/auth-methods", need: needACLRead, ok: ok, nsOK: &acxWant{200, "[]"}},
		{method: "PUT", path: "/v1/acl/auth-method", body: `{"Name":"m{n}","Type":"jwt","Config":{method-config}}`, need: needACLWrite, ok: ok},
		{method: "PUT", path: "/v1/acl/auth-method/", body: `{"Name":"m{n}","Type":"jwt","Config":{method-config}}`, need: needACLWrite, ok: ok},
		{method: "GET", path: "/v1/acl/auth-method/", need: needNone, ok: acxWant{400, "Missing auth method name"}},
		{method: "DELETE", path: "/v1/acl/auth-method/", need: needNone, ok: acxWant{400, "Missing auth method name"}},
		{method: "GET", path: "/v1/acl/auth-method/fixture-method", need: needACLRead, ok: ok,
			nsOK: &acxWant{404, "Requested auth method does not exist: ACL not found"}},
		{method: "PUT", path: "/v1/acl/auth-method/fixture-method", body: `{"Type":"jwt","Description":"d{n}","Config":{method-config}}`, need: needACLWrite, ok: ok},
		{method: "DELETE", path: "/v1/acl/auth-method/{fresh-method}", need: needACLWrite, ok: okTrue},
		// Explain of one method: acl:write (an oracle for bearer tokens).
		{method: "POST", path: "/v1/acl/auth-method/fixture-method/explain", body: `{"Claims":{}}`, need: needACLWrite, ok: ok},

		// Login needs no token; logout needs a token made by a login;
		// explain needs acl:read and answers a verdict.
		{method: "POST", path: "/v1/acl/login", body: `{"AuthMethod":"nope","BearerToken":"x"}`, need: needLogin,
			ok: acxWant{403, `ACL not found: auth method "nope" not found`}},
		{method: "POST", path: "/v1/acl/logout", need: needLogout},
		{method: "POST", path: "/v1/acl/login/explain", body: `{"AuthMethod":"nope","BearerToken":"x"}`, need: needACLRead, ok: ok},

		// Policies.
		{method: "GET", path: "/v1/acl/policies", need: needACLRead, ok: ok},
		{method: "PUT", path: "/v1/acl/policy", body: `{"Name":"p{n}","Rules":"acl = \"read\""}`, need: needACLWrite, ok: ok},
		{method: "GET", path: "/v1/acl/policy/name/fixture-policy", need: needACLRead, ok: ok},
		{method: "GET", path: "/v1/acl/policy/{policy}", need: needACLRead, ok: ok},
		{method: "PUT", path: "/v1/acl/policy/{policy}", body: `{"Name":"fixture-policy","Description":"d{n}","Rules":"acl = \"read\""}`, need: needACLWrite, ok: ok},
		{method: "DELETE", path: "/v1/acl/policy/{fresh-policy}", need: needACLWrite, ok: okTrue},

		// Roles.
		{method: "GET", path: "/v1/acl/roles", need: needACLRead, ok: ok},
		{method: "PUT", path: "/v1/acl/role", body: `{"Name":"r{n}"}`, need: needACLWrite, ok: ok},
		{method: "GET", path: "/v1/acl/role/name/fixture-role", need: needACLRead, ok: ok},
		{method: "GET", path: "/v1/acl/role/{role}", need: needACLRead, ok: ok},
		{method: "PUT", path: "/v1/acl/role/{role}", body: `{"Name":"fixture-role","Description":"d{n}","Policies":[{"Name":"fixture-policy"}]}`, need: needACLWrite, ok: ok},
		{method: "DELETE", path: "/v1/acl/role/{fresh-role}", need: needACLWrite, ok: okTrue},

		// Tokens and bootstrap.
		{method: "PUT", path: "/v1/acl/bootstrap", need: needBootstrap},
		{method: "GET", path: "/v1/acl/tokens", need: needACLRead, ok: ok},
		{method: "PUT", path: "/v1/acl/token", body: `{"Description":"t{n}"}`, need: needACLWrite, ok: ok},
		{method: "GET", path: "/v1/acl/token/self", need: needSelf, ok: ok},
		{method: "GET", path: "/v1/ui/capabilities?namespace=default", need: needKnown, ok: ok},
		{method: "GET", path: "/v1/acl/token/{token}", need: needACLRead, ok: ok},
		{method: "PUT", path: "/v1/acl/token/{token}", body: `{"Description":"d{n}"}`, need: needACLWrite, ok: ok},
		{method: "DELETE", path: "/v1/acl/token/{fresh-token}", need: needACLWrite, ok: okTrue},

		// Operator: operator:read / operator:write. Removal without ?id
		// passes the check and stops at the missing parameter.
		{method: "GET", path: "/v1/operator/raft/configuration", need: needOpRead, ok: ok},
		{method: "GET", path: "/v1/agent/metrics", need: needOpRead, ok: ok},
		{method: "DELETE", path: "/v1/operator/raft/peer", need: needOpWrite, ok: acxWant{400, "Must specify ?id with the ID of the server to remove"}},

		// Snapshots: management.
		{method: "GET", path: "/v1/snapshot", need: needManagement, ok: ok, okCT: "application/x-gzip"},
		{method: "PUT", path: "/v1/snapshot", body: "{snapshot}", need: needManagement, ok: okTrue},

		// Garbage collection (Nomad's /v1/system/gc): management.
		{method: "PUT", path: "/v1/system/gc", need: needManagement, ok: ok},

		// Nodes and allocations (design §6b): node:read, namespace read-job.
		// The client protocol is checked by the node service against the
		// node's secret (nodes_attack_test.go): a registration resolves the
		// token first, the node-only calls check their path and body first.
		{method: "GET", path: "/v1/nodes", need: needNodeRead, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/node/" + otherID, need: needNodeRead, ok: acxWant{404, "node not found"}},
		{method: "GET", path: "/v1/node/" + otherID + "/allocations", need: needNodeRead, ok: acxWant{404, "node not found"}},
		// Node pools: node:read to read; operator:write (or management) to write.
		{method: "GET", path: "/v1/node/pools?prefix=zzz", need: needNodeRead, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/node/pool/nope", need: needNodeRead, ok: acxWant{404, "node pool not found"}},
		{method: "GET", path: "/v1/node/pool/nope/nodes", need: needNodeRead, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/node/pool/nope/jobs", need: needNodeRead, ok: acxWant{200, "[]"}},
		{method: "PUT", path: "/v1/node/pools", body: `{"Name":"bad name"}`, need: needNSAdmin, ok: acxWant{400, badPoolName}},
		{method: "POST", path: "/v1/node/pools", body: `{"Name":"bad name"}`, need: needNSAdmin, ok: acxWant{400, badPoolName}},
		{method: "PUT", path: "/v1/node/pool/default", body: `{"Name":"default"}`, need: needNSAdmin, ok: acxWant{400, `modifying node pool "default" is not allowed`}},
		{method: "POST", path: "/v1/node/pool/default", body: `{"Name":"default"}`, need: needNSAdmin, ok: acxWant{400, `modifying node pool "default" is not allowed`}},
		{method: "DELETE", path: "/v1/node/pool/nope", need: needNSAdmin, ok: acxWant{404, "node pool nope not found"}},
		// Drain and eligibility: node:write, checked by the nodes service.
		{method: "PUT", path: "/v1/node/" + otherID + "/drain", body: `{"DrainSpec":{"Deadline":0}}`, need: needNodeWrite, ok: acxWant{404, "node not found"}},
		{method: "POST", path: "/v1/node/" + otherID + "/drain", body: `{"DrainSpec":null,"MarkEligible":true}`, need: needNodeWrite, ok: acxWant{404, "node not found"}},
		{method: "PUT", path: "/v1/node/" + otherID + "/eligibility", body: `{"Eligibility":"ineligible"}`, need: needNodeWrite, ok: acxWant{404, "node not found"}},
		{method: "POST", path: "/v1/node/" + otherID + "/eligibility", body: `{"Eligibility":"eligible"}`, need: needNodeWrite, ok: acxWant{404, "node not found"}},
		{method: "GET", path: "/v1/allocations", need: needNSReadJob, ok: acxWant{200, "[]"}},
		{method: "GET", path: "/v1/allocation/x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "PUT", path: "/v1/client/register", body: `{"Bogus":1}`, need: needNomadToken, ok: acxWant{400, `Node decoding failed: json: unknown field "Bogus"`}},
		{method: "POST", path: "/v1/client/register", body: `{"Bogus":1}`, need: needNomadToken, ok: acxWant{400, `Node decoding failed: json: unknown field "Bogus"`}},
		{method: "PUT", path: "/v1/client/heartbeat/x", need: needNone, ok: acxWant{400, `Invalid node ID "x": a 36-character UUID is required`}},
		{method: "POST", path: "/v1/client/heartbeat/x", need: needNone, ok: acxWant{400, `Invalid node ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/logs/x", need: needNodeRead, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/logs-grant/x", need: needNodeRead, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		// The node API through the servers (client_node.go): the grant is
		// checked by the node service, on the allocation's namespace.
		{method: "GET", path: "/v1/client/grant?op=fs/cat&alloc_id=x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/ls/x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/stat/x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/cat/x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/readat/x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/fs/stream/x", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/stats?node_id=x", need: needNodeRead, ok: acxWant{400, `Invalid node ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/allocation/x/stats", need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "PUT", path: "/v1/client/allocation/x/restart", body: `{}`, need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "POST", path: "/v1/client/allocation/x/restart", body: `{}`, need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "PUT", path: "/v1/client/allocation/x/signal", body: `{"Signal":"SIGKILL"}`, need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "POST", path: "/v1/client/allocation/x/signal", body: `{"Signal":"SIGKILL"}`, need: needNomadToken, ok: acxWant{400, `Invalid allocation ID "x": a 36-character UUID is required`}},
		{method: "GET", path: "/v1/client/allocations/x", need: needNone, ok: acxWant{400, `Invalid node ID "x": a 36-character UUID is required`}},
		{method: "PUT", path: "/v1/client/allocations", body: `{"NodeID":"x"}`, need: needNone, ok: acxWant{400, `Invalid NodeID "x": a 36-character UUID is required`}},
		{method: "POST", path: "/v1/client/allocations", body: `{"NodeID":"x"}`, need: needNone, ok: acxWant{400, `Invalid NodeID "x": a 36-character UUID is required`}},

		// Wrong method and unknown path: answered before any token is looked at.
		{method: "POST", path: "/v1/acl/policies", need: needNone, ok: acxWant{405, "method POST not allowed"}},
		{method: "GET", path: "/v1/acl/nothing-here", need: needNone, ok: acxWant{404, "Invalid URL path: not a recognized HTTP API endpoint"}},
	}...)
}

// acxCallers creates the matrix's tokens on s (they are only created with
// ACLs on; with ACLs off the same secrets are sent and ignored).
func acxCallers(t *testing.T, s *acxServer, aclsOn bool) []*acxCaller {
	t.Helper()
	perms := func(p ...string) map[string]bool {
		m := map[string]bool{}
		for _, x := range p {
			m[x] = true
		}
		return m
	}
	callers := []*acxCaller{
		{name: "no token", known: true, accessor: state.AnonymousTokenID, perms: perms()},
		{name: "unknown secret", secret: uuid.NewString()},
	}
	tokens := []struct {
		name, rules, extra string
		perms              map[string]bool
	}{
		{"acl read", `acl = "read"`, "", perms(needACLRead)},
		{"acl write", `acl = "write"`, "", perms(needACLRead, needACLWrite)},
		{"operator read", `operator = "read"`, "", perms(needOpRead)},
		{"operator write", `operator = "write"`, "", perms(needOpRead, needOpWrite, needNSAdmin)},
		{"namespace team1 acl read", `acl = "read"`, `,"Namespace":"team1"`, perms(needACLRead)},
	}
	for i, tk := range tokens {
		c := &acxCaller{name: tk.name, known: true, perms: tk.perms}
		if aclsOn {
			tok := s.tokenWithRules(t, fmt.Sprintf("caller-%d", i), tk.rules, tk.extra)
			c.secret, c.accessor = tok.SecretID, tok.AccessorID
		} else {
			c.secret = uuid.NewString()
		}
		callers = append(callers, c)
	}
	mgmt := &acxCaller{name: "management", secret: s.mgmt, known: true,
		perms: perms(needACLRead, needACLWrite, needOpRead, needOpWrite, needManagement, needNodeRead, needNodeWrite, needNSReadJob, needNSSubmitJob, needNSAdmin)}
	if aclsOn {
		var self state.ACLToken
		s.must(t, "GET", "/v1/acl/token/self", "").JSON(t, &self)
		mgmt.accessor = self.AccessorID
	} else {
		mgmt.secret = uuid.NewString()
	}
	return append(callers, mgmt)
}

// want is what caller c gets from endpoint e (resetIndex: the bootstrap
// reset index of the ACL-enabled server).
func (e *acxEndpoint) want(c *acxCaller, aclsOn bool, resetIndex uint64) acxWant {
	if !aclsOn {
		// Design §7: every request is allowed and any token ignored; only
		// bootstrap and token/self, which are about tokens, say ACLs are off.
		switch e.need {
		case needBootstrap, needSelf, needLogin, needLogout:
			return acxWant{401, aclDisabled}
		}
		return e.ok
	}
	switch e.need {
	case needNone, needOpen, needLogin:
		return e.ok
	case needKnown:
		if !c.known {
			return acxWant{403, aclNotFound}
		}
		return e.ok
	case needLogout:
		switch {
		case c.anonymous():
			return acxWant{401, "Supplied token does not exist"}
		case !c.known:
			return acxWant{403, aclNotFound}
		}
		return acxWant{403, "Permission denied: token wasn't created via login"}
	case needBootstrap:
		// The initial management token closed bootstrapping; bootstrap
		// ignores the caller's token entirely.
		return acxWant{403, fmt.Sprintf(resetIndexFmt, resetIndex)}
	}
	if nomadNeeds[e.need] {
		if !c.known || (e.need != needNomadToken && !c.perms[e.need]) {
			return acxWant{403, "Permission denied"}
		}
		return e.ok
	}
	if !c.known && e.need == needSelf {
		return acxWant{403, selfNotFound}
	}
	if !c.known {
		return acxWant{403, aclNotFound}
	}
	if e.need == needSelf {
		return e.ok
	}
	if !c.perms[e.need] {
		if c.anonymous() {
			return acxWant{403, anonymousDeny(e.need)}
		}
		return acxWant{403, tokenDeny(c.accessor, e.need)}
	}
	if e.nsOK != nil && strings.HasPrefix(c.name, "namespace") {
		return *e.nsOK
	}
	return e.ok
}

func TestACLPermissionMatrix(t *testing.T) {
	for _, aclsOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("acls %v", map[bool]string{true: "on", false: "off"}[aclsOn]), func(t *testing.T) {
			var s *acxServer
			if aclsOn {
				s = acxStart(t, "root-secret", servertest.ACL("root-secret"))
			} else {
				s = acxStart(t, "")
			}
			f := newACXFixture(t, s)
			callers := acxCallers(t, s, aclsOn)
			var resetIndex uint64
			if aclsOn {
				var self state.ACLToken
				s.must(t, "GET", "/v1/acl/token/self", "").JSON(t, &self)
				resetIndex = self.CreateIndex
			}
			for _, e := range acxEndpoints() {
				for _, c := range callers {
					t.Run(e.method+" "+e.path+"/"+c.name, func(t *testing.T) {
						path, body := f.expand(t, e.path), f.expand(t, e.body)
						w := e.want(c, aclsOn, resetIndex)
						before := s.fingerprint()
						resp := s.as(t, c.secret, e.method, path, body)
						if resp.Status != w.status {
							t.Fatalf("got %s, want %d %q", resp, w.status, w.body)
						}
						if w.status != 200 {
							expectError(t, resp, w.status, w.body)
							if after := s.fingerprint(); after != before {
								t.Errorf("a refused request changed the state:\nbefore %s\n after %s", before, after)
							}
							return
						}
						ct := e.okCT
						if ct == "" {
							ct = jsonType
						}
						if got := resp.Header.Get("Content-Type"); got != ct {
							t.Errorf("Content-Type: got %q, want %q", got, ct)
						}
						if w.body != "" && resp.Body != w.body {
							t.Errorf("body: got %q, want %q", resp.Body, w.body)
						}
						if e.need == needSelf {
							var self state.ACLToken
							resp.JSON(t, &self)
							if self.AccessorID != c.accessor {
								t.Errorf("token/self AccessorID %q, want %q", self.AccessorID, c.accessor)
							}
						}
					})
				}
			}
		})
	}
}

// TestACLMatrixCoversEveryRoute fails when a route is served without a row
// in the matrix. It reads the h.handle and h.handleWithLimit calls of
// http/*.go (the path pattern and every http.MethodX of the call) and looks
// for a row with that method whose path the pattern matches.
func TestACLMatrixCoversEveryRoute(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	type route struct{ method, pattern string }
	var routes []route
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "handle" && sel.Sel.Name != "handleWithLimit" && sel.Sel.Name != "handleLocal") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			pattern, _ := strconv.Unquote(lit.Value)
			ast.Inspect(call.Args[len(call.Args)-1], func(m ast.Node) bool {
				if s, ok := m.(*ast.SelectorExpr); ok && strings.HasPrefix(s.Sel.Name, "Method") {
					routes = append(routes, route{strings.ToUpper(strings.TrimPrefix(s.Sel.Name, "Method")), pattern})
				}
				return true
			})
			return true
		})
	}
	if len(routes) < 30 {
		t.Fatalf("found only %d routes in http/*.go: %v", len(routes), routes)
	}
	rows := acxEndpoints()
	for _, r := range routes {
		re := routeRegexp(r.pattern)
		found := false
		for _, e := range rows {
			if path, _, _ := strings.Cut(e.path, "?"); e.method == r.method && re.MatchString(path) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("route %s %s has no row in the permission matrix", r.method, r.pattern)
		}
	}
}

// routeRegexp turns a gorilla/mux path pattern into a regexp: each
// {name:expr} variable becomes its expression, the rest is literal.
func routeRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for pattern != "" {
		open := strings.Index(pattern, "{")
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(pattern))
			break
		}
		b.WriteString(regexp.QuoteMeta(pattern[:open]))
		end := strings.Index(pattern[open:], "}") + open
		_, expr, ok := strings.Cut(pattern[open+1:end], ":")
		if !ok {
			expr = "[^/]+"
		}
		b.WriteString("(?:" + expr + ")")
		pattern = pattern[end+1:]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
