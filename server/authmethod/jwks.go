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

// jwksCacheTTL is how long fetched keys are used without asking again. A
// variable for tests.
var jwksCacheTTL = time.Minute

// jwksMinRefetch is the least time between two fetches caused by a token
// whose key is not in the cache, so that tokens with made-up key IDs cannot
// make the server hammer the key server. A variable for tests.
var jwksMinRefetch = time.Second

// keySet is a remote JSON Web Key Set, fetched on demand and cached for
// jwksCacheTTL; a token signed by a key the cache does not have causes a
// refetch (key rotation), at most once per jwksMinRefetch. When a refetch
// fails, keys fetched earlier are still used.
type keySet struct {
	url    string
	client *http.Client

	mu          sync.Mutex
	keys        []jose.JSONWebKey
	fetched     time.Time // last successful fetch
	lastAttempt time.Time // last fetch, successful or not
	generation  uint64    // bumped by every fetch attempt
	lastErr     error     // the last attempt's error

	fetchMu sync.Mutex // one fetch at a time
}

func newKeySet(url, caPEM string) (*keySet, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if caPEM != "" {
		pool, err := certPool(caPEM)
		if err != nil {
			return nil, err
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &keySet{url: url, client: &http.Client{Transport: transport, Timeout: jwksFetchTimeout}}, nil
}

// certPool parses JWKSCACert.
func certPool(caPEM string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, errors.New("could not parse 'JWKSCACert' value into a PEM certificate")
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

	if !fetched.IsZero() && time.Since(fetched) < jwksCacheTTL {
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
	recent := !ks.lastAttempt.IsZero() && time.Since(ks.lastAttempt) < jwksMinRefetch
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
	ks.lastAttempt = time.Now()
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

// fetch gets the key set, with go-oidc's error texts.
func (ks *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, fmt.Errorf("oidc: can't create request: %v", err)
	}
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oidc: get keys failed: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("oidc: get keys failed: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oidc: get keys failed: %s %s", resp.Status, snippet(body))
	}
	if len(body) > jwksMaxBody {
		return nil, fmt.Errorf("oidc: failed to decode keys: the key set is larger than %d bytes", jwksMaxBody)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("oidc: failed to decode keys: %v %s", err, snippet(body))
	}
	return set.Keys, nil
}

// snippet is the start of a response body for a message, on one line.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
