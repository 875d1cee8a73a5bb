package http_test

// Bounded inputs (issue 8, findings 3 and 7): every field cap is a 400 that
// names the field and the cap, and nesting is refused before any parser
// sees it.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	jose "github.com/go-jose/go-jose/v4"
)

// nested wraps inner in n levels of open ... close.
func nested(open, inner, close string, n int) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// TestTemplateAndSelectorBombs: the review's requests. The BindName bomb
// overflowed the stack in hil.Parse (a fatal error: the whole process
// died); the selector bomb took seconds of CPU and most of a gigabyte.
// Both are now refused at once with the cap they exceed.
func TestTemplateAndSelectorBombs(t *testing.T) {
	ts := start(t)
	rule := func(selector, bindName string) string {
		b, _ := json.Marshal(map[string]string{"AuthMethod": "m", "BindType": "service", "Selector": selector, "BindName": bindName})
		return string(b)
	}
	hilBomb := "${" + nested("(", "1", ")", 450_000) + "}"
	selBomb := nested("(", `value.a == "x"`, ")", 100_000)
	deepTemplate := "${" + nested("(", "1", ")", bindrule.MaxTemplateNesting) + "}"
	// Each group alone nests within the cap but costs ~0.5M parser steps.
	costly := strings.TrimSuffix(strings.Repeat(nested("not (", "a == b", ")", 5)+" and ", 20), " and ")
	for _, c := range []struct {
		name, body, msg string
	}{
		{"BindName bomb", rule("", hilBomb), fmt.Sprintf("Invalid Binding Rule: BindName is too long: %d bytes; the limit is 1024", len(hilBomb))},
		{"deep BindName", rule("", deepTemplate), "Invalid Binding Rule: BindName nests ${ }, parentheses or brackets 33 levels deep; the limit is 32"},
		{"Selector bomb", rule(selBomb, "web"), fmt.Sprintf("Invalid Binding Rule: Selector is too long: %d bytes; the limit is 4096", len(selBomb))},
		{"deep Selector", rule(nested("(", `value.a == "x"`, ")", 6), "web"), "Invalid Binding Rule: Selector nests parentheses or brackets 6 levels deep; the limit is 5"},
		{"costly Selector", rule(costly, "web"), "invalid Binding Rule: Selector is invalid: the expression is too complex: parsing it takes more than 500000 steps; use fewer nested parentheses or clauses"},
		{"long Description", `{"AuthMethod":"m","BindType":"service","BindName":"web","Description":"` + strings.Repeat("d", 8193) + `"}`, "Invalid Binding Rule: Description is too long: 8193 bytes; the limit is 8192"},
		{"long AuthMethod", `{"AuthMethod":"` + strings.Repeat("m", 129) + `","BindType":"service","BindName":"web"}`, "Invalid Binding Rule: AuthMethod is too long: 129 bytes; the limit is 128"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := stateOf(t, ts)
			start := time.Now()
			expectError(t, ts.Do(t, "PUT", rulePath, c.body), 400, c.msg)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %v", d)
			}
			expectUnchanged(t, ts, before)
		})
	}
	// Within the caps a nested template and selector are still fine.
	ok := rule(nested("(", `value.a == "x"`, ")", 5), "${"+nested("(", `"web"`, ")", 30)+"}")
	if resp := ts.Do(t, "PUT", rulePath, ok); resp.Status != 200 {
		t.Fatalf("a rule within the caps: %s", resp)
	}
}

// TestACLObjectCaps: names, descriptions, rules and config of policies,
// roles, tokens and auth methods.
func TestACLObjectCaps(t *testing.T) {
	s := lgStart(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	str := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	deepRules := nested(`namespace "x" { `, "", "}", 33)
	bigConfig := fmt.Sprintf(`{"JWKSURL":"https://k.example","BoundAudiences":[%s]}`, strings.TrimSuffix(strings.Repeat(str(long(1000))+",", 66), ","))
	for _, c := range []struct {
		path, body, msg string
	}{
		{policyPath, `{"Name":` + str(long(129)) + `}`, "Invalid Policy: Name is too long: 129 bytes; the limit is 128"},
		{policyPath, `{"Name":"p","Description":` + str(long(8193)) + `}`, "Invalid Policy: Description is too long: 8193 bytes; the limit is 8192"},
		{policyPath, `{"Name":"p","Rules":` + str("# "+long(65535)) + `}`, "Invalid Policy: Rules is too long: 65537 bytes; the limit is 65536"},
		{policyPath, `{"Name":"p","Rules":` + str(deepRules) + `}`, "Invalid Policy: Rules nest braces or brackets 33 levels deep; the limit is 32"},
		{"/v1/acl/role", `{"Name":` + str(long(129)) + `}`, "Invalid Role: Name is too long: 129 bytes; the limit is 128"},
		{"/v1/acl/role", `{"Name":"r","Description":` + str(long(8193)) + `}`, "Invalid Role: Description is too long: 8193 bytes; the limit is 8192"},
		{"/v1/acl/token", `{"Description":` + str(long(8193)) + `}`, "Invalid Token: Description is too long: 8193 bytes; the limit is 8192"},
		{methodPath, `{"Name":` + str(long(129)) + `,"Type":"jwt"}`, "Invalid Auth Method: Name is too long: 129 bytes; the limit is 128"},
		{methodPath, `{"Name":"m","Type":"jwt","Description":` + str(long(8193)) + `}`, "Invalid Auth Method: Description is too long: 8193 bytes; the limit is 8192"},
		{methodPath, `{"Name":"m","Type":"jwt","DisplayName":` + str(long(257)) + `}`, "Invalid Auth Method: DisplayName is too long: 257 bytes; the limit is 256"},
		{methodPath, `{"Name":"m","Type":"jwt","Config":` + bigConfig + `}`, fmt.Sprintf("Invalid Auth Method: Config is too large: %d bytes of JSON; the limit is 65536", compactLen(t, bigConfig))},
	} {
		expectError(t, s.admin(t, "PUT", c.path, c.body), 400, c.msg)
	}
	// At the caps everything is accepted.
	s.mustAdmin(t, "PUT", policyPath, `{"Name":`+str(long(128))+`,"Description":`+str(long(8192))+`,"Rules":`+str(nested(`namespace "x" { `, `policy = "read"`, "}", 1))+`}`)
	s.mustAdmin(t, "PUT", "/v1/acl/token", `{"Description":`+str(long(8192))+`}`)
}

func compactLen(t *testing.T, js string) int {
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return len(b)
}

// TestLoginMetaCaps: login Meta is copied into the minted token's
// Description; the review had a 1 MB Meta accepted. Refused before the
// bearer token is looked at, for login and explain alike.
func TestLoginMetaCaps(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.ES256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "m", "", key))
	s.addRule(t, "m", "", "service", "web")
	bearer := key.sign(t, claims(nil))
	many := map[string]string{}
	for i := range acl.MaxLoginMetaPairs + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	escaped := map[string]string{}
	for i := range acl.MaxLoginMetaPairs {
		escaped[fmt.Sprint("k", i)] = strings.Repeat("\x01", acl.MaxLoginMetaValueLength)
	}
	for _, c := range []struct {
		meta map[string]string
		msg  string
	}{
		{many, "Invalid Meta: 33 pairs; the limit is 32"},
		{map[string]string{strings.Repeat("k", 129): "v"}, "Invalid Meta: a key is too long: 129 bytes; the limit is 128"},
		{map[string]string{"k": strings.Repeat("v", 513)}, `Invalid Meta: the value of "k" is too long: 513 bytes; the limit is 512`},
		{escaped, "Invalid Meta: the token Description it makes is "},
	} {
		body, _ := json.Marshal(map[string]any{"AuthMethod": "m", "BearerToken": bearer, "Meta": c.meta})
		resp := s.Do(t, "POST", loginPath, string(body))
		if resp.Status != 400 || !strings.HasPrefix(resp.Body, c.msg) {
			t.Errorf("login with Meta of %d pairs: %s, want 400 %q", len(c.meta), resp, c.msg)
		}
	}
	body, _ := json.Marshal(map[string]any{"AuthMethod": "m", "BearerToken": bearer, "Meta": many})
	expectError(t, s.admin(t, "POST", explainPath, string(body)), 400, "Invalid Meta: 33 pairs; the limit is 32")
	// Within the caps the Meta is in the Description, as upstream has it.
	body, _ = json.Marshal(map[string]any{"AuthMethod": "m", "BearerToken": bearer, "Meta": map[string]string{"pod": "web-1"}})
	resp := s.Do(t, "POST", loginPath, string(body))
	var tok loginToken
	resp.JSON(t, &tok)
	if tok.Description != `token created via login: {"pod":"web-1"}` {
		t.Errorf("Description %q", tok.Description)
	}
}

// TestDeploymentFilterCaps: the list filter is a go-bexpr expression like a
// selector, with the same caps.
func TestDeploymentFilterCaps(t *testing.T) {
	f, def, _ := listWorld(t)
	for _, c := range []struct{ filter, msg string }{
		{nested("(", `JobID == "web3"`, ")", 6), "failed to read filter expression: filter nests parentheses or brackets 6 levels deep; the limit is 5"},
		{nested("(", `JobID == "web3"`, ")", 100_000), "failed to read filter expression: filter is too long: 200015 bytes; the limit is 4096"},
	} {
		expectError(t, f.Do("GET", "/v1/deployments?filter="+url.QueryEscape(c.filter), ""), 400, c.msg)
	}
	resp := f.Do("GET", "/v1/deployments?filter="+url.QueryEscape(nested("(", `JobID == "web3"`, ")", 5)), "")
	var got []struct{ ID string }
	resp.JSON(t, &got)
	if resp.Status != 200 || len(got) != 1 || got[0].ID != def[3].ID {
		t.Errorf("a filter within the caps: %d %+v", resp.Status, got)
	}
}
