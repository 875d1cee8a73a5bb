package http_test

// Upstream fidelity fixes of issue 7: a login whose BindName renders an
// invalid name is refused, OIDC discovery as a key source, and a policy's
// Datacenters listed and enforced.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	jose "github.com/go-jose/go-jose/v4"
)

// TestLoginInvalidBindName: a matching rule whose BindName renders to a name
// its bind type refuses fails the whole login with 400 naming the rendered
// value, as upstream's does, before anything is written, even when other
// rules bind; explain says so and shows the rule as skipped with the reason.
func TestLoginInvalidBindName(t *testing.T) {
	s := lgStart(t)
	key := newLgKey(t, jose.ES256)
	s.mustAdmin(t, "PUT", methodPath, methodBody(t, "corp", "", key))
	good := s.addRule(t, "corp", "", "service", "web")
	bad := s.addRule(t, "corp", "", "service", "svc-${value.name}")
	const msg = `cannot compute "service" bind name for bind target: failed to validate bindType "service": invalid bind name: "svc-web server"`

	bearer := key.sign(t, claims(map[string]any{"sub": "Web Server"}))
	before := s.State().TableIndex("acl-tokens")
	resp, ex := s.expectSameVerdict(t, "corp", bearer)
	expectError(t, resp, 400, msg)
	if after := s.State().TableIndex("acl-tokens"); after != before {
		t.Errorf("a refused login wrote a token: tokens index %d -> %d", before, after)
	}
	verdicts := map[string]string{}
	for _, r := range ex.BindingRules {
		verdicts[r.ID] = fmt.Sprintf("%v|%s|%s", r.Matched, r.RenderedName, r.SkipReason)
	}
	want := map[string]string{
		good: "true|web|",
		bad:  `true||bind name invalid: failed to validate bindType "service": invalid bind name: "svc-web server"`,
	}
	if !reflect.DeepEqual(verdicts, want) {
		t.Errorf("explain verdicts:\n got %v\nwant %v", verdicts, want)
	}
	// The same identity given as fields: the same verdict.
	ex = s.explain(t, `{"AuthMethod":"corp","Identity":{"value.name":"Web Server"}}`)
	if ex.LoginStatus != 400 || ex.LoginError != msg || ex.Token != nil {
		t.Errorf("explain from identity: %+v", ex)
	}
	// A name that renders validly logs in.
	if tok := s.login(t, "corp", key.sign(t, claims(map[string]any{"sub": "Web-Server"}))); len(tok.ServiceIdentities) != 2 {
		t.Errorf("valid names: %+v", tok.ServiceIdentities)
	}
}

// TestLoginOIDCDiscovery: a jwt method with OIDCDiscoveryURL finds its keys
// through the provider's configuration (a server on 127.0.0.1).
func TestLoginOIDCDiscovery(t *testing.T) {
	s := lgStart(t)
	k := newLgKey(t, jose.ES256)
	k.kid = "one"
	keys := &jwksHandler{}
	keys.setKeys(k)
	mux := http.NewServeMux()
	provider := httptest.NewServer(mux)
	t.Cleanup(provider.Close)
	mux.Handle("/keys", keys)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, provider.URL, provider.URL+"/keys")
	})

	s.mustAdmin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"oidc","Type":"jwt","Config":{"OIDCDiscoveryURL":%q,"BoundAudiences":["ctlplane"],"ClaimMappings":{"sub":"name"}}}`, provider.URL))
	s.addRule(t, "oidc", "", "service", "${value.name}")
	s.expectSameVerdict(t, "oidc", k.sign(t, claims(nil)))
	if tok := s.login(t, "oidc", k.sign(t, claims(nil))); len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "web-frontend" {
		t.Errorf("OIDC discovery login: %+v", tok)
	}
	// Both key sources at once: upstream's text.
	resp := s.admin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"both","Type":"jwt","Config":{"OIDCDiscoveryURL":%q,"JWKSURL":%q}}`, provider.URL, provider.URL+"/keys"))
	expectError(t, resp, 400, `Invalid Auth Method: exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type "jwt"`)
}

// TestACLPolicyDatacenters: the list shows a policy's Datacenters, and a
// policy limited to other datacenters grants nothing on this agent (dc1).
func TestACLPolicyDatacenters(t *testing.T) {
	s := aclServer(t)
	var dc2 state.ACLPolicy
	s.must(t, "PUT", policyPath, `{"Name":"dc2-writer","Rules":"acl = \"write\"","Datacenters":["dc2"]}`).JSON(t, &dc2)
	tok := s.token(t, fmt.Sprintf(`{"Policies":[{"ID":%q}]}`, dc2.ID))
	expectError(t, s.as(t, tok.SecretID, "GET", rulesPath, ""), 403, tokenDeny(tok.AccessorID, "acl:read"))

	var list []struct {
		ID          string
		Datacenters []string
	}
	s.must(t, "GET", "/v1/acl/policies", "").JSON(t, &list)
	found := false
	for _, e := range list {
		if e.ID == dc2.ID {
			found = reflect.DeepEqual(e.Datacenters, []string{"dc2"})
		}
	}
	if !found {
		t.Errorf("policy list does not show Datacenters [dc2]: %+v", list)
	}

	// Naming dc1 too makes it apply here, at once.
	s.must(t, "PUT", policyPath+"/"+dc2.ID, `{"Name":"dc2-writer","Rules":"acl = \"write\"","Datacenters":["dc2","dc1"]}`)
	s.mustAs(t, tok.SecretID, "GET", rulesPath, "")
}
