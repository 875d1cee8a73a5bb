package ui_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// pubKeyPEM is a fresh Ed25519 public key, PEM-encoded, for a jwt method.
func pubKeyPEM(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// Auth methods from the browser: the server's errors at Name, Config and
// Max token TTL; a valid method is created, listed, edited.
func TestUIAuthMethods(t *testing.T) {
	ts := servertest.Start(t)
	p := openTab(t, ts.URL)
	p.open("/ui/acl/auth-methods", "#method-form")
	p.waitText("#methods", "No auth methods.", 3*time.Second)

	p.fill("#f-Name", "k 8s")
	p.fill("#f-Config", `{"JWTValidationPubKeys": ["nope"]}`)
	p.click(`#method-form button[type="submit"]`)
	p.waitText("#f-Name-error", "invalid Name", 3*time.Second)

	p.fill("#f-Name", "k8s")
	p.click(`#method-form button[type="submit"]`)
	p.waitText("#f-Config-error", "error parsing public key JWTValidationPubKeys[0]", 3*time.Second)
	if got := p.text("#f-Name-error"); got != "" {
		t.Errorf("Name still shows %q", got)
	}

	p.fill("#f-Config", "{not json")
	p.click(`#method-form button[type="submit"]`)
	p.waitText("#f-Config-error", "Config is not valid JSON", 3*time.Second)

	cfg, _ := json.Marshal(map[string]any{"JWTValidationPubKeys": []string{pubKeyPEM(t)}, "ClaimMappings": map[string]string{"sub": "name"}})
	p.fill("#f-Config", string(cfg))
	p.fill("#f-MaxTokenTTL", "1x")
	p.click(`#method-form button[type="submit"]`)
	p.waitText("#f-MaxTokenTTL-error", `unknown unit "x" in duration`, 3*time.Second)

	p.fill("#f-MaxTokenTTL", "1h")
	p.fill("#f-DisplayName", "Kubernetes")
	p.click(`#method-form button[type="submit"]`)
	p.waitText("#methods table", "Kubernetes", 3*time.Second)
	r := ts.Do(t, http.MethodGet, "/v1/acl/auth-method/k8s", "")
	if r.Status != http.StatusOK {
		t.Fatalf("read back: %d %s", r.Status, r.Body)
	}
	var m struct {
		DisplayName, MaxTokenTTL string
		Config                   map[string]any
	}
	r.JSON(t, &m)
	if m.DisplayName != "Kubernetes" || m.MaxTokenTTL != "1h0m0s" || m.Config["ClaimMappings"] == nil {
		t.Errorf("stored %+v", m)
	}

	p.click(`#methods button[aria-label="Edit k8s"]`)
	p.waitText("#editor-heading", "Edit k8s", 3*time.Second)
	if got := eval[string](p, "name", `document.querySelector("#f-Name").value`); got != "k8s" {
		t.Errorf("the edit form's Name is %q", got)
	}
	p.fill("#f-Description", "the cluster's service accounts")
	p.click(`#method-form button[type="submit"]`)
	p.waitText("#methods table", "the cluster's service accounts", 3*time.Second)

	// Delete, confirmed in place.
	p.click(`#methods button[data-action="delete"]`)
	p.click(`#methods button[data-action="delete"]`)
	p.waitText("#methods", "No auth methods.", 3*time.Second)
	if r := ts.Do(t, http.MethodGet, "/v1/acl/auth-method/k8s", ""); r.Status != http.StatusNotFound {
		t.Errorf("after Delete: %d %s", r.Status, r.Body)
	}
	ts.Do(t, http.MethodPut, "/v1/acl/auth-method", `{"Name":"k8s","Type":"jwt","Config":`+string(cfg)+`}`)
	p.waitText("#methods table", "k8s", 3*time.Second)

	// The explain page offers the method, and one made meanwhile.
	p.click(`#methods a[href="/ui/acl/explain?method=k8s"]`)
	p.waitText("#explain-method", "k8s", 3*time.Second)
	ts.Do(t, http.MethodPut, "/v1/acl/auth-method", `{"Name":"corp","Type":"jwt","Config":`+string(cfg)+`}`)
	p.waitText("#explain-method", "corp", 3*time.Second)
	if got := eval[string](p, "chosen", `document.querySelector("#explain-method").value`); got != "k8s" {
		t.Errorf("the live update changed the chosen method to %q", got)
	}
}
