// Package authmethod implements ctlplane's auth methods: the configuration of
// a method, validating a login's bearer token, the identity that a valid
// token stands for, and binding that identity to a token through the
// method's binding rules.
//
// Only the "jwt" type exists. Its configuration keys, checks and error texts
// are those of Consul's jwt auth method; where ctlplane differs, the comment
// at the check says so.
package authmethod

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TypeJWT is the only auth method type.
const TypeJWT = "jwt"

// Types lists the registered auth method types.
func Types() []string { return []string{TypeJWT} }

// IsRegisteredType says whether t is a registered type (exactly, as upstream).
func IsRegisteredType(t string) bool { return t == TypeJWT }

// Config is a jwt auth method's configuration.
type Config struct {
	// JWTValidationPubKeys are PEM public keys (PKIX or certificates);
	// exactly one of this, JWKSURL and OIDCDiscoveryURL is set.
	JWTValidationPubKeys []string
	// JWKSURL serves a JSON Web Key Set; JWKSCACert is the PEM CA to trust
	// for it (optional).
	JWKSURL    string
	JWKSCACert string
	// OIDCDiscoveryURL is an OpenID provider's issuer URL: its
	// /.well-known/openid-configuration names the key set (jwks_uri).
	// OIDCDiscoveryCACert is the PEM CA to trust for both (optional).
	OIDCDiscoveryURL    string
	OIDCDiscoveryCACert string
	// BoundIssuer, when set, must equal the token's iss.
	BoundIssuer string
	// BoundAudiences: one of them must be in the token's aud. With none,
	// a token that has an aud is refused.
	BoundAudiences []string
	// ClaimMappings maps a claim name (or a JSON pointer starting with "/")
	// to the target of a value.<target> identity field; ListClaimMappings
	// likewise to list.<target>.
	ClaimMappings     map[string]string
	ListClaimMappings map[string]string
	// JWTSupportedAlgs limits the signature algorithms (default: every
	// asymmetric one).
	JWTSupportedAlgs []string
	// Leeways: 0 means the default (150s, 150s, 60s), negative means none.
	ExpirationLeeway time.Duration
	NotBeforeLeeway  time.Duration
	ClockSkewLeeway  time.Duration

	// parsed forms, set by ParseConfig
	pubKeys []crypto.PublicKey
	algs    []jose.SignatureAlgorithm
}

// keyKind is the type a config key's value must have.
type keyKind int

const (
	kindString keyKind = iota
	kindStringList
	kindStringMap
	kindDuration
)

// configKeys are the keys a jwt config may have, with their types.
var configKeys = map[string]keyKind{
	"JWTValidationPubKeys": kindStringList,
	"JWKSURL":              kindString,
	"JWKSCACert":           kindString,
	"OIDCDiscoveryURL":     kindString,
	"OIDCDiscoveryCACert":  kindString,
	"BoundIssuer":          kindString,
	"BoundAudiences":       kindStringList,
	"ClaimMappings":        kindStringMap,
	"ListClaimMappings":    kindStringMap,
	"JWTSupportedAlgs":     kindStringList,
	"ExpirationLeeway":     kindDuration,
	"NotBeforeLeeway":      kindDuration,
	"ClockSkewLeeway":      kindDuration,
}

// oidcOnlyKeys are keys of upstream's shared OIDC/JWT configuration that a
// jwt method must not set.
var oidcOnlyKeys = []string{
	"OIDCClientID", "OIDCClientSecret",
	"OIDCScopes", "OIDCACRValues", "AllowedRedirectURIs", "VerboseOIDCLogging",
}

// supportedAlgs are the signature algorithms JWTSupportedAlgs may name:
// upstream's RS/ES/PS 256/384/512, plus EdDSA because Ed25519 keys are
// accepted. Symmetric algorithms and "none" never are.
var supportedAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.EdDSA,
}

// ParseConfig decodes and validates a jwt method's Config map. Unknown keys
// are refused; key names match case-insensitively, as upstream's decoder
// does. The error texts are upstream's, without the "Invalid Auth Method: "
// prefix the caller adds.
func ParseConfig(raw map[string]any) (*Config, error) {
	c := &Config{}
	seen := map[string]string{} // canonical key -> key as given
	var unknown []string
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, given := range keys {
		val := raw[given]
		canon := canonicalKey(given)
		if canon == "" {
			unknown = append(unknown, given)
			continue
		}
		if prev, dup := seen[canon]; dup {
			return nil, fmt.Errorf("Config key %q duplicates %q", given, prev)
		}
		seen[canon] = given
		if val == nil {
			continue // null: not set
		}
		if isOIDCOnly(canon) {
			if !isZero(val) {
				return nil, fmt.Errorf("'%s' must not be set for type %q", canon, TypeJWT)
			}
			continue
		}
		if err := c.set(canon, val); err != nil {
			return nil, err
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("Config has invalid keys: %s", strings.Join(unknown, ", "))
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func canonicalKey(k string) string {
	if _, ok := configKeys[k]; ok {
		return k
	}
	for canon := range configKeys {
		if strings.EqualFold(canon, k) {
			return canon
		}
	}
	for _, canon := range oidcOnlyKeys {
		if strings.EqualFold(canon, k) {
			return canon
		}
	}
	return ""
}

func isOIDCOnly(k string) bool {
	for _, o := range oidcOnlyKeys {
		if o == k {
			return true
		}
	}
	return false
}

// isZero says whether a decoded JSON value is empty ("", [], {}, false, 0).
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	case float64:
		return v == 0
	}
	return false
}

// set stores one decoded value under its canonical key.
func (c *Config) set(key string, val any) error {
	switch configKeys[key] {
	case kindString:
		s, ok := val.(string)
		if !ok {
			return typeError(key, "a string", val)
		}
		switch key {
		case "JWKSURL":
			c.JWKSURL = s
		case "JWKSCACert":
			c.JWKSCACert = s
		case "OIDCDiscoveryURL":
			c.OIDCDiscoveryURL = s
		case "OIDCDiscoveryCACert":
			c.OIDCDiscoveryCACert = s
		case "BoundIssuer":
			c.BoundIssuer = s
		}
	case kindStringList:
		list, err := stringList(key, val)
		if err != nil {
			return err
		}
		switch key {
		case "JWTValidationPubKeys":
			c.JWTValidationPubKeys = list
		case "BoundAudiences":
			c.BoundAudiences = list
		case "JWTSupportedAlgs":
			c.JWTSupportedAlgs = list
		}
	case kindStringMap:
		m, err := stringMap(key, val)
		if err != nil {
			return err
		}
		if key == "ClaimMappings" {
			c.ClaimMappings = m
		} else {
			c.ListClaimMappings = m
		}
	case kindDuration:
		// Design §7: leeways are Go duration strings. Upstream reads a
		// number as nanoseconds (so 150 means 150ns), which surprises
		// everyone; a number is refused here with a message that says why.
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("'%s' must be a Go duration string such as \"150s\", not %s", key, describe(val))
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("'%s' cannot parse value as 'time.Duration': %v", key, err)
		}
		switch key {
		case "ExpirationLeeway":
			c.ExpirationLeeway = d
		case "NotBeforeLeeway":
			c.NotBeforeLeeway = d
		case "ClockSkewLeeway":
			c.ClockSkewLeeway = d
		}
	}
	return nil
}

// stringList accepts a list of strings, or (as upstream's weakly typed
// decoding does) a single string.
func stringList(key string, val any) ([]string, error) {
	switch v := val.(type) {
	case string:
		return []string{v}, nil
	case []string:
		return append([]string(nil), v...), nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, typeError(fmt.Sprintf("%s[%d]", key, i), "a string", e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, typeError(key, "a list of strings", val)
}

func stringMap(key string, val any) (map[string]string, error) {
	out := map[string]string{}
	switch v := val.(type) {
	case map[string]string:
		for k, s := range v {
			out[k] = s
		}
	case map[string]any:
		for k, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, typeError(fmt.Sprintf("%s[%s]", key, k), "a string", e)
			}
			out[k] = s
		}
	default:
		return nil, typeError(key, "an object of strings", val)
	}
	return out, nil
}

func typeError(key, want string, got any) error {
	return fmt.Errorf("'%s' must be %s, not %s", key, want, describe(got))
}

// describe names a decoded JSON value's type for messages.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case float64, int, int64, uint64, int32, uint32:
		return fmt.Sprintf("the number %v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a value of type %T", v)
}

// validate makes upstream's checks, in upstream's order.
func (c *Config) validate() error {
	sources := 0
	if len(c.JWTValidationPubKeys) != 0 {
		sources++
	}
	if c.JWKSURL != "" {
		sources++
	}
	if c.OIDCDiscoveryURL != "" {
		sources++
	}
	if sources != 1 {
		return fmt.Errorf("exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type %q", TypeJWT)
	}
	if c.JWKSURL == "" && c.JWKSCACert != "" {
		return errors.New("'JWKSCACert' should not be set unless 'JWKSURL' is set")
	}
	if c.OIDCDiscoveryURL == "" && c.OIDCDiscoveryCACert != "" {
		return errors.New("'OIDCDiscoveryCACert' should not be set unless 'OIDCDiscoveryURL' is set")
	}
	for _, u := range []struct{ key, url string }{{"JWKSURL", c.JWKSURL}, {"OIDCDiscoveryURL", c.OIDCDiscoveryURL}} {
		if u.url != "" && !isHTTPURL(u.url) {
			return fmt.Errorf("'%s' must be an http or https URL, not %q", u.key, u.url)
		}
	}
	for _, ca := range []struct{ key, pem string }{{"JWKSCACert", c.JWKSCACert}, {"OIDCDiscoveryCACert", c.OIDCDiscoveryCACert}} {
		if ca.pem != "" {
			if _, err := certPoolFor(ca.key, ca.pem); err != nil {
				return err
			}
		}
	}
	c.pubKeys = nil
	for i, v := range c.JWTValidationPubKeys {
		key, err := parsePublicKeyPEM([]byte(v))
		if err != nil {
			return fmt.Errorf("error parsing public key JWTValidationPubKeys[%d]: %v", i, err)
		}
		c.pubKeys = append(c.pubKeys, key)
	}
	c.algs = nil
	for _, a := range c.JWTSupportedAlgs {
		alg, ok := supportedAlg(a)
		if !ok {
			return fmt.Errorf("Invalid supported algorithm: %s", a)
		}
		c.algs = append(c.algs, alg)
	}
	if len(c.algs) == 0 {
		c.algs = supportedAlgs
	}
	if err := uniqueTargets("ClaimMappings", c.ClaimMappings); err != nil {
		return err
	}
	return uniqueTargets("ListClaimMappings", c.ListClaimMappings)
}

// RequireHTTPS refuses a JWKSURL or OIDCDiscoveryURL that is not https.
// Keys are fetched on behalf of logins, which need no token: plain http
// would let anyone on the path substitute keys, and an http URL is more
// often an internal service than a key server. Only a -dev agent skips
// this check.
func (c *Config) RequireHTTPS() error {
	for _, u := range []struct{ key, url string }{{"JWKSURL", c.JWKSURL}, {"OIDCDiscoveryURL", c.OIDCDiscoveryURL}} {
		if u.url != "" && !strings.HasPrefix(strings.ToLower(u.url), "https://") {
			return fmt.Errorf("'%s' must be an https URL, not %q (plain http is allowed only on a -dev agent)", u.key, u.url)
		}
	}
	return nil
}

// isHTTPURL says whether s is an absolute http or https URL.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func supportedAlg(a string) (jose.SignatureAlgorithm, bool) {
	for _, s := range supportedAlgs {
		if string(s) == a {
			return s, true
		}
	}
	return "", false
}

// uniqueTargets refuses two claims mapped to the same target. Claims are
// taken in sorted order so that the message does not change between runs.
func uniqueTargets(what string, m map[string]string) error {
	claims := make([]string, 0, len(m))
	for k := range m {
		claims = append(claims, k)
	}
	sort.Strings(claims)
	targets := map[string]bool{}
	for _, claim := range claims {
		t := m[claim]
		if targets[t] {
			return fmt.Errorf("%s contains multiple mappings for key %q", what, t)
		}
		targets[t] = true
	}
	return nil
}

// parsePublicKeyPEM reads a PKIX public key or a certificate's key, as
// upstream does (including its error when the block is neither).
func parsePublicKeyPEM(data []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block != nil {
		rawKey, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			cert, certErr := x509.ParseCertificate(block.Bytes)
			if certErr != nil {
				return nil, certErr
			}
			rawKey = cert.PublicKey
		}
		switch k := rawKey.(type) {
		case *rsa.PublicKey:
			return k, nil
		case *ecdsa.PublicKey:
			return k, nil
		case ed25519.PublicKey:
			return k, nil
		}
	}
	return nil, errors.New("data does not contain any valid RSA, ECDSA, or ED25519 public keys")
}

// IdentityFields are the field names of the method's identity: value.<t>
// for every ClaimMappings target and list.<t> for every ListClaimMappings
// target, sorted.
func (c *Config) IdentityFields() []string {
	var out []string
	for _, t := range c.ClaimMappings {
		out = append(out, "value."+t)
	}
	for _, t := range c.ListClaimMappings {
		out = append(out, "list."+t)
	}
	sort.Strings(out)
	return out
}
