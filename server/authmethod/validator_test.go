package authmethod

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

var ctx = context.Background()

// validator builds a validator over static keys with a fixed clock.
func validator(t testing.TB, now time.Time, extra map[string]any, keys ...*testKey) *Validator {
	t.Helper()
	pems := make([]any, len(keys))
	for i, k := range keys {
		pems[i] = k.pubPEM
	}
	raw := map[string]any{"JWTValidationPubKeys": pems}
	for k, v := range extra {
		raw[k] = v
	}
	v, err := NewValidator(mustConfig(t, raw), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidateLoginAlgorithms(t *testing.T) {
	now := time.Now()
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA} {
		t.Run(string(alg), func(t *testing.T) {
			key := newKey(t, alg)
			other := newKey(t, alg)
			v := validator(t, now, map[string]any{"ClaimMappings": map[string]any{"sub": "name"}}, other, key)
			id, err := v.ValidateLogin(ctx, key.sign(t, map[string]any{"sub": "Web", "iat": now.Unix()}))
			if err != nil {
				t.Fatalf("valid token refused: %v", err)
			}
			if id.Values["name"] != "Web" {
				t.Errorf("identity: %+v", id)
			}
			// Signed by a key the method does not know.
			stranger := newKey(t, alg)
			_, err = v.ValidateLogin(ctx, stranger.sign(t, map[string]any{"sub": "Web", "iat": now.Unix()}))
			expectErr(t, err, "no known key successfully validated the token signature")
		})
	}
}

func expectErr(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestValidateLoginRejects(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	key := newKey(t, jose.RS256)
	v := validator(t, now, map[string]any{"BoundIssuer": "https://issuer", "BoundAudiences": []any{"ctlplane"}}, key)
	good := map[string]any{"iss": "https://issuer", "aud": "ctlplane", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	with := func(k string, val any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	if _, err := v.ValidateLogin(ctx, key.sign(t, good)); err != nil {
		t.Fatalf("good token: %v", err)
	}
	// A signature over other content.
	parts := strings.Split(key.sign(t, good), ".")
	forged := parts[0] + "." + strings.Split(key.sign(t, with("iss", "https://evil")), ".")[1] + "." + parts[2]

	cases := []struct {
		name, token, err string
	}{
		{"empty", "", "missing jwt"},
		{"garbage", "invalid", "error parsing token: go-jose/go-jose: compact JWS format must have three parts"},
		{"forged", forged, "no known key successfully validated the token signature"},
		{"expired", key.sign(t, with("exp", now.Add(-2*time.Minute).Unix())), "error validating claims: go-jose/go-jose/jwt: validation failed, token is expired (exp)"},
		{"not yet valid", key.sign(t, with("nbf", now.Add(2*time.Minute).Unix())), "error validating claims: go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)"},
		{"wrong issuer", key.sign(t, with("iss", "https://other")), "error validating claims: go-jose/go-jose/jwt: validation failed, invalid issuer claim (iss)"},
		{"no issuer", key.sign(t, with("iss", nil)), "error validating claims: go-jose/go-jose/jwt: validation failed, invalid issuer claim (iss)"},
		{"wrong audience", key.sign(t, with("aud", []string{"a", "b"})), "error validating claims: aud claim does not match any bound audience"},
		{"no audience", key.sign(t, with("aud", nil)), "error validating claims: aud claim does not match any bound audience"},
		{"no times", key.sign(t, map[string]any{"iss": "https://issuer", "aud": "ctlplane"}), "no issue time, notbefore, or expiration time encoded in token"},
		// A missing nbf is iat, so an iat in the future is "not valid yet"...
		{"issued in the future", key.sign(t, with("iat", now.Add(5*time.Minute).Unix())), "error validating claims: go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)"},
		// ...unless nbf says otherwise.
		{"issued in the future, nbf past", key.sign(t, map[string]any{"iss": "https://issuer", "aud": "ctlplane", "nbf": now.Unix(), "iat": now.Add(5 * time.Minute).Unix()}), "error validating claims: go-jose/go-jose/jwt: validation failed, token issued in the future (iat)"},
	}
	for _, tc := range cases {
		_, err := v.ValidateLogin(ctx, tc.token)
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.err)
		}
	}

	// HS256 is never accepted, whatever the key.
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := hs.Sign([]byte(`{"iat":1}`))
	if err != nil {
		t.Fatal(err)
	}
	compact, _ := obj.CompactSerialize()
	if _, err := v.ValidateLogin(ctx, compact); err == nil || !strings.HasPrefix(err.Error(), `error parsing token: unexpected signature algorithm "HS256"`) {
		t.Errorf("HS256: %v", err)
	}
}

func TestAudienceWithoutBoundAudiences(t *testing.T) {
	now := time.Now()
	key := newKey(t, jose.ES256)
	v := validator(t, now, nil, key)
	_, err := v.ValidateLogin(ctx, key.sign(t, map[string]any{"aud": "x", "iat": now.Unix()}))
	expectErr(t, err, "error validating claims: audience claim found in JWT but no audiences are bound")
	if _, err := v.ValidateLogin(ctx, key.sign(t, map[string]any{"iat": now.Unix()})); err != nil {
		t.Errorf("no aud, none bound: %v", err)
	}
}

func TestSupportedAlgsEnforced(t *testing.T) {
	now := time.Now()
	rsaKey := newKey(t, jose.RS256)
	edKey := newKey(t, jose.EdDSA)
	v := validator(t, now, map[string]any{"JWTSupportedAlgs": []any{"EdDSA"}}, rsaKey, edKey)
	if _, err := v.ValidateLogin(ctx, edKey.sign(t, map[string]any{"iat": now.Unix()})); err != nil {
		t.Errorf("EdDSA: %v", err)
	}
	_, err := v.ValidateLogin(ctx, rsaKey.sign(t, map[string]any{"iat": now.Unix()}))
	expectErr(t, err, `error parsing token: unexpected signature algorithm "RS256"; expected ["EdDSA"]`)
}

// TestTimeClaimRules checks upstream's derivation of missing exp and nbf
// and the leeways.
func TestTimeClaimRules(t *testing.T) {
	key := newKey(t, jose.RS256)
	base := time.Unix(1_700_000_000, 0)
	expired := "error validating claims: go-jose/go-jose/jwt: validation failed, token is expired (exp)"
	notYet := "error validating claims: go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)"
	cases := []struct {
		name   string
		extra  map[string]any
		claims map[string]any
		now    time.Time
		err    string
	}{
		// iat only: exp = iat + 150s, then 60s clock skew.
		{"iat only, within default leeway", nil, map[string]any{"iat": base.Unix()}, base.Add(200 * time.Second), ""},
		{"iat only, past default leeway", nil, map[string]any{"iat": base.Unix()}, base.Add(211 * time.Second), expired},
		{"iat only, custom leeway", map[string]any{"ExpirationLeeway": "10s", "ClockSkewLeeway": "-1s"}, map[string]any{"iat": base.Unix()}, base.Add(11 * time.Second), expired},
		{"iat only, negative expiration leeway", map[string]any{"ExpirationLeeway": "-1s", "ClockSkewLeeway": "-1s"}, map[string]any{"iat": base.Unix()}, base.Add(time.Second), expired},
		// exp only: nbf = exp - 150s.
		{"exp only, before derived nbf", map[string]any{"ClockSkewLeeway": "-1s"}, map[string]any{"exp": base.Unix()}, base.Add(-151 * time.Second), notYet},
		{"exp only, after derived nbf", map[string]any{"ClockSkewLeeway": "-1s"}, map[string]any{"exp": base.Unix()}, base.Add(-149 * time.Second), ""},
		{"exp only, custom nbf leeway", map[string]any{"ClockSkewLeeway": "-1s", "NotBeforeLeeway": "1h"}, map[string]any{"exp": base.Unix()}, base.Add(-59 * time.Minute), ""},
		// Clock skew: 60s by default.
		{"expired within skew", nil, map[string]any{"exp": base.Unix()}, base.Add(59 * time.Second), ""},
		{"expired past skew", nil, map[string]any{"exp": base.Unix()}, base.Add(61 * time.Second), expired},
		{"nbf within skew", nil, map[string]any{"nbf": base.Unix(), "exp": base.Add(time.Hour).Unix()}, base.Add(-59 * time.Second), ""},
		{"nbf past skew", nil, map[string]any{"nbf": base.Unix(), "exp": base.Add(time.Hour).Unix()}, base.Add(-61 * time.Second), notYet},
		{"custom skew", map[string]any{"ClockSkewLeeway": "10m"}, map[string]any{"exp": base.Unix()}, base.Add(9 * time.Minute), ""},
	}
	for _, tc := range cases {
		v := validator(t, tc.now, tc.extra, key)
		_, err := v.ValidateLogin(ctx, key.sign(t, tc.claims))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.err)
		}
	}
}

func TestIdentityFromClaims(t *testing.T) {
	now := time.Now()
	key := newKey(t, jose.ES256)
	v := validator(t, now, map[string]any{
		"ClaimMappings": map[string]any{
			"name": "name", "admin": "admin", "uid": "uid", "ratio": "ratio", "/org/primary": "org",
			"/a~1b/c~0d": "escaped", "/list/1": "second", "missing": "missing", "nothing": "nothing",
		},
		"ListClaimMappings": map[string]any{"groups": "groups", "single": "single", "/nested/roles": "roles", "absent": "absent"},
	}, key)
	claims := map[string]any{
		"iat": now.Unix(), "name": "Alice", "admin": true, "uid": 1234567890123, "ratio": -0.5,
		"org":    map[string]any{"primary": "Eng"},
		"a/b":    map[string]any{"c~d": "esc"},
		"list":   []any{"first", "second"},
		"groups": []any{"admin", "", "dev", 7},
		"single": "solo", "nested": map[string]any{"roles": []any{"r1"}}, "nothing": nil,
	}
	id, err := v.ValidateLogin(ctx, key.sign(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	wantValues := map[string]string{"name": "Alice", "admin": "true", "uid": "1234567890123", "ratio": "0", "org": "Eng",
		"escaped": "esc", "second": "second", "missing": "", "nothing": ""}
	if !reflect.DeepEqual(id.Values, wantValues) {
		t.Errorf("values:\n got %v\nwant %v", id.Values, wantValues)
	}
	wantLists := map[string][]string{"groups": {"admin", "dev", "7"}, "single": {"solo"}, "roles": {"r1"}, "absent": {}}
	if !reflect.DeepEqual(id.Lists, wantLists) {
		t.Errorf("lists:\n got %v\nwant %v", id.Lists, wantLists)
	}
	vars := id.ProjectedVars()
	if vars["value.name"] != "Alice" || len(vars) != len(wantValues) {
		t.Errorf("projected vars: %v", vars)
	}
	data := id.SelectableData()
	if !reflect.DeepEqual(data["list"], id.Lists) || !reflect.DeepEqual(data["value"], id.Values) {
		t.Errorf("selectable data: %v", data)
	}

	// Values that do not convert.
	_, err = v.ValidateLogin(ctx, key.sign(t, map[string]any{"iat": now.Unix(), "name": map[string]any{"x": 1}}))
	expectErr(t, err, "error converting claim 'name' to string from unknown type map[string]interface {}")
	_, err = v.ValidateLogin(ctx, key.sign(t, map[string]any{"iat": now.Unix(), "groups": map[string]any{"x": 1}}))
	expectErr(t, err, `"groups" list claim could not be converted to string list`)
	_, err = v.ValidateLogin(ctx, key.sign(t, map[string]any{"iat": now.Unix(), "groups": []any{[]any{"x"}}}))
	expectErr(t, err, `value [x] in "groups" list claim could not be parsed as string`)
}

func TestIdentityFromFields(t *testing.T) {
	c := mustConfig(t, map[string]any{
		"JWTValidationPubKeys": []any{newKey(t, jose.EdDSA).pubPEM},
		"ClaimMappings":        map[string]any{"sub": "name"},
		"ListClaimMappings":    map[string]any{"groups": "groups"},
	})
	id, err := c.IdentityFromFields(map[string]any{"value.name": "Bob", "list.groups": []any{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if id.Values["name"] != "Bob" || !reflect.DeepEqual(id.Lists["groups"], []string{"a", "b"}) {
		t.Errorf("identity: %+v", id)
	}
	id, err = c.IdentityFromFields(map[string]any{})
	if err != nil || id.Values["name"] != "" || id.Lists["groups"] == nil {
		t.Errorf("empty identity: %+v %v", id, err)
	}
	for fields, want := range map[string]string{
		`{"value.nope":"x"}`:   `unknown identity field "value.nope": the auth method's fields are list.groups, value.name`,
		`{"list.name":["x"]}`:  `unknown identity field "list.name": the auth method's fields are list.groups, value.name`,
		`{"value.name":1}`:     `identity field "value.name" must be a string, not the number 1`,
		`{"list.groups":[1]}`:  `identity field "list.groups" must be a list of strings, not a list`,
		`{"list.groups":true}`: `identity field "list.groups" must be a list of strings, not the boolean true`,
	} {
		_, err := c.IdentityFromFields(decodeJSON(t, fields))
		expectErr(t, err, want)
	}
}

// jwksServer serves a key set that the test can change, and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	set     jose.JSONWebKeySet
	status  int
	fetches atomic.Int32
}

func newJWKSServer(t testing.TB, keys ...*testKey) *jwksServer {
	s := &jwksServer{status: http.StatusOK}
	s.setKeys(keys...)
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.status != http.StatusOK {
			w.WriteHeader(s.status)
			w.Write([]byte("key server down"))
			return
		}
		json.NewEncoder(w).Encode(s.set)
	}))
	t.Cleanup(s.Close)
	return s
}

// caPEM is the PEM certificate of an httptest TLS server, to trust it.
func caPEM(srv *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// config is a JWKS method's configuration for this server.
func (s *jwksServer) config(extra map[string]any) map[string]any {
	c := map[string]any{"JWKSURL": s.URL, "JWKSCACert": caPEM(s.Server)}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func (s *jwksServer) setKeys(keys ...*testKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set = jose.JSONWebKeySet{}
	for _, k := range keys {
		s.set.Keys = append(s.set.Keys, k.jwk())
	}
}

func (s *jwksServer) setStatus(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = code
}

func TestJWKS(t *testing.T) {
	now := time.Now()
	clock := &testClock{now: now}
	k1 := newKey(t, jose.RS256)
	k1.kid = "k1"
	k2 := newKey(t, jose.ES256)
	k2.kid = "k2"
	srv := newJWKSServer(t, k1)
	v, err := NewValidator(mustConfig(t, srv.config(map[string]any{"ClaimMappings": map[string]any{"sub": "name"}})),
		WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"sub": "svc", "iat": now.Unix()}
	id, err := v.ValidateLogin(ctx, k1.sign(t, claims))
	if err != nil || id.Values["name"] != "svc" {
		t.Fatalf("JWKS login: %v %+v", err, id)
	}
	// Cached: no second fetch.
	if _, err := v.ValidateLogin(ctx, k1.sign(t, claims)); err != nil {
		t.Fatal(err)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Errorf("fetches after two logins: %d, want 1", n)
	}

	// Rotation: a token with a new kid makes the validator refetch, once
	// the refetch interval has passed.
	srv.setKeys(k1, k2)
	if _, err := v.ValidateLogin(ctx, k2.sign(t, claims)); err == nil {
		t.Fatal("a new kid was fetched again within the refetch interval")
	}
	clock.Advance(jwksMinRefetch)
	if _, err := v.ValidateLogin(ctx, k2.sign(t, claims)); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Errorf("fetches after rotation: %d, want 2", n)
	}

	// Unknown kids do not make it fetch more than once per interval (the
	// clock stands still here).
	stranger := newKey(t, jose.RS256)
	stranger.kid = "nope"
	before := srv.fetches.Load()
	for i := 0; i < 5; i++ {
		_, err := v.ValidateLogin(ctx, stranger.sign(t, claims))
		expectErr(t, err, "error verifying token: failed to verify id token signature")
	}
	if n := srv.fetches.Load() - before; n > 1 {
		t.Errorf("%d fetches for 5 unknown-kid tokens in a row, want at most 1", n)
	}

	// A known kid with a wrong signature is refused.
	forger := newKey(t, jose.RS256)
	forger.kid = "k1"
	_, err = v.ValidateLogin(ctx, forger.sign(t, claims))
	expectErr(t, err, "error verifying token: failed to verify id token signature")

	_, err = v.ValidateLogin(ctx, "a.b")
	expectErr(t, err, "error verifying token: oidc: malformed jwt: go-jose/go-jose: compact JWS format must have three parts")

	// The cache expires while the key server fails: the keys fetched
	// earlier are still used.
	srv.setStatus(http.StatusInternalServerError)
	clock.Advance(jwksCacheTTL)
	before = srv.fetches.Load()
	if _, err := v.ValidateLogin(ctx, k2.sign(t, claims)); err != nil {
		t.Errorf("cached key while the key server is down: %v", err)
	}
	if srv.fetches.Load() == before {
		t.Error("an expired cache did not make the validator refetch")
	}
}

func TestJWKSFetchErrors(t *testing.T) {
	now := time.Now()
	k := newKey(t, jose.EdDSA)
	k.kid = "k"
	srv := newJWKSServer(t, k)
	srv.setStatus(http.StatusInternalServerError)
	v, err := NewValidator(mustConfig(t, srv.config(nil)), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.ValidateLogin(ctx, k.sign(t, map[string]any{"iat": now.Unix()}))
	var fe *FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("want a FetchError, got %T %v", err, err)
	}
	// The body ("key server down") is not quoted: see TestJWKSFetchQuotesNothing.
	expectErr(t, err, "error verifying token: fetching keys oidc: get keys failed: status 500 Internal Server Error")

	// Nobody listening.
	gone := httptest.NewTLSServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	v, _ = NewValidator(mustConfig(t, map[string]any{"JWKSURL": url}))
	_, err = v.ValidateLogin(ctx, k.sign(t, map[string]any{"iat": now.Unix()}))
	if err == nil || !strings.HasPrefix(err.Error(), "error verifying token: fetching keys oidc: get keys failed: Get ") {
		t.Errorf("connection refused: %v", err)
	}
}

// TestValidatorConcurrent runs logins in parallel (run with -race).
func TestValidatorConcurrent(t *testing.T) {
	now := time.Now()
	k := newKey(t, jose.ES256)
	k.kid = "k"
	srv := newJWKSServer(t, k)
	v, err := NewValidator(mustConfig(t, srv.config(map[string]any{"ClaimMappings": map[string]any{"sub": "n"}})))
	if err != nil {
		t.Fatal(err)
	}
	tok := k.sign(t, map[string]any{"sub": "x", "iat": now.Unix()})
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := v.ValidateLogin(ctx, tok); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := srv.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for concurrent logins, want 1", n)
	}
}
