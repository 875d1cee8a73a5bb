package authmethod

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestJWKSFetchQuotesNothing (issue 8, finding 6): a login needs no token,
// so what a key URL answers must never reach the caller. The review
// pointed JWKSURL at an internal endpoint and read its content in the
// login error. Every failure here says what was wrong, never what came.
func TestJWKSFetchQuotesNothing(t *testing.T) {
	now := time.Now()
	k := newKey(t, jose.ES256)
	k.kid = "k"
	good := newJWKSServer(t, k)
	var answers = map[string]func(w http.ResponseWriter){
		"/status": func(w http.ResponseWriter) { w.WriteHeader(500); w.Write([]byte("SECRET status body")) },
		"/reason": func(w http.ResponseWriter) {
			// A reason phrase of the server's choosing.
			hj, _ := w.(http.Hijacker)
			conn, buf, _ := hj.Hijack()
			buf.WriteString("HTTP/1.1 503 SECRET reason\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			buf.Flush()
			conn.Close()
		},
		"/html":  func(w http.ResponseWriter) { w.Write([]byte(`<html>SECRET page</html>`)) },
		"/shape": func(w http.ResponseWriter) { w.Write([]byte(`{"keys":"SECRET shape"}`)) },
		"/key":   func(w http.ResponseWriter) { w.Write([]byte(`{"keys":[{"kty":"SECRET-kty","crv":"SECRET-crv"}]}`)) },
		"/ctype": func(w http.ResponseWriter) { w.Header().Set("Content-Type", "SECRET ctype"); w.Write([]byte("x")) },
		"/redirect": func(w http.ResponseWriter) {
			w.Header().Set("Location", good.URL)
			w.WriteHeader(302)
			w.Write([]byte("SECRET"))
		},
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answers[r.URL.Path](w) }))
	t.Cleanup(srv.Close)
	want := map[string]string{
		"/status":   "get keys failed: status 500 Internal Server Error",
		"/reason":   "get keys failed: status 503 Service Unavailable",
		"/html":     "failed to decode keys: the response (Content-Type text/html) is not valid JSON: syntax error at byte 1",
		"/shape":    "failed to decode keys: the response (Content-Type text/plain) is JSON of the wrong shape: a string at byte 22 where an array was expected",
		"/key":      "failed to decode keys: key 0 of the set is not a valid JSON Web Key",
		"/ctype":    "failed to decode keys: the response (Content-Type unknown) is not valid JSON: syntax error at byte 1",
		"/redirect": "get keys failed: status 302 Found (redirects are not followed)",
	}
	for path, msg := range want {
		v, err := NewValidator(mustConfig(t, map[string]any{"JWKSURL": srv.URL + path, "JWKSCACert": caPEM(srv)}), WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.ValidateLogin(ctx, k.sign(t, map[string]any{"iat": now.Unix()}))
		if err == nil || strings.Contains(err.Error(), "SECRET") || err.Error() != "error verifying token: fetching keys oidc: "+msg {
			t.Errorf("%s: %v\nwant %q", path, err, msg)
		}
	}
	if n := good.fetches.Load(); n != 0 {
		t.Errorf("the redirect was followed (%d fetches)", n)
	}

	// Discovery: an issuer or jwks_uri of the provider's choosing is not
	// quoted either.
	p := newOIDCProvider(t, k)
	for _, doc := range []string{`{"issuer":"SECRET-issuer"}`, fmt.Sprintf(`{"issuer":%q,"jwks_uri":"SECRET-uri"}`, p.URL), `SECRET`} {
		p.setDoc(doc)
		v, _ := NewValidator(mustConfig(t, map[string]any{"OIDCDiscoveryURL": p.URL, "OIDCDiscoveryCACert": caPEM(p.Server)}), WithClock(func() time.Time { return now }))
		if _, err := v.ValidateLogin(ctx, k.sign(t, map[string]any{"iat": now.Unix()})); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("discovery document %s: %v", doc, err)
		}
	}
}

// TestJWKSHTTPSOnly: plain http key URLs are refused unless the agent is a
// -dev one (WithHTTPKeyURLs), both in the configuration check the service
// makes on write and at fetch time (a method restored from a snapshot was
// never checked).
func TestJWKSHTTPSOnly(t *testing.T) {
	now := time.Now()
	k := newKey(t, jose.EdDSA)
	k.kid = "k"
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"keys":[%s]}`, mustJWK(t, k))
	}))
	t.Cleanup(plain.Close)
	cfg := mustConfig(t, map[string]any{"JWKSURL": plain.URL})
	expectErr(t, cfg.RequireHTTPS(), fmt.Sprintf(`'JWKSURL' must be an https URL, not %q (plain http is allowed only on a -dev agent)`, plain.URL))
	expectErr(t, mustConfig(t, map[string]any{"OIDCDiscoveryURL": "http://idp.example"}).RequireHTTPS(),
		`'OIDCDiscoveryURL' must be an https URL, not "http://idp.example" (plain http is allowed only on a -dev agent)`)
	if err := mustConfig(t, map[string]any{"JWKSURL": "HTTPS://k.example/keys"}).RequireHTTPS(); err != nil {
		t.Errorf("https: %v", err)
	}

	bearer := k.sign(t, map[string]any{"iat": now.Unix()})
	v, _ := NewValidator(cfg, WithClock(func() time.Time { return now }))
	_, err := v.ValidateLogin(ctx, bearer)
	expectErr(t, err, "error verifying token: fetching keys oidc: get keys failed: the URL is not https (plain http is allowed only on a -dev agent)")
	v, _ = NewValidator(cfg, WithClock(func() time.Time { return now }), WithHTTPKeyURLs(true))
	if _, err := v.ValidateLogin(ctx, bearer); err != nil {
		t.Errorf("http on a dev agent: %v", err)
	}
}

func mustJWK(t *testing.T, k *testKey) string {
	b, err := k.jwk().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
