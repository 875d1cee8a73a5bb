package http_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// TestTokenSelfBlockingNeedsToken (issue 8, finding 4): a blocking
// token/self needs no permission, so without a (valid) token it is refused
// at once instead of holding the connection for the wait. With a token it
// still blocks, and without index it still shows the anonymous token.
func TestTokenSelfBlockingNeedsToken(t *testing.T) {
	s := lgStart(t)
	var self struct{ AccessorID string }
	resp := s.Do(t, "GET", "/v1/acl/token/self", "")
	resp.JSON(t, &self)
	if resp.Status != 200 || self.AccessorID != state.AnonymousTokenID {
		t.Fatalf("non-blocking token/self without a token: %s", resp)
	}
	index := indexOf(t, resp)
	client := &http.Client{Timeout: 5 * time.Second} // today's code blocks for the whole wait
	get := func(secret string, wait string) (int, string, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+"/v1/acl/token/self?index="+u(index)+"&wait="+wait, nil)
		if secret != "" {
			req.Header.Set("X-Service-Token", secret)
		}
		start := time.Now()
		r, err := client.Do(req)
		if err != nil {
			t.Fatalf("blocking token/self (token %q): %v", secret, err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b), time.Since(start)
	}
	const anonMsg = "Permission denied: a blocking token/self query needs a token; the anonymous token cannot block"
	for _, c := range []struct{ secret, msg string }{
		{"", anonMsg},
		{state.AnonymousTokenSecret, anonMsg},
		{"7a3c1d2e-0000-4000-8000-000000000000", "token does not exist: ACL not found"},
	} {
		status, body, took := get(c.secret, "10m")
		if status != 403 || body != c.msg || took > 2*time.Second {
			t.Errorf("token %q: %d %q after %v, want 403 %q at once", c.secret, status, body, took, c.msg)
		}
	}
	// A real token blocks until the wait (plus jitter) ends.
	status, body, took := get(lgMgmt, "300ms")
	if status != 200 || took < 300*time.Millisecond {
		t.Errorf("management token: %d %q after %v, want 200 after the wait", status, body, took)
	}
}
