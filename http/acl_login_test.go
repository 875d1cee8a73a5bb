package http_test

// Login, logout and explain (design §7) through the real stack: JWTs signed
// in the test with RS256, ES256 and EdDSA keys made in the test, validated by
// static PEM keys or a JWKS URL served by an httptest server.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// lgMgmt is the management secret of the ACL-enabled test servers.
const lgMgmt = "9c1b6f0e-6a51-4d0a-9a9f-5b7f0d6c1e2a"

const (
	loginPath   = "/v1/acl/login"
	logoutPath  = "/v1/acl/logout"
	explainPath = "/v1/acl/login/explain"
	methodPath  = "/v1/acl/auth-method"
	methodsPath = "/v1/acl/auth-methods"
)

// lgServer is an ACL-enabled server and its management secret.
type lgServer struct {
	*servertest.TestServer
}

// lgStart starts a server with ACLs on and waits until the leader has
// created the built-in ACL objects.
func lgStart(t *testing.T) *lgServer {
	t.Helper()
	s := &lgServer{servertest.Start(t, servertest.ACL(lgMgmt))}
	waitACLReady(t, s.TestServer, lgMgmt)
	return s
}

// admin sends a request as the management token.
func (s *lgServer) admin(t testing.TB, method, path, body string) *servertest.Response {
	t.Helper()
	return s.Do(t, method, path, body, "X-Service-Token", lgMgmt)
}

// mustAdmin sends a request as the management token and expects 200.
func (s *lgServer) mustAdmin(t testing.TB, method, path, body string) *servertest.Response {
	t.Helper()
	resp := s.admin(t, method, path, body)
	if resp.Status != 200 {
		t.Fatalf("%s %s %s: %s", method, path, body, resp)
	}
	return resp
}

// lgKey is a signing key made for one test.
type lgKey struct {
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
	kid  string
}

func newLgKey(t testing.TB, alg jose.SignatureAlgorithm) *lgKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil || priv == nil {
		t.Fatalf("key for %s: %v", alg, err)
	}
	return &lgKey{alg: alg, priv: priv}
}

// pem is the public key in PEM (PKIX).
func (k *lgKey) pem(t testing.TB) string {
	der, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// sign makes a compact JWT.
func (k *lgKey) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if k.kid != "" {
		opts = opts.WithHeader("kid", k.kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// claims are the usual claims of a valid token for lgMethod: issuer,
// audience, times, and the mapped claims.
func claims(extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": "https://issuer.test", "aud": []string{"ctlplane"},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"sub": "Web-Frontend", "team": "Payments", "groups": []string{"dev", "admin"},
		"org": map[string]any{"region": "EU"},
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// methodBody is an auth method over static keys with the mappings the
// tests use: value.name, value.team, value.region (a JSON pointer) and
// list.groups.
func methodBody(t testing.TB, name string, extra string, keys ...*lgKey) string {
	pems := make([]string, len(keys))
	for i, k := range keys {
		pems[i] = k.pem(t)
	}
	pemJSON, _ := json.Marshal(pems)
	return fmt.Sprintf(`{"Name":%q,"Type":"jwt"%s,"Config":{"JWTValidationPubKeys":%s,"BoundIssuer":"https://issuer.test","BoundAudiences":["ctlplane"],`+
		`"ClaimMappings":{"sub":"name","team":"team","/org/region":"region"},"ListClaimMappings":{"groups":"groups"}}}`, name, extra, pemJSON)
}

// addRule creates a binding rule and returns its ID.
func (s *lgServer) addRule(t testing.TB, method, selector, bindType, bindName string, query ...string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"AuthMethod": method, "Selector": selector, "BindType": bindType, "BindName": bindName})
	resp := s.mustAdmin(t, "PUT", rulePath+strings.Join(query, ""), string(body))
	var r rule
	resp.JSON(t, &r)
	return r.ID
}

// loginToken is a token as login answers it.
type loginToken struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []struct{ ID, Name string }
	Roles             []struct{ ID, Name string }
	ServiceIdentities []struct {
		ServiceName string
		Datacenters []string
	}
	NodeIdentities []struct{ NodeName, Datacenter string }
	Local          bool
	AuthMethod     string
	ExpirationTime *time.Time
	CreateTime     time.Time
	Hash           []byte
	Namespace      string
	CreateIndex    uint64
	ModifyIndex    uint64
}

func loginBody(method, bearer string) string {
	b, _ := json.Marshal(map[string]string{"AuthMethod": method, "BearerToken": bearer})
	return string(b)
}

// login logs in and expects a token.
func (s *lgServer) login(t testing.TB, method, bearer string, query ...string) loginToken {
	t.Helper()
	resp := s.Do(t, "POST", loginPath+strings.Join(query, ""), loginBody(method, bearer))
	if resp.Status != 200 {
		t.Fatalf("login: %s", resp)
	}
	var tok loginToken
	resp.JSON(t, &tok)
	if !uuidV4.MatchString(tok.AccessorID) || !uuidV4.MatchString(tok.SecretID) {
		t.Errorf("AccessorID %q / SecretID %q are not random UUIDs", tok.AccessorID, tok.SecretID)
	}
	return tok
}

// explainOut is an explain answer.
type explainOut struct {
	AuthMethod   string
	Namespace    string
	Identity     map[string]any
	BindingRules []struct {
		ID, Selector, BindType, BindName string
		Matched                          bool
		RenderedName, SkipReason         string
	}
	Token *struct {
		Description       string
		Roles             []struct{ ID, Name string }
		ServiceIdentities []struct{ ServiceName string }
		NodeIdentities    []struct{ NodeName, Datacenter string }
		Local             bool
		AuthMethod        string
		ExpirationTime    *time.Time
		Namespace         string
	}
	LoginStatus int
	LoginError  string
}

func (s *lgServer) explain(t testing.TB, body string, query ...string) explainOut {
	t.Helper()
	resp := s.admin(t, "POST", explainPath+strings.Join(query, ""), body)
	if resp.Status != 200 {
		t.Fatalf("explain %s: %s", body, resp)
	}
	var out explainOut
	resp.JSON(t, &out)
	return out
}

// expectSameVerdict logs in with a bearer token and checks that explain
// predicts the answer: the same status and message, and on success the
// same bindings.
func (s *lgServer) expectSameVerdict(t testing.TB, method, bearer string, query ...string) (*servertest.Response, explainOut) {
	t.Helper()
	ex := s.explain(t, loginBody(method, bearer), query...)
	resp := s.Do(t, "POST", loginPath+strings.Join(query, ""), loginBody(method, bearer))
	if ex.LoginStatus != resp.Status {
		t.Errorf("explain says %d %q, login answered %s", ex.LoginStatus, ex.LoginError, resp)
	}
	if resp.Status != 200 {
		if ex.LoginError != resp.Body || ex.Token != nil {
			t.Errorf("explain says %q (token %v), login answered %s", ex.LoginError, ex.Token, resp)
		}
		return resp, ex
	}
	var tok loginToken
	resp.JSON(t, &tok)
	if ex.Token == nil {
		t.Fatalf("explain predicts no token, login minted %+v", tok)
	}
	got := fmt.Sprintf("%v %v %v %v %q %q", ex.Token.ServiceIdentities, ex.Token.NodeIdentities, ex.Token.Roles, ex.Token.Local, ex.Token.Namespace, ex.Token.Description)
	want := fmt.Sprintf("%v %v %v %v %q %q", svcNames(tok), tok.NodeIdentities, tok.Roles, tok.Local, tok.Namespace, tok.Description)
	if got != want {
		t.Errorf("explain predicts %s, login minted %s", got, want)
	}
	return resp, ex
}

func svcNames(tok loginToken) []struct{ ServiceName string } {
	out := []struct{ ServiceName string }{}
	for _, s := range tok.ServiceIdentities {
		out = append(out, struct{ ServiceName string }{s.ServiceName})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// expectRefused checks that a secret is refused as unknown.
func (s *lgServer) expectRefused(t testing.TB, secret string) {
	t.Helper()
	expectError(t, s.Do(t, "GET", rulesPath, "", "X-Service-Token", secret), 403, "ACL not found")
}

func TestLoginAlgorithms(t *testing.T) {
	s := lgStart(t)
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA} {
		key := newLgKey(t, alg)
		name := "jwt-" + strings.ToLower(string(alg))
		s.mustAdmin(t, "PUT", methodPath, methodBody(t, name, "", newLgKey(t, alg), key))
		s.addRule(t, name, "", "service", "${value.name}")
		tok := s.login(t, name, key.sign(t, claims(nil)))
		if len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "web-frontend" {
			t.Errorf("%s: service identities %+v", alg, tok.ServiceIdentities)
		}
		if tok.AuthMethod != name || tok.Description != "token created via login" || !tok.Local || tok.Namespace != "default" {
			t.Errorf("%s: token %+v", alg, tok)
		}
		if tok.ExpirationTime != nil || tok.CreateIndex == 0 || tok.CreateIndex != tok.ModifyIndex || len(tok.Hash) == 0 {
			t.Errorf("%s: token %+v", alg, tok)
		}
		// The new secret works: a service identity grants no acl:read.
		resp := s.Do(t, "GET", rulesPath, "", "X-Service-Token", tok.SecretID)
		expectError(t, resp, 403, fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'acl:read'", tok.AccessorID))
	}
}

// TestLoginRefusals: every way a bearer token or a login fails, with the
// status and upstream's text, and explain predicting each.
func TestLoginRefusals(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.RS256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "m", "", key))
	s.addRule(t, "m", `value.team == "Payments"`, "service", "pay")

	stranger := newLgKey(t, jose.RS256)
	good := key.sign(t, claims(nil))
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + strings.Split(key.sign(t, claims(map[string]any{"team": "Other"})), ".")[1] + "." + parts[2]
	now := time.Now()
	cases := []struct {
		name, bearer string
		status       int
		msg          string
	}{
		{"no rule matches", key.sign(t, claims(map[string]any{"team": "Other"})), 403, "Permission denied"},
		{"expired", key.sign(t, claims(map[string]any{"exp": now.Add(-5 * time.Minute).Unix(), "nbf": now.Add(-time.Hour).Unix(), "iat": now.Add(-time.Hour).Unix()})), 401,
			"error validating claims: go-jose/go-jose/jwt: validation failed, token is expired (exp)"},
		{"not yet valid", key.sign(t, claims(map[string]any{"nbf": now.Add(5 * time.Minute).Unix()})), 401,
			"error validating claims: go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)"},
		{"wrong issuer", key.sign(t, claims(map[string]any{"iss": "https://evil.test"})), 401,
			"error validating claims: go-jose/go-jose/jwt: validation failed, invalid issuer claim (iss)"},
		{"wrong audience", key.sign(t, claims(map[string]any{"aud": "someone-else"})), 401,
			"error validating claims: aud claim does not match any bound audience"},
		{"unknown key", stranger.sign(t, claims(nil)), 401, "no known key successfully validated the token signature"},
		{"tampered payload", tampered, 401, "no known key successfully validated the token signature"},
		{"garbage", "invalid", 401, "error parsing token: go-jose/go-jose: compact JWS format must have three parts"},
		{"no times", key.sign(t, claims(map[string]any{"iat": nil, "nbf": nil, "exp": nil})), 401,
			"no issue time, notbefore, or expiration time encoded in token"},
		{"bad claim type", key.sign(t, claims(map[string]any{"team": []string{"a"}})), 401,
			"error converting claim 'team' to string from unknown type []interface {}"},
	}
	for _, tc := range cases {
		resp, _ := s.expectSameVerdict(t, "m", tc.bearer)
		if resp.Status != tc.status || resp.Body != tc.msg {
			t.Errorf("%s: got %s, want %d %q", tc.name, resp, tc.status, tc.msg)
		}
	}
	// The good token passes, and nothing was minted by the refusals.
	s.expectSameVerdict(t, "m", good)
	var toks []loginToken
	s.mustAdmin(t, "GET", "/v1/acl/tokens", "").JSON(t, &toks)
	minted := 0
	for _, tk := range toks {
		if tk.AuthMethod == "m" {
			minted++
		}
	}
	if minted != 1 {
		t.Errorf("%d tokens of method m, want 1", minted)
	}

	// An empty bearer token is a login verdict; explain needs one of the two.
	expectError(t, s.Do(t, "POST", loginPath, `{"AuthMethod":"m"}`), 401, "missing jwt")
	expectError(t, s.admin(t, "POST", explainPath, `{"AuthMethod":"m"}`), 400, "Explain needs exactly one of BearerToken or Identity")

	// Unknown method, in any case.
	resp, _ := s.expectSameVerdict(t, "nope", good)
	expectError(t, resp, 403, `ACL not found: auth method "nope" not found`)
	if tok := s.login(t, "M", good); tok.AuthMethod != "m" {
		t.Errorf("login through the method named in another case: AuthMethod %q", tok.AuthMethod)
	}

	// Bodies that do not decode.
	for body, msg := range map[string]string{
		"":                                 "Failed to decode request body: EOF",
		`{"AuthMethod":"m","Foo":1}`:       `Failed to decode request body: json: unknown field "Foo"`,
		`{"AuthMethod":"m"} {}`:            "Failed to decode request body: unexpected data after the JSON object",
		`{"AuthMethod":"m","Meta":[1]}`:    "Failed to decode request body: json: cannot unmarshal array into Go struct field loginRequest.Meta of type map[string]string",
		`{"AuthMethod":"m","Identity":{}}`: `Failed to decode request body: json: unknown field "Identity"`,
	} {
		expectError(t, s.Do(t, "POST", loginPath, body), 400, msg)
	}
	// A token header is ignored by login, even an unknown one.
	resp = s.Do(t, "POST", loginPath, loginBody("m", good), "X-Service-Token", "no-such-secret")
	if resp.Status != 200 {
		t.Errorf("login with an unknown token header: %s", resp)
	}
	// Wrong method.
	resp = s.Do(t, "GET", loginPath, "")
	expectError(t, resp, 405, "method GET not allowed")
}

// TestLoginBindings: lowercased values in BindName, list claims in
// selectors, JSON-pointer claims, node identities, role rules to missing
// and existing roles, Meta, locality, and explain showing all of it.
func TestLoginBindings(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.ES256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "corp", `,"TokenLocality":"global"`, key))
	svcRule := s.addRule(t, "corp", `"admin" in list.groups`, "service", "${value.team}-${value.name}")
	s.addRule(t, "corp", `"root" in list.groups`, "service", "never")
	s.addRule(t, "corp", `value.region == "EU/West"`, "node", "edge-${value.team}")
	missingRole := s.addRule(t, "corp", "", "role", "readers-${value.team}")
	s.addRule(t, "corp", "", "role", "ops")
	s.addRule(t, "corp", "", "service", "${value.team}-${value.name}") // the same service again

	// The role "ops" exists and grants acl:read.
	s.mustAdmin(t, "PUT", "/v1/acl/policy", `{"Name":"reader","Rules":"acl = \"read\""}`)
	var role struct{ ID string }
	s.mustAdmin(t, "PUT", "/v1/acl/role", `{"Name":"ops","Policies":[{"Name":"reader"}]}`).JSON(t, &role)

	bearer := key.sign(t, claims(map[string]any{"org": map[string]any{"region": "EU/West"}}))
	resp, ex := s.expectSameVerdict(t, "corp", bearer)
	var tok loginToken
	resp.JSON(t, &tok)
	if len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "payments-web-frontend" {
		t.Errorf("service identities: %+v", tok.ServiceIdentities)
	}
	if len(tok.NodeIdentities) != 1 || tok.NodeIdentities[0].NodeName != "edge-payments" || tok.NodeIdentities[0].Datacenter != "dc1" {
		t.Errorf("node identities: %+v", tok.NodeIdentities)
	}
	if len(tok.Roles) != 1 || tok.Roles[0].ID != role.ID || tok.Roles[0].Name != "ops" {
		t.Errorf("roles: %+v (ops is %s)", tok.Roles, role.ID)
	}
	if tok.Local {
		t.Error("TokenLocality global gave a local token")
	}
	// The role's policy applies to the new token.
	if r := s.Do(t, "GET", rulesPath, "", "X-Service-Token", tok.SecretID); r.Status != 200 {
		t.Errorf("the login token's role grants acl:read, but: %s", r)
	}

	// Explain: the identity and every rule's verdict, in rule order (by ID).
	wantIdentity := map[string]any{"value.name": "Web-Frontend", "value.team": "Payments", "value.region": "EU/West", "list.groups": []any{"dev", "admin"}}
	if !reflect.DeepEqual(ex.Identity, wantIdentity) {
		t.Errorf("identity:\n got %v\nwant %v", ex.Identity, wantIdentity)
	}
	if ex.AuthMethod != "corp" || ex.Namespace != "default" || len(ex.BindingRules) != 6 {
		t.Fatalf("explain: %+v", ex)
	}
	verdicts := map[string]string{}
	for _, r := range ex.BindingRules {
		verdicts[r.BindName] = fmt.Sprintf("%v|%s|%s", r.Matched, r.RenderedName, r.SkipReason)
		if r.ID == svcRule && (r.Selector != `"admin" in list.groups` || r.BindType != "service") {
			t.Errorf("rule %s shown as %+v", svcRule, r)
		}
		if r.ID == missingRole && r.SkipReason != `role "readers-payments" does not exist` {
			t.Errorf("missing role: %+v", r)
		}
	}
	want := map[string]string{
		"${value.team}-${value.name}": "true|payments-web-frontend|",
		"never":                       "false||selector did not match",
		"edge-${value.team}":          "true|edge-payments|",
		"readers-${value.team}":       `true|readers-payments|role "readers-payments" does not exist`,
		"ops":                         "true|ops|",
	}
	for name, w := range want {
		if verdicts[name] != w {
			t.Errorf("rule %q: got %q, want %q", name, verdicts[name], w)
		}
	}

	// Once the missing role exists, the next login links it.
	s.mustAdmin(t, "PUT", "/v1/acl/role", `{"Name":"readers-payments"}`)
	if tok := s.login(t, "corp", bearer); len(tok.Roles) != 2 {
		t.Errorf("roles after creating readers-payments: %+v", tok.Roles)
	}

	// Meta goes into the description, as compact JSON.
	body := fmt.Sprintf(`{"AuthMethod":"corp","BearerToken":%q,"Meta":{"pod":"web-1","host":"<h&1>"}}`, bearer)
	resp = s.Do(t, "POST", loginPath, body)
	resp.JSON(t, &tok)
	if want := `token created via login: {"host":"\u003ch\u00261\u003e","pod":"web-1"}`; tok.Description != want {
		t.Errorf("description with Meta: %q, want %q", tok.Description, want)
	}
	if ex := s.explain(t, body); ex.Token == nil || ex.Token.Description != tok.Description {
		t.Errorf("explain with Meta: %+v", ex.Token)
	}

	// Explain from an identity instead of a token: no validation, same rules.
	ex = s.explain(t, `{"AuthMethod":"corp","Identity":{"value.name":"API","value.team":"Core","list.groups":["root"]}}`)
	if ex.LoginStatus != 200 || ex.Token == nil {
		t.Fatalf("explain from identity: %+v", ex)
	}
	var names []string
	for _, si := range ex.Token.ServiceIdentities {
		names = append(names, si.ServiceName)
	}
	sort.Strings(names)
	if got := fmt.Sprint(names, len(ex.Token.Roles), len(ex.Token.NodeIdentities)); got != "[core-api never] 1 0" {
		t.Errorf("explain from identity: services, roles, nodes: %s", got)
	}
	// A value that renders an invalid name: login would be refused.
	ex = s.explain(t, `{"AuthMethod":"corp","Identity":{"value.team":"bad team!"}}`)
	if ex.LoginStatus != 400 || !strings.HasPrefix(ex.LoginError, "cannot compute ") || !strings.Contains(ex.LoginError, "bad team!") || ex.Token != nil {
		t.Errorf("explain with an invalid rendered name: %+v", ex)
	}
	for body, msg := range map[string]string{
		`{"AuthMethod":"corp","Identity":{"value.nope":"x"}}`:                       `Invalid Identity: unknown identity field "value.nope": the auth method's fields are list.groups, value.name, value.region, value.team`,
		`{"AuthMethod":"corp","Identity":{"value.name":7}}`:                         `Invalid Identity: identity field "value.name" must be a string, not the number 7`,
		fmt.Sprintf(`{"AuthMethod":"corp","Identity":{},"BearerToken":%q}`, bearer): "Explain needs exactly one of BearerToken or Identity",
		`{"AuthMethod":"corp","Nope":1}`:                                            `Failed to decode request body: json: unknown field "Nope"`,
	} {
		expectError(t, s.admin(t, "POST", explainPath, body), 400, msg)
	}
	// Explain needs acl:read.
	expectError(t, s.Do(t, "POST", explainPath, `{"AuthMethod":"corp","Identity":{}}`), 403,
		"Permission denied: anonymous token lacks permission 'acl:read'. The anonymous token is used implicitly when a request does not specify a token.")
	// Explain of a method that does not exist: login's verdict.
	if ex := s.explain(t, `{"AuthMethod":"ghost","Identity":{}}`); ex.LoginStatus != 403 || ex.LoginError != `ACL not found: auth method "ghost" not found` {
		t.Errorf("explain of a missing method: %+v", ex)
	}
}

// TestLoginMaxTokenTTL: a method's MaxTokenTTL sets the token's expiry;
// once the (fake) clock passes it the token is refused.
func TestLoginMaxTokenTTL(t *testing.T) {
	clock := newFakeClock()
	ts, _ := onClock(t, lgStart(t).TestServer, clock)
	s := &lgServer{ts}
	key := newLgKey(t, jose.EdDSA)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "short", `,"MaxTokenTTL":"1m"`, key))
	s.addRule(t, "short", "", "service", "web")
	tok := s.login(t, "short", key.sign(t, claims(nil)))
	if tok.ExpirationTime == nil || !tok.ExpirationTime.Equal(tok.CreateTime.Add(time.Minute)) || !tok.CreateTime.Equal(clock.Now().UTC()) {
		t.Fatalf("ExpirationTime %v, CreateTime %v (clock %v): want the clock's time + 1m", tok.ExpirationTime, tok.CreateTime, clock.Now())
	}
	ex := s.explain(t, loginBody("short", key.sign(t, claims(nil))))
	if ex.Token == nil || ex.Token.ExpirationTime == nil {
		t.Errorf("explain does not show the expiry: %+v", ex.Token)
	}
	resp := s.Do(t, "GET", rulesPath, "", "X-Service-Token", tok.SecretID)
	expectError(t, resp, 403, fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'acl:read'", tok.AccessorID))
	clock.Advance(time.Minute - time.Millisecond)
	expectError(t, s.Do(t, "GET", rulesPath, "", "X-Service-Token", tok.SecretID), 403, fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'acl:read'", tok.AccessorID))
	clock.Advance(time.Millisecond)
	s.expectRefused(t, tok.SecretID)
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", tok.SecretID), 403, "ACL not found")
}

func TestLogout(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.RS256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "m", "", key))
	s.addRule(t, "m", "", "service", "web")
	tok := s.login(t, "m", key.sign(t, claims(nil)))

	expectError(t, s.Do(t, "POST", logoutPath, ""), 401, "Supplied token does not exist")
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", "no-such-secret"), 403, "ACL not found")
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", lgMgmt), 403, "Permission denied: token wasn't created via login")
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", "anonymous"), 403, "Permission denied: token wasn't created via login")

	// Bearer header works too.
	expectJSON(t, s.Do(t, "POST", logoutPath, "", "Authorization", "Bearer "+tok.SecretID), "true")
	s.expectRefused(t, tok.SecretID)
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", tok.SecretID), 403, "ACL not found")
	if r := s.admin(t, "GET", "/v1/acl/token/"+tok.AccessorID, ""); r.Status != 404 {
		t.Errorf("the token is still there after logout: %s", r)
	}
}

// jwksHandler serves a key set the test can change.
type jwksHandler struct {
	mu  sync.Mutex
	set jose.JSONWebKeySet
}

func (h *jwksHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	json.NewEncoder(w).Encode(h.set)
}

func (h *jwksHandler) setKeys(keys ...*lgKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.set.Keys = nil
	for _, k := range keys {
		h.set.Keys = append(h.set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
}

func TestLoginJWKS(t *testing.T) {
	clock := newFakeClock()
	ts, _ := onClock(t, lgStart(t).TestServer, clock)
	s := &lgServer{ts}
	k1 := newLgKey(t, jose.RS256)
	k1.kid = "one"
	k2 := newLgKey(t, jose.EdDSA)
	k2.kid = "two"
	keys := &jwksHandler{}
	keys.setKeys(k1)
	jwks := httptest.NewServer(keys)
	t.Cleanup(jwks.Close)

	s.mustAdmin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"jwks","Type":"jwt","Config":{"JWKSURL":%q,"BoundAudiences":["ctlplane"],"ClaimMappings":{"sub":"name"}}}`, jwks.URL))
	s.addRule(t, "jwks", "", "service", "${value.name}")
	s.expectSameVerdict(t, "jwks", k1.sign(t, claims(nil)))
	if tok := s.login(t, "jwks", k1.sign(t, claims(nil))); len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "web-frontend" {
		t.Errorf("JWKS login: %+v", tok)
	}
	// A key the set does not have.
	resp, _ := s.expectSameVerdict(t, "jwks", k2.sign(t, claims(nil)))
	expectError(t, resp, 401, "error verifying token: failed to verify id token signature")
	// Rotation: once the set has the key, a token signed by it is accepted
	// (the unknown kid makes the server fetch again, at most once a second
	// by the fake clock).
	keys.setKeys(k1, k2)
	clock.Advance(time.Second)
	s.login(t, "jwks", k2.sign(t, claims(nil)))

	// A key server that cannot be reached is the server's problem: 500.
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	s.mustAdmin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"down","Type":"jwt","Config":{"JWKSURL":%q}}`, goneURL))
	s.addRule(t, "down", "", "service", "web")
	resp = s.Do(t, "POST", loginPath, loginBody("down", k1.sign(t, claims(map[string]any{"aud": nil}))))
	if resp.Status != 500 || !strings.HasPrefix(resp.Body, "error verifying token: fetching keys oidc: get keys failed: Get ") {
		t.Errorf("unreachable key server: %s", resp)
	}
	// explain reports the fetch failure as its own failure, not as a verdict.
	if r := s.admin(t, "POST", explainPath, loginBody("down", k1.sign(t, claims(map[string]any{"aud": nil})))); r.Status != 500 {
		t.Errorf("explain with an unreachable key server: %s", r)
	}
}

// TestLoginNamespaces: a login happens in its method's namespace: the
// method's rules there, the token there; a login that names another
// namespace does not find the method.
func TestLoginNamespaces(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.RS256)
	s.mustAdmin(t, "PUT", methodPath+"?ns=team1", methodBody(t, "t1", "", key))
	s.addRule(t, "t1", "", "service", "in-team1", "?ns=team1")
	s.addRule(t, "t1", "", "service", "in-default") // same method, other namespace: not used
	s.addRule(t, "T1", "", "node", "named-in-upper-case", "?ns=team1")
	bearer := key.sign(t, claims(nil))

	resp, ex := s.expectSameVerdict(t, "t1", bearer)
	var tok loginToken
	resp.JSON(t, &tok)
	if tok.Namespace != "team1" || len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "in-team1" {
		t.Errorf("token: %+v", tok)
	}
	// A rule that names the method in another case is the method's too.
	if len(tok.NodeIdentities) != 1 || tok.NodeIdentities[0].NodeName != "named-in-upper-case" {
		t.Errorf("node identities: %+v", tok.NodeIdentities)
	}
	if ex.Namespace != "team1" || len(ex.BindingRules) != 2 {
		t.Errorf("explain: %+v", ex)
	}
	s.login(t, "t1", bearer, "?ns=team1")
	resp, _ = s.expectSameVerdict(t, "t1", bearer, "?ns=default")
	expectError(t, resp, 403, `ACL not found: auth method "t1" not found`)
	resp = s.Do(t, "POST", loginPath, loginBody("t1", bearer), "X-Service-Namespace", "other")
	expectError(t, resp, 403, `ACL not found: auth method "t1" not found`)
	expectError(t, s.Do(t, "POST", loginPath+"?ns=bad!", loginBody("t1", bearer)), 400,
		`Invalid namespace "bad!": a namespace name is 1 to 64 letters, digits, '-' or '_'`)
}

// TestLoginACLsDisabled: with access control off a token means nothing;
// login and logout say so, as upstream does, and explain predicts it.
func TestLoginACLsDisabled(t *testing.T) {
	ts := servertest.Start(t)
	s := &lgServer{ts}
	key := newLgKey(t, jose.RS256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "m", "", key))
	s.addRule(t, "m", "", "service", "web")
	expectError(t, s.Do(t, "POST", loginPath, loginBody("m", key.sign(t, claims(nil)))), 401, "ACL support disabled")
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", "x"), 401, "ACL support disabled")
	ex := s.explain(t, loginBody("m", key.sign(t, claims(nil))))
	if ex.LoginStatus != 401 || ex.LoginError != "ACL support disabled" || ex.Token != nil || len(ex.BindingRules) != 1 || !ex.BindingRules[0].Matched {
		t.Errorf("explain with ACLs off: %+v", ex)
	}
}

// TestLoginConcurrent logs in from many goroutines at once (run with -race).
func TestLoginConcurrent(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.ES256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "m", "", key))
	s.addRule(t, "m", `"admin" in list.groups and value.team matches "^Pay"`, "service", "${value.team}")
	bearer := key.sign(t, claims(nil))
	var wg sync.WaitGroup
	secrets := make(chan string, 40)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				var ex *servertest.Response
				if j%2 == 0 {
					ex = s.admin(t, "POST", explainPath, loginBody("m", bearer))
				}
				resp := s.Do(t, "POST", loginPath, loginBody("m", bearer))
				if resp.Status != 200 || (ex != nil && ex.Status != 200) {
					t.Errorf("login %s, explain %v", resp, ex)
					return
				}
				var tok loginToken
				resp.JSON(t, &tok)
				secrets <- tok.SecretID
			}
		}()
	}
	wg.Wait()
	close(secrets)
	seen := map[string]bool{}
	for sec := range secrets {
		if seen[sec] {
			t.Errorf("secret %s minted twice", sec)
		}
		seen[sec] = true
	}
}
