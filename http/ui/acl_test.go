package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// A binding rule with an invalid selector: the server's message is shown
// at the Selector field; a bad bind name at Bind name; a valid rule is
// created and listed, then edited.
func TestUIBindingRuleErrorsAtTheirFields(t *testing.T) {
	ts := servertest.Start(t)
	p := openTab(t, ts.URL)
	p.open("/ui/acl/binding-rules", "#rule-form")
	p.waitText("#rules", "No binding rules.", 3*time.Second)
	p.fill("#f-AuthMethod", "minikube")
	p.fill("#f-Selector", "serviceaccount.name ==")
	p.fill("#f-BindName", "web")
	p.click(`#rule-form button[type="submit"]`)
	p.waitText("#f-Selector-error", "invalid Binding Rule: Selector is invalid:", 3*time.Second)
	for _, other := range []string{"#f-AuthMethod-error", "#f-BindName-error", "#f-BindType-error", "#form-error"} {
		if got := p.text(other); got != "" {
			t.Errorf("%s shows %q; the selector's error belongs at Selector only", other, got)
		}
	}
	if got := eval[string](p, "aria-invalid", `document.querySelector("#f-Selector").getAttribute("aria-invalid")`); got != "true" {
		t.Errorf("Selector aria-invalid %q", got)
	}

	p.fill("#f-Selector", `serviceaccount.namespace == "default"`)
	p.fill("#f-BindName", "Not A Name!")
	p.click(`#rule-form button[type="submit"]`)
	p.waitText("#f-BindName-error", "invalid bind name", 3*time.Second)
	if got := p.text("#f-Selector-error"); got != "" {
		t.Errorf("the fixed Selector still shows %q", got)
	}

	p.fill("#f-BindName", "web-${serviceaccount.name}")
	p.click(`#rule-form button[type="submit"]`)
	p.waitText("#rules table", `serviceaccount.namespace == "default"`, 3*time.Second)
	p.waitText("#rules table", "service: web-${serviceaccount.name}", time.Second)
	var rules []*state.BindingRule
	ts.Do(t, http.MethodGet, "/v1/acl/binding-rules", "").JSON(t, &rules)
	if len(rules) != 1 || rules[0].Selector != `serviceaccount.namespace == "default"` || rules[0].AuthMethod != "minikube" {
		t.Fatalf("stored rules: %+v", rules)
	}

	// Edit: the form is filled from the rule; a bad selector again lands at Selector.
	p.click(`#rules button[aria-label^="Edit rule"]`)
	p.waitText("#editor-heading", "Edit rule "+rules[0].ID[:8], 3*time.Second)
	p.fill("#f-Selector", "(((")
	p.click(`#rule-form button[type="submit"]`)
	p.waitText("#f-Selector-error", "Selector is invalid", 3*time.Second)
	p.fill("#f-Selector", `serviceaccount.namespace == "prod"`)
	p.click(`#rule-form button[type="submit"]`)
	p.waitText("#rules table", `serviceaccount.namespace == "prod"`, 3*time.Second)

	// Delete asks once more, in place.
	p.click(`#rules button[data-action="delete"]`)
	p.waitText(`#rules button[data-action="delete"]`, "Confirm delete", time.Second)
	if r := ts.Do(t, http.MethodGet, "/v1/acl/binding-rules", ""); r.Body == "[]" {
		t.Fatal("the first press deleted the rule")
	}
	p.click(`#rules button[data-action="delete"]`)
	p.waitText("#rules", "No binding rules.", 3*time.Second)
	if r := ts.Do(t, http.MethodGet, "/v1/acl/binding-rules", ""); r.Body != "[]" {
		t.Errorf("after Delete: %s", r.Body)
	}
}

// With ACLs on: a read-only token sees the job and its running deployment
// but no action button, and a page it may not read says "permission
// denied: <the server's message>"; the management token sees the buttons.
func TestUIReadOnlyToken(t *testing.T) {
	ts := devAgent(t, servertest.ACL(rootToken))
	root := []string{"X-Service-Token", rootToken}
	r := ts.Do(t, http.MethodPut, "/v1/acl/policy", `{"Name":"ro","Rules":"namespace \"default\" { policy = \"read\" }\nnode = \"read\""}`, root...)
	if r.Status != http.StatusOK {
		t.Fatalf("policy: %d %s", r.Status, r.Body)
	}
	r = ts.Do(t, http.MethodPut, "/v1/acl/token", `{"Description":"read-only","Policies":[{"Name":"ro"}]}`, root...)
	if r.Status != http.StatusOK {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	var tok struct{ AccessorID, SecretID string }
	if err := json.Unmarshal([]byte(r.Body), &tok); err != nil {
		t.Fatal(err)
	}
	register(t, ts, jobBody(2, 1, "v0"), root...)
	waitDeployment(t, ts, 0, "successful", func(d *state.Deployment) bool { return d.Status == "successful" }, root...)
	register(t, ts, jobBody(2, 1, "v1"), root...)
	waitDeployment(t, ts, 1, "with its canary", func(d *state.Deployment) bool { return len(d.TaskGroups["web"].PlacedCanaries) == 1 }, root...)

	p := openTab(t, ts.URL)
	p.open("/ui/", "#login")
	// Anonymous: nothing it may read (the list is filtered by namespace).
	p.waitText("#deployments", "No deployments.", 3*time.Second)
	p.fill("#token", "not-a-token")
	p.click(`#login button[type="submit"]`)
	p.waitText("#login-error", "The token was refused: ACL not found", 3*time.Second)

	p.fill("#token", tok.SecretID)
	p.click(`#login button[type="submit"]`)
	p.waitText("#whoami", "read-only", 3*time.Second)
	// The menu offers what the token may read: nodes, not the ACL pages.
	visible := eval[[]string](p, "menu", `[...document.querySelectorAll("nav li:not([hidden]) a")].map(a => a.textContent)`)
	if strings.Join(visible, ",") != "Deployments,Jobs,Run job,Nodes" {
		t.Errorf("the read-only token's menu: %q", visible)
	}
	p.waitText("#deployments", "web", 3*time.Second)
	if got := eval[string](p, "token storage", `sessionStorage.getItem("ctlplane.token")`); got != tok.SecretID {
		t.Errorf("session storage holds %q", got)
	}
	p.open("/ui/jobs/default/web", "#deployment .group")
	p.waitText("#deployment", "running", 3*time.Second)
	p.waitText(`#deployment [data-count="canaries"]`, "1/1", 5*time.Second)
	if n := p.count("button[data-action]"); n != 0 {
		t.Errorf("the read-only token sees %d action buttons on the job page", n)
	}
	p.open("/ui/nodes", "#nodes table")
	if n := p.count("button[data-action]"); n != 0 {
		t.Errorf("the read-only token sees %d node toggles", n)
	}
	p.open("/ui/acl/binding-rules", "#rules")
	p.waitText("#rules", "permission denied: ", 3*time.Second)
	if n := p.count("#rule-form"); n != 0 {
		t.Error("the read-only token is offered the binding-rule form")
	}
	msg := p.text("#rules .error")
	resp := ts.Do(t, http.MethodGet, "/v1/acl/binding-rules", "", "X-Service-Token", tok.SecretID)
	if resp.Status != http.StatusForbidden || msg != "permission denied: "+strings.TrimSpace(resp.Body) {
		t.Errorf("page shows %q; the API answers %d %q", msg, resp.Status, resp.Body)
	}

	// The token never travels in a URL: every request the page made carried it in a header.
	urls := eval[[]string](p, "resources", `performance.getEntriesByType("resource").map(e => e.name)`)
	for _, u := range urls {
		if strings.Contains(u, tok.SecretID) {
			t.Errorf("the token is in a URL: %s", u)
		}
	}

	// The token deleted while a page follows the stream: the stream ends and
	// says why; a reload asks for a token again.
	p.open("/ui/", "#deployments table")
	p.waitText("#live", "live", 3*time.Second)
	if r := ts.Do(t, http.MethodDelete, "/v1/acl/token/"+tok.AccessorID, "", root...); r.Status != http.StatusOK {
		t.Fatalf("delete the token: %d %s", r.Status, r.Body)
	}
	// The server's closing line ("ACL token not found: …"), or the 403 of the
	// attempt to resume ("permission denied: ACL not found"), whichever is last.
	p.waitJS("the stream's end", `/^event stream: .*(ACL token not found|permission denied: ACL not found)/.test(document.querySelector("#live").textContent)`,
		textOf("#live"), 5*time.Second)
	p.run("reload", chromedp.Reload())
	p.waitText("#login-error", "The token was refused: ACL not found", 3*time.Second)
	p.waitText("#deployments", "No deployments.", 3*time.Second)

	// The management token, in another tab, is offered the actions.
	m := openTab(t, ts.URL)
	m.open("/ui/", "#login")
	m.fill("#token", rootToken)
	m.click(`#login button[type="submit"]`)
	m.waitText("#whoami", "Token:", 3*time.Second)
	if n := m.count("nav li[hidden]"); n != 0 {
		t.Errorf("the management token's menu hides %d pages", n)
	}
	m.open("/ui/jobs/default/web", "#deployment .group")
	m.waitJS("the Promote, Pause and Fail buttons", fmt.Sprintf(`document.querySelectorAll(%s).length === 3`, jsString("#deployment button[data-action]")),
		textOf("#deployment"), 5*time.Second)
}
