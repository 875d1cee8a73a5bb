package authmethod

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// decodeJSON decodes a config as the HTTP layer does.
func decodeJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseConfigErrors(t *testing.T) {
	key := newKey(t, jose.RS256)
	pemJSON, _ := json.Marshal(key.pubPEM)
	keys := `"JWTValidationPubKeys":[` + string(pemJSON) + `]`
	// Upstream's text, OIDCDiscoveryURL included.
	const exactlyOne = `exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type "jwt"`
	cases := []struct {
		config string
		err    string
	}{
		{`{}`, exactlyOne},
		{`{"JWTValidationPubKeys":[]}`, exactlyOne},
		{`{` + keys + `,"JWKSURL":"https://example.com/keys"}`, exactlyOne},
		{`{"JWTValidationPubKeys":["nope"]}`, `error parsing public key JWTValidationPubKeys[0]: data does not contain any valid RSA, ECDSA, or ED25519 public keys`},
		{`{"JWTValidationPubKeys":[` + string(pemJSON) + `,"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"]}`, `error parsing public key JWTValidationPubKeys[1]: x509: malformed certificate`},
		{`{` + keys + `,"Foo":1,"Bar":2}`, `Config has invalid keys: Bar, Foo`},
		{`{` + keys + `,"OIDCDiscoveryURL":"https://example.com"}`, exactlyOne},
		{`{"JWKSURL":"https://example.com/keys","OIDCDiscoveryURL":"https://example.com"}`, exactlyOne},
		{`{"OIDCDiscoveryURL":"example.com"}`, `'OIDCDiscoveryURL' must be an http or https URL, not "example.com"`},
		{`{` + keys + `,"OIDCDiscoveryCACert":"x"}`, `'OIDCDiscoveryCACert' should not be set unless 'OIDCDiscoveryURL' is set`},
		{`{"OIDCDiscoveryURL":"https://example.com","OIDCDiscoveryCACert":"garbage"}`, `could not parse 'OIDCDiscoveryCACert' value into a PEM certificate`},
		{`{` + keys + `,"OIDCClientID":"abc"}`, `'OIDCClientID' must not be set for type "jwt"`},
		{`{` + keys + `,"AllowedRedirectURIs":["http://x"]}`, `'AllowedRedirectURIs' must not be set for type "jwt"`},
		{`{` + keys + `,"VerboseOIDCLogging":true}`, `'VerboseOIDCLogging' must not be set for type "jwt"`},
		{`{` + keys + `,"JWKSCACert":"x"}`, `'JWKSCACert' should not be set unless 'JWKSURL' is set`},
		{`{"JWKSURL":"ftp://example.com/keys"}`, `'JWKSURL' must be an http or https URL, not "ftp://example.com/keys"`},
		{`{"JWKSURL":"https://example.com/keys","JWKSCACert":"garbage"}`, `could not parse 'JWKSCACert' value into a PEM certificate`},
		{`{` + keys + `,"JWTSupportedAlgs":["RS256","HS256"]}`, `Invalid supported algorithm: HS256`},
		{`{` + keys + `,"JWTSupportedAlgs":["none"]}`, `Invalid supported algorithm: none`},
		{`{` + keys + `,"ClaimMappings":{"a":"x","b":"x"}}`, `ClaimMappings contains multiple mappings for key "x"`},
		{`{` + keys + `,"ListClaimMappings":{"a":"g","b":"g"}}`, `ListClaimMappings contains multiple mappings for key "g"`},
		{`{` + keys + `,"ClaimMappings":{"a":1}}`, `'ClaimMappings[a]' must be a string, not the number 1`},
		{`{` + keys + `,"ClaimMappings":["a"]}`, `'ClaimMappings' must be an object of strings, not a list`},
		{`{` + keys + `,"BoundAudiences":[1]}`, `'BoundAudiences[0]' must be a string, not the number 1`},
		{`{` + keys + `,"BoundIssuer":true}`, `'BoundIssuer' must be a string, not the boolean true`},
		{`{` + keys + `,"ExpirationLeeway":150}`, `'ExpirationLeeway' must be a Go duration string such as "150s", not the number 150`},
		{`{` + keys + `,"ClockSkewLeeway":"soon"}`, `'ClockSkewLeeway' cannot parse value as 'time.Duration': time: invalid duration "soon"`},
		{`{` + keys + `,"boundissuer":"a","BoundIssuer":"b"}`, `Config key "boundissuer" duplicates "BoundIssuer"`},
	}
	for _, tc := range cases {
		_, err := ParseConfig(decodeJSON(t, tc.config))
		if err == nil || err.Error() != tc.err {
			t.Errorf("ParseConfig(%s):\n got %v\nwant %s", tc.config, err, tc.err)
		}
	}
}

func TestParseConfigAccepts(t *testing.T) {
	rsaKey := newKey(t, jose.RS256)
	ecKey := newKey(t, jose.ES256)
	edKey := newKey(t, jose.EdDSA)
	cert := selfSignedCertPEM(t)
	raw := map[string]any{
		"JWTValidationPubKeys": []any{rsaKey.pubPEM, ecKey.pubPEM, edKey.pubPEM, cert},
		"BoundIssuer":          "https://issuer",
		"BoundAudiences":       "single-audience", // a single string is a list of one
		"ClaimMappings":        map[string]any{"sub": "name", "/org/primary": "org"},
		"ListClaimMappings":    map[string]any{"groups": "groups"},
		"JWTSupportedAlgs":     []any{"RS256", "ES256", "EdDSA"},
		"ExpirationLeeway":     "30s",
		"notbeforeleeway":      "-1s", // keys match case-insensitively
		"ClockSkewLeeway":      "0s",
		"OIDCScopes":           []any{}, // an empty OIDC key is not "set"
	}
	c := mustConfig(t, raw)
	if len(c.pubKeys) != 4 {
		t.Errorf("parsed %d keys, want 4", len(c.pubKeys))
	}
	if _, ok := c.pubKeys[3].(*ecdsa.PublicKey); !ok {
		t.Errorf("certificate key: got %T, want the certificate's ECDSA key", c.pubKeys[3])
	}
	if _, ok := c.pubKeys[2].(ed25519.PublicKey); !ok {
		t.Errorf("Ed25519 key: got %T", c.pubKeys[2])
	}
	if !reflect.DeepEqual(c.BoundAudiences, []string{"single-audience"}) {
		t.Errorf("BoundAudiences: %q", c.BoundAudiences)
	}
	if c.ExpirationLeeway != 30*time.Second || c.NotBeforeLeeway != -time.Second || c.ClockSkewLeeway != 0 {
		t.Errorf("leeways: %v %v %v", c.ExpirationLeeway, c.NotBeforeLeeway, c.ClockSkewLeeway)
	}
	if got, want := c.IdentityFields(), []string{"list.groups", "value.name", "value.org"}; !reflect.DeepEqual(got, want) {
		t.Errorf("IdentityFields: got %q, want %q", got, want)
	}
	if !reflect.DeepEqual(c.algs, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}) {
		t.Errorf("algs: %v", c.algs)
	}

	// JWKS, with a CA; default algorithms are every asymmetric one.
	c = mustConfig(t, map[string]any{"JWKSURL": "https://example.com/.well-known/jwks.json", "JWKSCACert": cert})
	if len(c.algs) != len(supportedAlgs) {
		t.Errorf("default algs: %v", c.algs)
	}
	// Values as msgpack gives them back from the state store.
	mustConfig(t, map[string]any{"JWTValidationPubKeys": []string{rsaKey.pubPEM}, "ClaimMappings": map[string]string{"a": "b"}})
}

func selfSignedCertPEM(t testing.TB) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestParsePublicKeyPEMRejectsPrivateAndOther(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der := x509.MarshalPKCS1PrivateKey(priv)
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})
	if _, err := parsePublicKeyPEM(privPEM); err == nil {
		t.Error("a private key was accepted as a public key")
	}
	if _, err := parsePublicKeyPEM([]byte("")); err == nil || !strings.Contains(err.Error(), "does not contain any valid") {
		t.Errorf("empty: %v", err)
	}
}
