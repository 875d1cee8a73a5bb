package authmethod

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// oidcProvider serves an OpenID configuration and the key set it names, on
// 127.0.0.1, and counts the requests to each.
type oidcProvider struct {
	*httptest.Server
	mu       sync.Mutex
	set      jose.JSONWebKeySet
	doc      string // the configuration served; "" builds the right one
	docs     atomic.Int32
	keyFetch atomic.Int32
}

func newOIDCProvider(t testing.TB, keys ...*testKey) *oidcProvider {
	p := &oidcProvider{}
	p.setKeys(keys...)
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			p.docs.Add(1)
			doc := p.doc
			if doc == "" {
				doc = fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, p.URL, p.URL+"/keys")
			}
			w.Write([]byte(doc))
		case "/keys":
			p.keyFetch.Add(1)
			json.NewEncoder(w).Encode(p.set)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *oidcProvider) setKeys(keys ...*testKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set = jose.JSONWebKeySet{}
	for _, k := range keys {
		p.set.Keys = append(p.set.Keys, k.jwk())
	}
}

func (p *oidcProvider) setDoc(doc string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doc = doc
}

// TestOIDCDiscovery: the key set is found through the provider's
// configuration, cached like a JWKS, refetched for a new kid at most once
// per interval (discovery included).
func TestOIDCDiscovery(t *testing.T) {
	now := time.Now()
	clock := &testClock{now: now}
	k1 := newKey(t, jose.RS256)
	k1.kid = "k1"
	k2 := newKey(t, jose.EdDSA)
	k2.kid = "k2"
	p := newOIDCProvider(t, k1)
	if !strings.HasPrefix(p.URL, "https://127.0.0.1:") {
		t.Fatalf("provider is not on 127.0.0.1: %s", p.URL)
	}
	v, err := NewValidator(mustConfig(t, map[string]any{"OIDCDiscoveryURL": p.URL, "OIDCDiscoveryCACert": caPEM(p.Server), "ClaimMappings": map[string]any{"sub": "name"}}), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"sub": "svc", "iat": now.Unix()}
	for range 3 {
		id, err := v.ValidateLogin(ctx, k1.sign(t, claims))
		if err != nil || id.Values["name"] != "svc" {
			t.Fatalf("discovery login: %v %+v", err, id)
		}
	}
	if d, k := p.docs.Load(), p.keyFetch.Load(); d != 1 || k != 1 {
		t.Errorf("after three logins: %d discovery and %d key fetches, want 1 and 1", d, k)
	}

	// A new kid: no refetch within the interval, one after it.
	p.setKeys(k1, k2)
	for range 3 {
		_, err := v.ValidateLogin(ctx, k2.sign(t, claims))
		expectErr(t, err, "error verifying token: failed to verify id token signature")
	}
	if d, k := p.docs.Load(), p.keyFetch.Load(); d != 1 || k != 1 {
		t.Errorf("unknown kid within the interval: %d discovery and %d key fetches, want still 1 and 1", d, k)
	}
	clock.Advance(jwksMinRefetch)
	if _, err := v.ValidateLogin(ctx, k2.sign(t, claims)); err != nil {
		t.Fatalf("rotated key after the interval: %v", err)
	}
}

func TestOIDCDiscoveryErrors(t *testing.T) {
	now := time.Now()
	k := newKey(t, jose.ES256)
	k.kid = "k"
	p := newOIDCProvider(t, k)
	login := func(doc string) error {
		p.setDoc(doc)
		v, err := NewValidator(mustConfig(t, map[string]any{"OIDCDiscoveryURL": p.URL, "OIDCDiscoveryCACert": caPEM(p.Server)}), WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.ValidateLogin(ctx, k.sign(t, map[string]any{"iat": now.Unix()}))
		var fe *FetchError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("doc %q: want a FetchError, got %T %v", doc, err, err)
		}
		return err
	}
	expectErr(t, login(`{"issuer":"https://elsewhere.example","jwks_uri":"`+p.URL+`/keys"}`),
		fmt.Sprintf(`error verifying token: fetching keys oidc: issuer did not match the issuer returned by provider, expected %q`, p.URL))
	expectErr(t, login(fmt.Sprintf(`{"issuer":%q}`, p.URL)),
		`error verifying token: fetching keys oidc: provider discovery object has no https jwks_uri`)
	// A plain http jwks_uri is refused like a missing one (not on -dev).
	expectErr(t, login(fmt.Sprintf(`{"issuer":%q,"jwks_uri":"http://127.0.0.1:1/keys"}`, p.URL)),
		`error verifying token: fetching keys oidc: provider discovery object has no https jwks_uri`)
	expectErr(t, login(`not json`),
		"error verifying token: fetching keys oidc: failed to decode provider discovery object: the response (Content-Type text/plain) is not valid JSON: syntax error at byte 2")
	big := fmt.Sprintf(`{"issuer":%q,"pad":"%s"}`, p.URL, strings.Repeat("x", jwksMaxBody))
	expectErr(t, login(big), fmt.Sprintf("error verifying token: fetching keys oidc: get provider configuration failed: the response is larger than %d bytes", jwksMaxBody))
	// A provider configuration whose key set is not there.
	expectErr(t, login(fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, p.URL, p.URL+"/nope")),
		"error verifying token: fetching keys oidc: get keys failed: status 404 Not Found")
	// And the good one, to show the provider itself works.
	if err := login(""); err != nil {
		t.Errorf("good configuration: %v", err)
	}
}
