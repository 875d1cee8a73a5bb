package authmethod

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// JWKS fetching and caching.
const (
	// jwksFetchTimeout bounds one fetch of the key set.
	jwksFetchTimeout = 10 * time.Second
	// jwksMaxBody is the largest key set read.
	jwksMaxBody = 1 << 20
)

const (
	// jwksCacheTTL is how long fetched keys are used without asking again.
	jwksCacheTTL = time.Minute
	// jwksMinRefetch is the least time between two fetches caused by a
	// token whose key is not in the cache, so that tokens with made-up key
	// IDs cannot make the server hammer the key server.
	jwksMinRefetch = time.Second
)

// keySet is a remote JSON Web Key Set, fetched on demand and cached for
// jwksCacheTTL; a token signed by a key the cache does not have causes a
// refetch (key rotation), at most once per jwksMinRefetch. When a refetch
// fails, keys fetched earlier are still used. With OIDC discovery every
// fetch first reads the provider's configuration for its jwks_uri, under
// the same timeout, size cap and refetch limit.
type keySet struct {
	// url is the JWKS URL, or the OIDC issuer URL when discovery is set.
	url       string
	discovery bool
	// allowHTTP: plain http URLs may be fetched (a -dev agent only).
	allowHTTP bool
	client    *http.Client
	now       func() time.Time

	mu          sync.Mutex
	keys        []jose.JSONWebKey
	fetched     time.Time // last successful fetch
	lastAttempt time.Time // last fetch, successful or not
	generation  uint64    // bumped by every fetch attempt
	lastErr     error     // the last attempt's error

	fetchMu sync.Mutex // one fetch at a time
}

func newKeySet(keyURL, caPEM string, discovery, allowHTTP bool, now func() time.Time) (*keySet, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if caPEM != "" {
		key := "JWKSCACert"
		if discovery {
			key = "OIDCDiscoveryCACert"
		}
		pool, err := certPoolFor(key, caPEM)
		if err != nil {
			return nil, err
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   jwksFetchTimeout,
		// A redirect could lead anywhere, http or an internal host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &keySet{url: keyURL, discovery: discovery, allowHTTP: allowHTTP, now: now, client: client}, nil
}

// certPool parses JWKSCACert.
func certPool(caPEM string) (*x509.CertPool, error) {
	return certPoolFor("JWKSCACert", caPEM)
}

// certPoolFor parses the PEM CA of config key key.
func certPoolFor(key, caPEM string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, fmt.Errorf("could not parse '%s' value into a PEM certificate", key)
	}
	return pool, nil
}

// verify checks a parsed token against the key set and returns its payload.
func (ks *keySet) verify(ctx context.Context, sig *jose.JSONWebSignature) ([]byte, error) {
	kid := ""
	if len(sig.Signatures) > 0 {
		kid = sig.Signatures[0].Header.KeyID
	}
	ks.mu.Lock()
	keys, fetched, gen := ks.keys, ks.fetched, ks.generation
	ks.mu.Unlock()

	if !fetched.IsZero() && ks.now().Sub(fetched) < jwksCacheTTL {
		if payload, ok := verifyWith(keys, kid, sig); ok {
			return payload, nil
		}
	}
	keys, err := ks.refresh(ctx, gen)
	if err != nil {
		return nil, &FetchError{Err: err}
	}
	if payload, ok := verifyWith(keys, kid, sig); ok {
		return payload, nil
	}
	return nil, errors.New("error verifying token: failed to verify id token signature")
}

// verifyWith tries every key with a matching key ID (every key when the
// token names none).
func verifyWith(keys []jose.JSONWebKey, kid string, sig *jose.JSONWebSignature) ([]byte, bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if payload, err := sig.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// refresh fetches the key set unless another caller has done so since
// generation gen was read, or the last attempt is too recent; it returns
// the keys to use. An error means there are no keys at all.
func (ks *keySet) refresh(ctx context.Context, gen uint64) ([]jose.JSONWebKey, error) {
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()

	ks.mu.Lock()
	recent := !ks.lastAttempt.IsZero() && ks.now().Sub(ks.lastAttempt) < jwksMinRefetch
	if ks.generation != gen || recent {
		keys, have, lastErr := ks.keys, !ks.fetched.IsZero(), ks.lastErr
		ks.mu.Unlock()
		if have {
			return keys, nil
		}
		return nil, lastErr
	}
	ks.mu.Unlock()

	keys, err := ks.fetch(ctx)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.generation++
	ks.lastAttempt = ks.now()
	ks.lastErr = err
	if err != nil {
		if !ks.fetched.IsZero() {
			return ks.keys, nil // keep using what we had
		}
		return nil, err
	}
	ks.keys, ks.fetched = keys, ks.lastAttempt
	return keys, nil
}

// fetch gets the key set (after discovering its URL). Its errors say what
// was wrong (status, content type, size, where the JSON broke) but never
// quote the response: a login needs no token, and the URL could be an
// internal one whose content an anonymous caller must not learn.
func (ks *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	jwksURL := ks.url
	if ks.discovery {
		var err error
		if jwksURL, err = ks.discover(ctx); err != nil {
			return nil, err
		}
	}
	body, ctype, err := ks.get(ctx, jwksURL, "get keys")
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("oidc: failed to decode keys: %s", jsonProblem(err, ctype))
	}
	keys := make([]jose.JSONWebKey, len(set.Keys))
	for i, raw := range set.Keys {
		// go-jose's messages can quote the key's fields.
		if err := keys[i].UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("oidc: failed to decode keys: key %d of the set is not a valid JSON Web Key", i)
		}
	}
	return keys, nil
}

// discover reads the provider's OpenID configuration and returns its
// jwks_uri. As go-oidc does, the configuration must name the issuer it was
// fetched from.
func (ks *keySet) discover(ctx context.Context) (string, error) {
	issuer := strings.TrimSuffix(ks.url, "/")
	body, ctype, err := ks.get(ctx, issuer+"/.well-known/openid-configuration", "get provider configuration")
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("oidc: failed to decode provider discovery object: %s", jsonProblem(err, ctype))
	}
	if strings.TrimSuffix(doc.Issuer, "/") != issuer {
		return "", fmt.Errorf("oidc: issuer did not match the issuer returned by provider, expected %q", ks.url)
	}
	if !ks.allowedURL(doc.JWKSURI) {
		return "", fmt.Errorf("oidc: provider discovery object has no %s jwks_uri", ks.schemes())
	}
	return doc.JWKSURI, nil
}

// allowedURL says whether a URL may be fetched: https, or http as well
// when the agent allows it (-dev).
func (ks *keySet) allowedURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "https" || (ks.allowHTTP && u.Scheme == "http"))
}

func (ks *keySet) schemes() string {
	if ks.allowHTTP {
		return "http or https"
	}
	return "https"
}

// get reads a URL's body, at most jwksMaxBody bytes, and its media type;
// what names the step in messages. Redirects are not followed: a key
// server that answers with one is refused like any other non-200.
func (ks *keySet) get(ctx context.Context, target, what string) ([]byte, string, error) {
	if !ks.allowedURL(target) {
		return nil, "", fmt.Errorf("oidc: %s failed: the URL is not %s (plain http is allowed only on a -dev agent)", what, ks.schemes())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, "", fmt.Errorf("oidc: can't create request: %v", err)
	}
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("oidc: %s failed: %v", what, err)
	}
	defer resp.Body.Close()
	ctype := mediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK {
		// The status text is Go's, not the reason phrase the server sent.
		msg := fmt.Sprintf("oidc: %s failed: status %d %s", what, resp.StatusCode, http.StatusText(resp.StatusCode))
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			msg += " (redirects are not followed)"
		}
		return nil, "", errors.New(msg)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBody+1))
	if err != nil {
		return nil, "", fmt.Errorf("oidc: %s failed: %v", what, err)
	}
	if len(body) > jwksMaxBody {
		return nil, "", fmt.Errorf("oidc: %s failed: the response is larger than %d bytes", what, jwksMaxBody)
	}
	return body, ctype, nil
}

// mediaType is a response's media type for messages: only a well-formed
// one, which is a short token pair, never free text.
func mediaType(header string) string {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil || len(mt) > 64 {
		return "unknown"
	}
	return mt
}

// jsonProblem says why a response did not decode, by position only.
func jsonProblem(err error, ctype string) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("the response (Content-Type %s) is not valid JSON: syntax error at byte %d", ctype, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("the response (Content-Type %s) is JSON of the wrong shape: %s at byte %d where %s was expected", ctype, jsonKind(typ.Value), typ.Offset, goKind(typ.Type))
	}
	return fmt.Sprintf("the response (Content-Type %s) is not valid JSON", ctype)
}

// jsonKind names a JSON value kind as encoding/json reports it.
func jsonKind(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	}
	return "a " + v
}

// goKind names what a Go type decodes from, in JSON's words.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	}
	return "a " + t.Kind().String()
}
