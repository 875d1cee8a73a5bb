package http_test

// POST /v1/acl/auth-method/<name>/explain through the real stack: which
// rules a login would match, why the others do not, and the token it
// would mint, from a signed JWT or from claims.

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
)

// methodExplainOut is an explain answer.
type methodExplainOut struct {
	AuthMethod    string
	ProjectedVars map[string]any
	Rules         []struct {
		ID, Description, BindType, BindName, Selector string
		Matched                                       bool
		Reason, BoundName                             string
	}
	Token *struct {
		Roles             []struct{ ID, Name string }
		ServiceIdentities []struct{ ServiceName string }
		NodeIdentities    []struct{ NodeName, Datacenter string }
		Policies          []struct{ ID, Name string }
		Local             bool
		ExpirationTTL     string
	}
	Error       string
	LoginStatus int
}

func claimsBody(claims string) string { return `{"Claims":` + claims + `}` }

func bearerBody(bearer string) string {
	b, _ := json.Marshal(map[string]string{"BearerToken": bearer})
	return string(b)
}

// verdicts is each rule's "matched|reason|bound name", by BindName.
func (o methodExplainOut) verdicts() map[string]string {
	out := map[string]string{}
	for _, r := range o.Rules {
		out[r.BindName] = strings.Join([]string{map[bool]string{true: "matched", false: "no"}[r.Matched], r.Reason, r.BoundName}, "|")
	}
	return out
}

func TestAuthMethodExplain(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.EdDSA)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "corp", `,"MaxTokenTTL":"1h"`, key))
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "solo", "", key))
	s.addRule(t, "corp", `value.team == "Payments" and "admin" in list.groups`, "service", "${value.team}-${value.name}")
	s.addRule(t, "corp", `value.name == "web"`, "node", "n1")
	s.addRule(t, "corp", "", "role", "ops")
	s.addRule(t, "corp", `"root" in list.groups`, "role", "missing-${value.team}")
	s.addRule(t, "solo", `value.team == "ops"`, "role", "gone-${value.team}")
	s.mustAdmin(t, "PUT", "/v1/acl/policy", `{"Name":"reader","Rules":"acl = \"read\""}`)
	s.mustAdmin(t, "PUT", "/v1/acl/role", `{"Name":"ops","Policies":[{"Name":"reader"}]}`)
	s.mustAdmin(t, "PUT", "/v1/acl/token", `{"SecretID":"3d1e9a64-46cf-4ab3-9d8a-0c7e1f2a9b01","Policies":[{"Name":"reader"}]}`)
	const readerSecret = "3d1e9a64-46cf-4ab3-9d8a-0c7e1f2a9b01"
	tokensBefore := s.mustAdmin(t, "GET", "/v1/acl/tokens", "").Body

	const (
		r1 = "${value.team}-${value.name}"
		r4 = "missing-${value.team}"
	)
	other := newLgKey(t, jose.EdDSA)
	cases := []struct {
		name, method, body string
		want               map[string]string // BindName: verdict
		vars               map[string]any
		services, roles    []string
		error              string
		status             int
	}{{
		name: "claims: matched and not matched with reasons", method: "corp",
		body: claimsBody(`{"sub":"Web","team":"Payments","groups":["admin"]}`),
		vars: map[string]any{"value.name": "Web", "value.team": "Payments", "value.region": "", "list.groups": []any{"admin"}},
		want: map[string]string{
			r1:    "matched|selector matched|payments-web",
			"n1":  `no|value.name == "web" is false: value.name is "Web"|`,
			"ops": "matched|no selector: matches every login|ops",
			r4:    `no|"root" in list.groups is false: list.groups is ["admin"]|`,
		},
		services: []string{"payments-web"}, roles: []string{"ops"}, status: 200,
	}, {
		name: "bearer token validated as login does", method: "corp",
		body: bearerBody(key.sign(t, claims(nil))),
		vars: map[string]any{"value.name": "Web-Frontend", "value.team": "Payments", "value.region": "EU", "list.groups": []any{"dev", "admin"}},
		want: map[string]string{
			r1:   "matched|selector matched|payments-web-frontend",
			"n1": `no|value.name == "web" is false: value.name is "Web-Frontend"|`,
		},
		services: []string{"payments-web-frontend"}, roles: []string{"ops"}, status: 200,
	}, {
		name: "and: only the failing clause is named", method: "corp",
		body: claimsBody(`{"team":"Billing","groups":["admin","root"]}`),
		want: map[string]string{
			r1: `no|value.team == "Payments" is false: value.team is "Billing"|`,
			r4: `matched|selector matched; but role "missing-billing" does not exist, so the rule binds nothing|`,
		},
		roles: []string{"ops"}, status: 200,
	}, {
		name: "invalid bind name refuses the login", method: "corp",
		body: claimsBody(`{"sub":"x y","team":"Payments","groups":["admin"]}`),
		want: map[string]string{
			r1: `matched|selector matched; but BindName "${value.team}-${value.name}" interpolates to an invalid service name ` +
				`(failed to validate bindType "service": invalid bind name: "payments-x y"), so login is refused|`,
		},
		error:  `400 cannot compute "service" bind name for bind target: failed to validate bindType "service": invalid bind name: "payments-x y"`,
		status: 400,
	}, {
		name: "missing role: nothing bound, 403", method: "solo",
		body: claimsBody(`{"team":"ops"}`),
		want: map[string]string{
			"gone-${value.team}": `matched|selector matched; but role "gone-ops" does not exist, so the rule binds nothing|`,
		},
		error: "403 Permission denied", status: 403,
	}, {
		name: "no rule matched, 403", method: "solo",
		body: claimsBody(`{"team":"dev"}`),
		want: map[string]string{
			"gone-${value.team}": `no|value.team == "ops" is false: value.team is "dev"|`,
		},
		error: "403 Permission denied", status: 403,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.mustAdmin(t, "POST", methodPath+"/"+tc.method+"/explain", tc.body)
			var out methodExplainOut
			resp.JSON(t, &out)
			if out.AuthMethod != tc.method || out.LoginStatus != tc.status || out.Error != tc.error {
				t.Errorf("got method %q, status %d, error %q; want %q, %d, %q", out.AuthMethod, out.LoginStatus, out.Error, tc.method, tc.status, tc.error)
			}
			got := out.verdicts()
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("rule %s:\n got %s\nwant %s", name, got[name], want)
				}
			}
			if tc.vars != nil && !reflect.DeepEqual(out.ProjectedVars, tc.vars) {
				t.Errorf("ProjectedVars: got %v, want %v", out.ProjectedVars, tc.vars)
			}
			if tc.status != 200 {
				if out.Token != nil {
					t.Errorf("a refused login shows a token: %+v", out.Token)
				}
				return
			}
			if out.Token == nil {
				t.Fatalf("no token: %s", resp.Body)
			}
			var services, roles, policies []string
			for _, si := range out.Token.ServiceIdentities {
				services = append(services, si.ServiceName)
			}
			for _, r := range out.Token.Roles {
				roles = append(roles, r.Name)
			}
			for _, p := range out.Token.Policies {
				policies = append(policies, p.Name)
			}
			if !reflect.DeepEqual(services, tc.services) || !reflect.DeepEqual(roles, tc.roles) ||
				!reflect.DeepEqual(policies, []string{"reader"}) || len(out.Token.NodeIdentities) != 0 {
				t.Errorf("token: services %v roles %v policies %v nodes %v", services, roles, policies, out.Token.NodeIdentities)
			}
			if !out.Token.Local || out.Token.ExpirationTTL != "1h0m0s" {
				t.Errorf("token: Local %v, ExpirationTTL %q", out.Token.Local, out.Token.ExpirationTTL)
			}
		})
	}

	// The same bearer token through login mints what explain predicted.
	tok := s.login(t, "corp", key.sign(t, claims(nil)))
	if len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "payments-web-frontend" ||
		len(tok.Roles) != 1 || tok.Roles[0].Name != "ops" {
		t.Errorf("login minted %+v", tok)
	}
	if resp := s.Do(t, "POST", logoutPath, "", "X-Service-Token", tok.SecretID); resp.Status != 200 {
		t.Fatalf("logout: %s", resp)
	}

	// Refusals of the explain itself: each a 4xx with what is wrong.
	denied := []struct {
		name, path, body string
		headers          []string
		status           int
		msg              string
	}{
		{"anonymous", "/corp/explain", claimsBody(`{}`), nil, 403,
			"Permission denied: anonymous token lacks permission 'acl:write'. The anonymous token is used implicitly when a request does not specify a token."},
		{"acl:read is not enough", "/corp/explain", claimsBody(`{}`), []string{"X-Service-Token", readerSecret}, 403, ""},
		{"token signed by another key", "/corp/explain", bearerBody(other.sign(t, claims(nil))), nil, 400,
			"BearerToken does not validate (login would answer 401): no known key successfully validated the token signature"},
		{"unsigned token", "/corp/explain", bearerBody("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."), nil, 400,
			"BearerToken does not validate (login would answer 401): error parsing token: unexpected signature algorithm \"none\"; expected [\"RS256\" \"RS384\" \"RS512\" \"ES256\" \"ES384\" \"ES512\" \"PS256\" \"PS384\" \"PS512\" \"EdDSA\"]"},
		{"expired token", "/corp/explain", bearerBody(key.sign(t, claims(map[string]any{"exp": 1, "iat": nil, "nbf": nil}))), nil, 400,
			"BearerToken does not validate (login would answer 401): error validating claims: go-jose/go-jose/jwt: validation failed, token is expired (exp)"},
		{"wrong audience", "/corp/explain", bearerBody(key.sign(t, claims(map[string]any{"aud": []string{"other"}}))), nil, 400,
			"BearerToken does not validate (login would answer 401): error validating claims: aud claim does not match any bound audience"},
		{"unknown method", "/ghost/explain", claimsBody(`{}`), nil, 404, "Requested auth method does not exist: ACL not found"},
		{"neither", "/corp/explain", `{}`, nil, 400, "Explain needs exactly one of BearerToken or Claims"},
		{"both", "/corp/explain", `{"Claims":{},"BearerToken":"x"}`, nil, 400, "Explain needs exactly one of BearerToken or Claims"},
		{"unknown field", "/corp/explain", `{"Identity":{}}`, nil, 400, `Explain decoding failed: json: unknown field "Identity"`},
		{"claims not an object", "/corp/explain", `{"Claims":[1]}`, nil, 400,
			"Invalid Claims: claims must be a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"claim of the wrong type", "/corp/explain", claimsBody(`{"sub":{"a":1}}`), nil, 400,
			"Invalid Claims: error converting claim 'sub' to string from unknown type map[string]interface {}"},
	}
	for _, d := range denied {
		t.Run(d.name, func(t *testing.T) {
			headers := d.headers
			if headers == nil && d.name != "anonymous" {
				headers = []string{"X-Service-Token", lgMgmt}
			}
			resp := s.Do(t, "POST", methodPath+d.path, d.body, headers...)
			if d.msg == "" {
				if resp.Status != d.status || !strings.Contains(resp.Body, "lacks permission 'acl:write'") {
					t.Errorf("got %s, want %d naming acl:write", resp, d.status)
				}
				return
			}
			expectError(t, resp, d.status, d.msg)
		})
	}
	// A method in another namespace is found only there.
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "teamed", `,"Namespace":"team1"`, key))
	expectError(t, s.admin(t, "POST", methodPath+"/teamed/explain", claimsBody(`{}`)), 404, "Requested auth method does not exist: ACL not found")
	if resp := s.admin(t, "POST", methodPath+"/teamed/explain?ns=team1", claimsBody(`{}`)); resp.Status != 200 || !strings.Contains(resp.Body, `"AuthMethod":"teamed"`) {
		t.Errorf("explain in team1: %s", resp)
	}
	// GET on the explain path is not an auth method read.
	if resp := s.admin(t, "GET", methodPath+"/corp/explain", ""); resp.Status != 405 {
		t.Errorf("GET explain: %s", resp)
	}
	// Nothing was minted by any explain.
	if after := s.mustAdmin(t, "GET", "/v1/acl/tokens", "").Body; after != tokensBefore {
		t.Errorf("explain minted tokens:\nbefore %s\nafter  %s", tokensBefore, after)
	}
}

// TestAuthMethodExplainACLOff: with access control off anyone may explain,
// and the answer says that login would be refused.
func TestAuthMethodExplainACLOff(t *testing.T) {
	s := &lgServer{servertest.Start(t)}
	key := newLgKey(t, jose.ES256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "corp", "", key))
	s.addRule(t, "corp", "", "service", "svc-${value.name}")
	resp := s.Do(t, "POST", methodPath+"/corp/explain", claimsBody(`{"sub":"Web"}`))
	if resp.Status != 200 {
		t.Fatalf("explain: %s", resp)
	}
	var out methodExplainOut
	resp.JSON(t, &out)
	if out.Error != "401 ACL support disabled" || out.LoginStatus != 401 || out.Token != nil ||
		len(out.Rules) != 1 || out.Rules[0].BoundName != "svc-web" {
		t.Errorf("explain with ACLs off: %s", resp.Body)
	}
}
