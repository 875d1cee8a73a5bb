package http_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
)

// TestLoginJWKSInternalURL (issue 8, finding 6), the review's reproduction:
// a method whose JWKSURL is an internal endpoint (here the agent's own
// /v1/status/peers). An anonymous login must learn only that the keys could
// not be decoded, never what the endpoint answered.
func TestLoginJWKSInternalURL(t *testing.T) {
	s := lgStart(t) // a -dev agent: http key URLs are allowed
	peers := s.Do(t, "GET", "/v1/status/peers", "").Body
	s.mustAdmin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"internal","Type":"jwt","Config":{"JWKSURL":%q}}`, s.URL+"/v1/status/peers"))
	s.addRule(t, "internal", "", "service", "web")
	bearer := newLgKey(t, jose.ES256).sign(t, claims(map[string]any{"aud": nil}))
	resp := s.Do(t, "POST", loginPath, loginBody("internal", bearer))
	const want = "error verifying token: fetching keys oidc: failed to decode keys: the response (Content-Type application/json) is JSON of the wrong shape: an array at byte 1 where an object was expected"
	if resp.Body != want {
		t.Errorf("login: %s\nwant %q", resp, want)
	}
	addr := strings.Trim(peers, "[]\"\n")
	if addr == "" || strings.Contains(resp.Body, addr) {
		t.Errorf("the login error quotes the internal endpoint's answer %s: %s", peers, resp)
	}
}

// TestAuthMethodHTTPSOnly: on an agent that is not -dev an auth method's
// key URLs must be https.
func TestAuthMethodHTTPSOnly(t *testing.T) {
	s := &lgServer{servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(lgMgmt))}
	waitACLReady(t, s.TestServer, lgMgmt)
	for _, c := range []struct{ key, url string }{{"JWKSURL", "http://127.0.0.1:1/keys"}, {"OIDCDiscoveryURL", "http://idp.example"}} {
		expectError(t, s.admin(t, "PUT", methodPath, fmt.Sprintf(`{"Name":"m","Type":"jwt","Config":{%q:%q}}`, c.key, c.url)), 400,
			fmt.Sprintf("Invalid Auth Method: '%s' must be an https URL, not %q (plain http is allowed only on a -dev agent)", c.key, c.url))
	}
	s.mustAdmin(t, "PUT", methodPath, `{"Name":"m","Type":"jwt","Config":{"JWKSURL":"https://k.example/keys"}}`)
}
