package http_test

// The auth-method API (design §7, reference §5.1) through the real stack:
// create, read, list, update, delete with its cascade, the checks and their
// texts, and binding rules checked against an existing method's fields.

import (
	"encoding/json"
	"fmt"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/consul/api"
)

// amKeys are the keys of a JSON object, in order of appearance.
func amKeys(t testing.TB, body string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", body)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

type amOut struct {
	Name, Type, DisplayName, Description, MaxTokenTTL, TokenLocality string
	Config                                                           map[string]any
	Namespace                                                        string
	CreateIndex, ModifyIndex                                         uint64
}

func TestAuthMethodCRUD(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.RS256)
	pem := key.pem(t)
	body := fmt.Sprintf(`{"Name":"corp-jwt","Type":"jwt","DisplayName":"Corp","Description":"corporate SSO","MaxTokenTTL":"1h","TokenLocality":"global",`+
		`"Config":{"JWTValidationPubKeys":[%q],"ClaimMappings":{"sub":"name"},"ExpirationLeeway":"30s"}}`, pem)
	resp := s.mustAdmin(t, "PUT", methodPath, body)
	createdBody := resp.Body
	if got, want := amKeys(t, resp.Body), []string{"Name", "Type", "DisplayName", "Description", "MaxTokenTTL", "TokenLocality", "Config", "Namespace", "CreateIndex", "ModifyIndex"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys: got %v, want %v", got, want)
	}
	var created amOut
	resp.JSON(t, &created)
	wantConfig := map[string]any{"JWTValidationPubKeys": []any{pem}, "ClaimMappings": map[string]any{"sub": "name"}, "ExpirationLeeway": "30s"}
	if created.Name != "corp-jwt" || created.Type != "jwt" || created.MaxTokenTTL != "1h0m0s" || created.TokenLocality != "global" ||
		created.Namespace != "default" || created.CreateIndex == 0 || created.CreateIndex != created.ModifyIndex || !reflect.DeepEqual(created.Config, wantConfig) {
		t.Errorf("created: %+v", created)
	}

	// Read: the same, with the read headers; by name in any case.
	resp = s.mustAdmin(t, "GET", methodPath+"/corp-jwt", "")
	expectJSON(t, resp, createdBody)
	if idx := indexOf(t, resp); idx < created.ModifyIndex {
		t.Errorf("X-Service-Index %d < ModifyIndex %d", idx, created.ModifyIndex)
	}
	expectHeader(t, resp, "X-Consul-KnownLeader", "true")
	s.mustAdmin(t, "GET", methodPath+"/CORP-JWT", "")

	// A second method: MaxTokenTTL as nanoseconds, nothing optional.
	resp = s.mustAdmin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"b","Type":"jwt","MaxTokenTTL":120000000000,"Config":{"JWKSURL":"https://keys.example/jwks"}}`))
	if got, want := amKeys(t, resp.Body), []string{"Name", "Type", "MaxTokenTTL", "Config", "Namespace", "CreateIndex", "ModifyIndex"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys with empty optional fields: got %v, want %v", got, want)
	}
	var b amOut
	resp.JSON(t, &b)
	if b.MaxTokenTTL != "2m0s" {
		t.Errorf("MaxTokenTTL from nanoseconds: %q", b.MaxTokenTTL)
	}

	// List: stubs without Config, by name.
	resp = s.mustAdmin(t, "GET", methodsPath, "")
	want := fmt.Sprintf(`[{"Name":"b","Type":"jwt","MaxTokenTTL":"2m0s","Namespace":"default","CreateIndex":%d,"ModifyIndex":%d},`+
		`{"Name":"corp-jwt","Type":"jwt","DisplayName":"Corp","Description":"corporate SSO","MaxTokenTTL":"1h0m0s","TokenLocality":"global","Namespace":"default","CreateIndex":%d,"ModifyIndex":%d}]`,
		b.CreateIndex, b.ModifyIndex, created.CreateIndex, created.ModifyIndex)
	expectJSON(t, resp, want)
	expectJSON(t, s.mustAdmin(t, "GET", methodsPath+"?ns=team9", ""), "[]")

	// Update: a full replace; Type may be omitted; CreateIndex stays.
	resp = s.mustAdmin(t, "PUT", methodPath+"/corp-jwt", fmt.Sprintf(`{"Description":"changed","Config":{"JWTValidationPubKeys":[%q]}}`, pem))
	var updated amOut
	resp.JSON(t, &updated)
	if updated.Description != "changed" || updated.DisplayName != "" || updated.MaxTokenTTL != "" || updated.Type != "jwt" ||
		updated.CreateIndex != created.CreateIndex || updated.ModifyIndex <= created.ModifyIndex {
		t.Errorf("updated: %+v", updated)
	}
	// The official client sends the whole object back, indexes included.
	resp = s.mustAdmin(t, "PUT", methodPath+"/corp-jwt", fmt.Sprintf(`{"Name":"corp-jwt","Type":"jwt","Config":{"JWTValidationPubKeys":[%q]},"CreateIndex":1,"ModifyIndex":2,"Namespace":"default"}`, pem))
	resp.JSON(t, &updated)
	if updated.CreateIndex != created.CreateIndex {
		t.Errorf("a client-sent CreateIndex was taken: %+v", updated)
	}

	// Delete: true, then gone.
	expectJSON(t, s.mustAdmin(t, "DELETE", methodPath+"/b", ""), "true")
	expectError(t, s.admin(t, "GET", methodPath+"/b", ""), 404, "Requested auth method does not exist: ACL not found")
	expectError(t, s.admin(t, "DELETE", methodPath+"/b", ""), 404, "Cannot find auth method to delete")
	expectError(t, s.admin(t, "PUT", methodPath+"/b", `{"Type":"jwt","Config":{"JWKSURL":"https://k.example"}}`), 404, `cannot find auth method "b"`)
	expectError(t, s.admin(t, "GET", methodPath+"/", ""), 400, "Missing auth method name")
	expectError(t, s.admin(t, "DELETE", methodPath+"/", ""), 400, "Missing auth method name")
	// PUT on the trailing slash creates.
	s.mustAdmin(t, "PUT", methodPath+"/", `{"Name":"c","Type":"jwt","Config":{"JWKSURL":"https://k.example"}}`)
	expectError(t, s.admin(t, "PATCH", methodPath+"/c", ""), 405, "method PATCH not allowed")
}

func TestAuthMethodValidation(t *testing.T) {
	s := lgStart(t)
	pem, _ := json.Marshal(newLgKey(t, jose.EdDSA).pem(t))
	cfg := `"Config":{"JWTValidationPubKeys":[` + string(pem) + `]}`
	s.mustAdmin(t, "PUT", methodPath, `{"Name":"exists","Type":"jwt",`+cfg+`}`)
	before := s.mustAdmin(t, "GET", methodsPath, "").Body

	cases := []struct {
		path, body string
		status     int
		msg        string
	}{
		{methodPath, ``, 400, "AuthMethod decoding failed: EOF"},
		{methodPath, `{"Name":"x","Type":"jwt","Foo":1}`, 400, `AuthMethod decoding failed: json: unknown field "Foo"`},
		{methodPath, `{"Name":"x","Type":"jwt","MaxTokenTTL":"soon"}`, 400, `AuthMethod decoding failed: time: invalid duration "soon"`},
		{methodPath, `{"Name":"x","Type":"jwt","MaxTokenTTL":true}`, 400, "AuthMethod decoding failed: MaxTokenTTL must be a duration string or a number of nanoseconds"},
		{methodPath, `{"Name":"x","Type":"jwt","NamespaceRules":[]}`, 400, `AuthMethod decoding failed: json: unknown field "NamespaceRules"`},
		{methodPath, `{"Type":"jwt",` + cfg + `}`, 400, "Invalid Auth Method: no Name is set"},
		{methodPath, `{"Name":"bad name","Type":"jwt",` + cfg + `}`, 400, "Invalid Auth Method: invalid Name. Only alphanumeric characters, '-' and '_' are allowed"},
		{methodPath, `{"Name":"` + strings.Repeat("a", 129) + `","Type":"jwt",` + cfg + `}`, 400, "Invalid Auth Method: Name is too long: 129 bytes; the limit is 128"}, // issue 8: the cap is named
		{methodPath, `{"Name":"x",` + cfg + `}`, 400, "Invalid Auth Method: Type should be one of: [jwt]"},
		{methodPath, `{"Name":"x","Type":"kubernetes",` + cfg + `}`, 400, "Invalid Auth Method: Type should be one of: [jwt]"},
		{methodPath, `{"Name":"x","Type":"JWT",` + cfg + `}`, 400, "Invalid Auth Method: Type should be one of: [jwt]"},
		{methodPath, `{"Name":"x","Type":"jwt","MaxTokenTTL":"30s",` + cfg + `}`, 400, "MaxTokenTTL 30s cannot be less than 1m0s"},
		{methodPath, `{"Name":"x","Type":"jwt","MaxTokenTTL":"25h",` + cfg + `}`, 400, "MaxTokenTTL 25h0m0s cannot be more than 24h0m0s"},
		{methodPath, `{"Name":"x","Type":"jwt","MaxTokenTTL":-1,` + cfg + `}`, 400, "MaxTokenTTL -1ns cannot be less than 1m0s"},
		{methodPath, `{"Name":"x","Type":"jwt","TokenLocality":"planet",` + cfg + `}`, 400, "Invalid Auth Method: TokenLocality should be one of 'local' or 'global'"},
		{methodPath, `{"Name":"x","Type":"jwt"}`, 400, `Invalid Auth Method: exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type "jwt"`},
		{methodPath, `{"Name":"x","Type":"jwt","Config":{"JWTValidationPubKeys":["junk"]}}`, 400, "Invalid Auth Method: error parsing public key JWTValidationPubKeys[0]: data does not contain any valid RSA, ECDSA, or ED25519 public keys"},
		{methodPath, `{"Name":"x","Type":"jwt","Config":{"JWKSURL":"https://k.example","Nope":1}}`, 400, "Invalid Auth Method: Config has invalid keys: Nope"},
		{methodPath, `{"Name":"x","Type":"jwt","Config":{"JWKSURL":"https://k.example","OIDCClientID":"a"}}`, 400, `Invalid Auth Method: 'OIDCClientID' must not be set for type "jwt"`},
		{methodPath, `{"Name":"x","Type":"jwt","Config":{"JWKSURL":"https://k.example","JWTSupportedAlgs":["HS256"]}}`, 400, "Invalid Auth Method: Invalid supported algorithm: HS256"},
		{methodPath, `{"Name":"x","Type":"jwt","Config":{"JWKSURL":"https://k.example","ClaimMappings":{"a":"t","b":"t"}}}`, 400, `Invalid Auth Method: ClaimMappings contains multiple mappings for key "t"`},
		{methodPath, `{"Name":"x","Type":"jwt","Config":{"JWKSURL":"https://k.example","ClockSkewLeeway":60}}`, 400, `Invalid Auth Method: 'ClockSkewLeeway' must be a Go duration string such as "150s", not the number 60`},
		{methodPath, `{"Name":"exists","Type":"jwt",` + cfg + `}`, 409, `Invalid Auth Method: An Auth Method with Name "exists" already exists`},
		{methodPath + "/exists", `{"Name":"other","Type":"jwt",` + cfg + `}`, 400, "AuthMethod Name in URL and payload do not match"},
		{methodPath + "/exists", `{"Name":"EXISTS","Type":"jwt",` + cfg + `}`, 400, "AuthMethod Name in URL and payload do not match"},
		{methodPath + "/exists", `{"Type":"kubernetes",` + cfg + `}`, 400, "the Type field of an Auth Method is immutable"},
		{methodPath + "?ns=bad!", `{"Name":"x","Type":"jwt",` + cfg + `}`, 400, `Invalid namespace "bad!": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
	}
	for _, tc := range cases {
		resp := s.admin(t, "PUT", tc.path, tc.body)
		if resp.Status != tc.status || resp.Body != tc.msg {
			t.Errorf("PUT %s %.80s:\n got %s\nwant %d %q", tc.path, tc.body, resp, tc.status, tc.msg)
		}
	}
	if after := s.mustAdmin(t, "GET", methodsPath, "").Body; after != before {
		t.Errorf("rejected writes changed the methods:\nbefore %s\n after %s", before, after)
	}
}

func TestAuthMethodPermissions(t *testing.T) {
	s := lgStart(t)
	anon := "Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token."
	expectError(t, s.Do(t, "GET", methodsPath, ""), 403, fmt.Sprintf(anon, "acl:read"))
	expectError(t, s.Do(t, "GET", methodPath+"/x", ""), 403, fmt.Sprintf(anon, "acl:read"))
	expectError(t, s.Do(t, "PUT", methodPath, `{"Name":"x"}`), 403, fmt.Sprintf(anon, "acl:write"))
	expectError(t, s.Do(t, "PUT", methodPath+"/x", `{}`), 403, fmt.Sprintf(anon, "acl:write"))
	expectError(t, s.Do(t, "DELETE", methodPath+"/x", ""), 403, fmt.Sprintf(anon, "acl:write"))
	expectError(t, s.Do(t, "GET", methodsPath, "", "X-Service-Token", "unknown-secret"), 403, "ACL not found")

	// acl:read may read but not write.
	s.mustAdmin(t, "PUT", "/v1/acl/policy", `{"Name":"reader","Rules":"acl = \"read\""}`)
	var reader struct{ AccessorID, SecretID string }
	s.mustAdmin(t, "PUT", "/v1/acl/token", `{"Policies":[{"Name":"reader"}]}`).JSON(t, &reader)
	if r := s.Do(t, "GET", methodsPath, "", "X-Service-Token", reader.SecretID); r.Status != 200 {
		t.Errorf("acl:read list: %s", r)
	}
	expectError(t, s.Do(t, "PUT", methodPath, `{"Name":"x"}`, "X-Service-Token", reader.SecretID), 403,
		fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission 'acl:write'", reader.AccessorID))
}

func TestAuthMethodNamespaces(t *testing.T) {
	s := lgStart(t)
	s.mustAdmin(t, "PUT", methodPath+"?ns=team1", `{"Name":"t1","Type":"jwt","Config":{"JWKSURL":"https://k.example"}}`)
	expectError(t, s.admin(t, "GET", methodPath+"/t1", ""), 404, "Requested auth method does not exist: ACL not found")
	var m amOut
	s.mustAdmin(t, "GET", methodPath+"/t1?ns=team1", "").JSON(t, &m)
	if m.Namespace != "team1" {
		t.Errorf("namespace: %+v", m)
	}
	if r := s.Do(t, "GET", methodPath+"/t1", "", "X-Service-Token", lgMgmt, "X-Service-Namespace", "team1"); r.Status != 200 {
		t.Errorf("read with the namespace header: %s", r)
	}
	expectJSON(t, s.mustAdmin(t, "GET", methodsPath, ""), "[]")
	if r := s.mustAdmin(t, "GET", methodsPath+"?ns=*", ""); !strings.Contains(r.Body, `"Name":"t1"`) {
		t.Errorf("ns=* list: %s", r)
	}
	expectError(t, s.admin(t, "DELETE", methodPath+"/t1", ""), 404, "Cannot find auth method to delete")
	// Names are unique across namespaces.
	resp := s.admin(t, "PUT", methodPath, `{"Name":"t1","Type":"jwt","Config":{"JWKSURL":"https://k.example"}}`)
	expectError(t, resp, 409, `Invalid Auth Method: An Auth Method with Name "t1" already exists`)
	expectJSON(t, s.mustAdmin(t, "DELETE", methodPath+"/t1?ns=team1", ""), "true")
}

// TestAuthMethodDeleteCascade: deleting a method deletes its binding rules
// (in every namespace) and the tokens it minted, and only those.
func TestAuthMethodDeleteCascade(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.ES256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "doomed", "", key))
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "kept", "", key))
	s.addRule(t, "doomed", "", "service", "web")
	s.addRule(t, "doomed", "", "service", "other", "?ns=team1")
	keptRule := s.addRule(t, "kept", "", "service", "web")
	bearer := key.sign(t, claims(nil))
	doomedTok := s.login(t, "doomed", bearer)
	keptTok := s.login(t, "kept", bearer)

	expectJSON(t, s.mustAdmin(t, "DELETE", methodPath+"/doomed", ""), "true")
	expectJSON(t, s.mustAdmin(t, "GET", rulesPath+"?ns=*&authmethod=doomed", ""), "[]")
	var rules []rule
	s.mustAdmin(t, "GET", rulesPath+"?ns=*", "").JSON(t, &rules)
	if len(rules) != 1 || rules[0].ID != keptRule {
		t.Errorf("rules left: %+v", rules)
	}
	s.expectRefused(t, doomedTok.SecretID)
	expectError(t, s.Do(t, "POST", logoutPath, "", "X-Service-Token", doomedTok.SecretID), 403, "ACL not found")
	if r := s.Do(t, "GET", rulesPath, "", "X-Service-Token", keptTok.SecretID); r.Status != 403 || !strings.Contains(r.Body, "lacks permission") {
		t.Errorf("the other method's token: %s", r)
	}
	// Login through the deleted method: not found.
	expectError(t, s.Do(t, "POST", loginPath, loginBody("doomed", bearer)), 403, `ACL not found: auth method "doomed" not found`)
}

// TestBindingRuleAgainstMethod: when the named method exists, a rule's
// Selector and BindName may only use that method's identity fields.
func TestBindingRuleAgainstMethod(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.RS256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "m", "", key))

	put := func(body string) *servertest.Response { return s.admin(t, "PUT", rulePath, body) }
	cases := []struct {
		body, msg string
	}{
		{`{"AuthMethod":"m","Selector":"value.nope == \"x\"","BindType":"service","BindName":"web"}`,
			`invalid Binding Rule: Selector is invalid: Selector "value.nope" is not valid`},
		{`{"AuthMethod":"m","Selector":"serviceaccount.name == \"x\"","BindType":"service","BindName":"web"}`,
			`invalid Binding Rule: Selector is invalid: Selector "serviceaccount.name" is not valid`},
		{`{"AuthMethod":"m","Selector":"list.groups == \"x\"","BindType":"service","BindName":"web"}`,
			`invalid Binding Rule: Selector is invalid: Invalid match operator "Equal" for selector "list.groups"`},
		{`{"AuthMethod":"m","BindType":"service","BindName":"web-${value.nope}"}`,
			`Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": error interpreting template: 1:7: unknown variable accessed: value.nope`},
		{`{"AuthMethod":"m","BindType":"role","BindName":"${list.groups}"}`,
			`Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "role": error interpreting template: 1:3: unknown variable accessed: list.groups`},
	}
	for _, tc := range cases {
		expectError(t, put(tc.body), 400, tc.msg)
	}
	// The method's own fields are fine.
	ok := put(`{"AuthMethod":"m","Selector":"\"admin\" in list.groups and value.team == \"x\"","BindType":"service","BindName":"${value.team}-${value.name}"}`)
	if ok.Status != 200 {
		t.Fatalf("a rule over the method's fields: %s", ok)
	}
	var r rule
	ok.JSON(t, &r)
	// An update that omits AuthMethod is checked against the stored rule's method.
	expectError(t, s.admin(t, "PUT", ruleURL(r.ID), `{"BindType":"service","BindName":"${value.zzz}"}`), 400,
		`Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": error interpreting template: 1:3: unknown variable accessed: value.zzz`)
	// A method that does not exist yet: only the generic checks.
	if r := put(`{"AuthMethod":"later","Selector":"value.anything == \"x\"","BindType":"service","BindName":"${value.whatever}"}`); r.Status != 200 {
		t.Errorf("a rule for a method that does not exist yet: %s", r)
	}
}

// TestConsulAPIAuthMethodsAndLogin drives the API with the official Consul
// Go client: auth-method CRUD, login, logout.
func TestConsulAPIAuthMethodsAndLogin(t *testing.T) {
	s := lgStart(t)
	c := newConsulAPIClient(t, s.TestServer)
	acl := c.ACL()
	w := &api.WriteOptions{Token: lgMgmt}
	q := &api.QueryOptions{Token: lgMgmt}
	key := newLgKey(t, jose.ES256)

	method, _, err := acl.AuthMethodCreate(&api.ACLAuthMethod{
		Name: "consul-jwt", Type: "jwt", MaxTokenTTL: 10 * time.Minute, TokenLocality: "local",
		Config: map[string]any{
			"JWTValidationPubKeys": []string{key.pem(t)}, "BoundAudiences": []string{"ctlplane"},
			"ClaimMappings": map[string]string{"sub": "name"}, "ListClaimMappings": map[string]string{"groups": "groups"},
		},
	}, w)
	if err != nil {
		t.Fatalf("AuthMethodCreate: %v", err)
	}
	if method.MaxTokenTTL != 10*time.Minute || method.CreateIndex == 0 || method.Namespace != "default" {
		t.Errorf("created: %+v", method)
	}
	method.Description = "updated"
	if method, _, err = acl.AuthMethodUpdate(method, w); err != nil || method.Description != "updated" {
		t.Fatalf("AuthMethodUpdate: %v %+v", err, method)
	}
	read, meta, err := acl.AuthMethodRead("consul-jwt", q)
	if err != nil || read == nil || read.Description != "updated" || meta.LastIndex == 0 {
		t.Fatalf("AuthMethodRead: %v %+v %+v", err, read, meta)
	}
	if missing, _, err := acl.AuthMethodRead("nope", q); err != nil || missing != nil {
		t.Errorf("AuthMethodRead of a missing method: %v %+v", err, missing)
	}
	list, _, err := acl.AuthMethodList(q)
	if err != nil || len(list) != 1 || list[0].Name != "consul-jwt" || list[0].MaxTokenTTL != 10*time.Minute {
		t.Fatalf("AuthMethodList: %v %+v", err, list)
	}

	if _, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "consul-jwt", Selector: `"admin" in list.groups`,
		BindType: api.BindingRuleBindTypeService, BindName: "${value.name}"}, w); err != nil {
		t.Fatalf("BindingRuleCreate: %v", err)
	}
	tok, _, err := acl.Login(&api.ACLLoginParams{AuthMethod: "consul-jwt", BearerToken: key.sign(t, claims(map[string]any{"iss": nil})),
		Meta: map[string]string{"via": "consul-api"}}, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "web-frontend" || tok.AuthMethod != "consul-jwt" ||
		tok.ExpirationTime == nil || !tok.Local || tok.Description != `token created via login: {"via":"consul-api"}` {
		t.Errorf("login token: %+v", tok)
	}
	if _, err := acl.Logout(&api.WriteOptions{Token: tok.SecretID}); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	if _, err := acl.Logout(&api.WriteOptions{Token: tok.SecretID}); err == nil || !strings.Contains(err.Error(), "ACL not found") {
		t.Errorf("second Logout: %v", err)
	}
	if _, err := acl.AuthMethodDelete("consul-jwt", w); err != nil {
		t.Fatalf("AuthMethodDelete: %v", err)
	}
	if rules, _, err := acl.BindingRuleList("consul-jwt", q); err != nil || len(rules) != 0 {
		t.Errorf("rules after the method was deleted: %v %+v", err, rules)
	}
}

// TestAuthMethodBlocking: list and read are blocking queries woken by a
// write to the auth-method table.
func TestAuthMethodBlocking(t *testing.T) {
	ts, h := serveOwn(t, lgStart(t).TestServer, ctlhttp.Services{})
	s := &lgServer{ts}
	idx := indexOf(t, s.mustAdmin(t, "GET", methodsPath, ""))
	done := make(chan *servertest.Response, 2)
	go func() {
		done <- s.Do(t, "GET", fmt.Sprintf("%s?index=%d&wait=10s", methodsPath, idx), "", "X-Service-Token", lgMgmt)
	}()
	go func() {
		done <- s.Do(t, "GET", fmt.Sprintf("%s/late?index=%d&wait=10s", methodPath, idx), "", "X-Service-Token", lgMgmt)
	}()
	waitBlocked(t, h, 2) // both reads wait before the write
	start := time.Now()
	s.mustAdmin(t, "PUT", methodPath, `{"Name":"late","Type":"jwt","Config":{"JWKSURL":"https://k.example"}}`)
	for i := 0; i < 2; i++ {
		resp := <-done
		if resp.Status != 200 || !strings.Contains(resp.Body, `"Name":"late"`) || indexOf(t, resp) <= idx {
			t.Errorf("blocked read: %s", resp)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("blocked reads took %v to wake", d)
	}
}
