package authmethod

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

func newKeySet(url, caPEM string, discovery bool, now func() time.Time) (*keySet, error) {
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
	return &keySet{url: url, discovery: discovery, now: now, client: &http.Client{Transport: transport, Timeout: jwksFetchTimeout}}, nil
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

// fetch gets the key set (after discovering its URL), with go-oidc's error
// texts.
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
	body, err := ks.get(ctx, jwksURL, "get keys")
	if err != nil {
		return nil, err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("oidc: failed to decode keys: %v %s", err, snippet(body))
	}
	return set.Keys, nil
}

// discover reads the provider's OpenID configuration and returns its
// jwks_uri. As go-oidc does, the configuration must name the issuer it was
// fetched from.
func (ks *keySet) discover(ctx context.Context) (string, error) {
	issuer := strings.TrimSuffix(ks.url, "/")
	body, err := ks.get(ctx, issuer+"/.well-known/openid-configuration", "get provider configuration")
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("oidc: failed to decode provider discovery object: %v %s", err, snippet(body))
	}
	if strings.TrimSuffix(doc.Issuer, "/") != issuer {
		return "", fmt.Errorf("oidc: issuer did not match the issuer returned by provider, expected %q got %q", ks.url, doc.Issuer)
	}
	if !isHTTPURL(doc.JWKSURI) {
		return "", fmt.Errorf("oidc: provider discovery object has no http or https jwks_uri: %q", doc.JWKSURI)
	}
	return doc.JWKSURI, nil
}

// get reads a URL's body, at most jwksMaxBody bytes; what names the step in
// messages.
func (ks *keySet) get(ctx context.Context, url, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("oidc: can't create request: %v", err)
	}
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oidc: %s failed: %v", what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("oidc: %s failed: %v", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oidc: %s failed: %s %s", what, resp.Status, snippet(body))
	}
	if len(body) > jwksMaxBody {
		return nil, fmt.Errorf("oidc: %s failed: the response is larger than %d bytes", what, jwksMaxBody)
	}
	return body, nil
}

// snippet is the start of a response body for a message, on one line.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
