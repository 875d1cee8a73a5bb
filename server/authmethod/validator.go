package authmethod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Default leeways (upstream's): a leeway of 0 means these, a negative one
// means none.
const (
	defaultClaimLeeway     = 150 * time.Second
	defaultClockSkewLeeway = jwt.DefaultLeeway
)

// Validator checks bearer tokens for one auth method. It is safe for
// concurrent use; with a JWKS URL it keeps the fetched keys, so keep one
// Validator per method (configuration) rather than one per login.
type Validator struct {
	cfg       *Config
	jwks      *keySet
	now       func() time.Time
	allowHTTP bool
}

// Option changes a Validator.
type Option func(*Validator)

// WithClock makes the validator (token times and the key cache) read the
// time from now.
func WithClock(now func() time.Time) Option { return func(v *Validator) { v.now = now } }

// WithHTTPKeyURLs lets the validator fetch keys over plain http, which a
// -dev agent allows; otherwise JWKSURL, OIDCDiscoveryURL and a discovered
// jwks_uri must be https.
func WithHTTPKeyURLs(allow bool) Option { return func(v *Validator) { v.allowHTTP = allow } }

// NewValidator returns a validator for a parsed configuration.
func NewValidator(cfg *Config, opts ...Option) (*Validator, error) {
	v := &Validator{cfg: cfg, now: time.Now}
	for _, o := range opts {
		o(v)
	}
	var err error
	switch {
	case cfg.JWKSURL != "":
		v.jwks, err = newKeySet(cfg.JWKSURL, cfg.JWKSCACert, false, v.allowHTTP, v.now)
	case cfg.OIDCDiscoveryURL != "":
		v.jwks, err = newKeySet(cfg.OIDCDiscoveryURL, cfg.OIDCDiscoveryCACert, true, v.allowHTTP, v.now)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Config is the validator's configuration.
func (v *Validator) Config() *Config { return v.cfg }

// FetchError is a failure to get the JWKS keys: the server's problem (or the
// key server's), not the bearer token's.
type FetchError struct{ Err error }

func (e *FetchError) Error() string { return "error verifying token: fetching keys " + e.Err.Error() }
func (e *FetchError) Unwrap() error { return e.Err }

// ValidateLogin validates a bearer token (signature, time claims, issuer,
// audience) and returns the identity it stands for. The error texts are
// upstream's. A *FetchError means the keys could not be fetched.
func (v *Validator) ValidateLogin(ctx context.Context, bearer string) (*Identity, error) {
	if bearer == "" {
		return nil, errors.New("missing jwt")
	}
	payload, err := v.verifySignature(ctx, bearer)
	if err != nil {
		return nil, err
	}
	var claims jwt.Claims
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, fmt.Errorf("failed to unmarshal claims: %v", err)
	}
	allClaims := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&allClaims); err != nil {
		return nil, fmt.Errorf("failed to unmarshal claims: %v", err)
	}
	if err := v.validateClaims(&claims); err != nil {
		return nil, err
	}
	return v.cfg.identityFromClaims(allClaims)
}

// verifySignature checks the token's signature and returns its payload.
func (v *Validator) verifySignature(ctx context.Context, bearer string) ([]byte, error) {
	if v.jwks != nil {
		sig, err := jose.ParseSignedCompact(bearer, v.cfg.algs)
		if err != nil {
			return nil, fmt.Errorf("error verifying token: oidc: malformed jwt: %v", err)
		}
		return v.jwks.verify(ctx, sig)
	}
	sig, err := jose.ParseSignedCompact(bearer, v.cfg.algs)
	if err != nil {
		return nil, fmt.Errorf("error parsing token: %v", err)
	}
	for _, key := range v.cfg.pubKeys {
		if payload, err := sig.Verify(key); err == nil {
			return payload, nil
		}
	}
	return nil, errors.New("no known key successfully validated the token signature")
}

// leeway applies upstream's rule: 0 is the default, negative is none.
func leeway(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// validateClaims applies upstream's time, issuer and audience rules.
func (v *Validator) validateClaims(claims *jwt.Claims) error {
	var iat, exp, nbf int64
	if claims.IssuedAt != nil {
		iat = int64(*claims.IssuedAt)
	}
	if claims.Expiry != nil {
		exp = int64(*claims.Expiry)
	}
	if claims.NotBefore != nil {
		nbf = int64(*claims.NotBefore)
	}
	if iat == 0 && exp == 0 && nbf == 0 {
		return errors.New("no issue time, notbefore, or expiration time encoded in token")
	}
	if exp == 0 {
		latestStart := max(iat, nbf)
		exp = latestStart + int64(leeway(v.cfg.ExpirationLeeway, defaultClaimLeeway).Seconds())
	}
	if nbf == 0 {
		if iat != 0 {
			nbf = iat
		} else {
			nbf = exp - int64(leeway(v.cfg.NotBeforeLeeway, defaultClaimLeeway).Seconds())
		}
	}
	checked := *claims
	expDate, nbfDate := jwt.NumericDate(exp), jwt.NumericDate(nbf)
	checked.Expiry, checked.NotBefore = &expDate, &nbfDate
	if iat == 0 {
		checked.IssuedAt = nil
	}
	expected := jwt.Expected{Issuer: v.cfg.BoundIssuer, Time: v.now()}
	if err := checked.ValidateWithLeeway(expected, leeway(v.cfg.ClockSkewLeeway, defaultClockSkewLeeway)); err != nil {
		return fmt.Errorf("error validating claims: %v", err)
	}
	if err := validateAudience(v.cfg.BoundAudiences, claims.Audience); err != nil {
		return fmt.Errorf("error validating claims: %v", err)
	}
	return nil
}

// validateAudience is upstream's strict audience rule for jwt methods.
func validateAudience(bound []string, aud jwt.Audience) error {
	if len(bound) == 0 {
		if len(aud) > 0 {
			return errors.New("audience claim found in JWT but no audiences are bound")
		}
		return nil
	}
	for _, b := range bound {
		for _, a := range aud {
			if a == b {
				return nil
			}
		}
	}
	return errors.New("aud claim does not match any bound audience")
}
