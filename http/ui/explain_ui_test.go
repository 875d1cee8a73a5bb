package ui_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// The login explain page (POST /v1/acl/auth-method/<name>/explain): claims
// pasted for a method show which rules match, why the others do not, and
// the token the login would mint.
func TestUILoginExplain(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(rootToken))
	root := []string{"X-Service-Token", rootToken}
	must := func(method, path, body string) {
		t.Helper()
		if r := ts.Do(t, method, path, body, root...); r.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
	}
	cfg, _ := json.Marshal(map[string]any{"JWTValidationPubKeys": []string{pubKeyPEM(t)},
		"ClaimMappings": map[string]string{"sub": "name", "team": "team"}, "ListClaimMappings": map[string]string{"groups": "groups"}})
	must(http.MethodPut, "/v1/acl/auth-method", `{"Name":"corp","Type":"jwt","MaxTokenTTL":"1h","Config":`+string(cfg)+`}`)
	must(http.MethodPut, "/v1/acl/policy", `{"Name":"reader","Rules":"acl = \"read\""}`)
	must(http.MethodPut, "/v1/acl/role", `{"Name":"ops","Policies":[{"Name":"reader"}]}`)
	must(http.MethodPut, "/v1/acl/binding-rule", `{"AuthMethod":"corp","Description":"payments services","Selector":"value.team == \"payments\"","BindType":"service","BindName":"${value.team}-${value.name}"}`)
	must(http.MethodPut, "/v1/acl/binding-rule", `{"AuthMethod":"corp","Description":"admins","Selector":"\"admin\" in list.groups","BindType":"role","BindName":"ops"}`)

	p := openTab(t, ts.URL)
	p.open("/ui/", "#login")
	p.fill("#token", rootToken)
	p.click(`#login button[type="submit"]`)
	p.waitText("#whoami", "Token:", 3*time.Second)
	p.open("/ui/acl/explain?method=corp", "#explain-form")
	p.waitText("#explain-method", "corp", 3*time.Second)
	p.run("claims mode", setSelect("#explain-mode", "claims"))
	p.fill("#explain-input", `{"sub":"web","team":"payments","groups":["dev"]}`)
	p.click(`#explain-form button[type="submit"]`)
	p.waitText("#explain-result", "Login with corp", 5*time.Second)
	rows := eval[[]string](p, "rules", `[...document.querySelectorAll('#explain-result table[aria-label="Binding rules"] tbody tr')].map(tr => tr.textContent)`)
	if len(rows) != 2 {
		t.Fatalf("rules shown: %q", rows)
	}
	var matched, unmatched string
	for _, r := range rows {
		switch {
		case contains(r, "✓ matched"):
			matched = r
		case contains(r, "✗ no match"):
			unmatched = r
		}
	}
	if !contains(matched, "payments services") || !contains(matched, "payments-web") {
		t.Errorf("the matching rule: %q", matched)
	}
	if !contains(unmatched, "admins") || !contains(unmatched, `list.groups`) {
		t.Errorf("the rule that does not match, with its reason: %q", unmatched)
	}
	p.waitText("#explain-token", "payments-web", time.Second)
	p.waitText("#explain-token", "1h", time.Second)
	p.waitText(`#explain-result table[aria-label="Projected variables"]`, "value.team", time.Second)

	// Now an admin: the role rule matches too, and the token carries the role.
	p.fill("#explain-input", `{"sub":"web","team":"payments","groups":["admin"]}`)
	p.click(`#explain-form button[type="submit"]`)
	p.waitText("#explain-token", "ops", 5*time.Second)

	// A bad claims document is said so, at the form.
	p.fill("#explain-input", `{"sub":`)
	p.click(`#explain-form button[type="submit"]`)
	p.waitText("#explain-error", "The claims are not valid JSON", 3*time.Second)
}
