package http_test

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/operator"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/hashicorp/go-hclog"
)

// fakeClock is a clock the test moves: expiry tests advance it instead of
// sleeping through a wall-clock window.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// newFakeClock starts at the real time, so that bearer tokens signed now
// (their iat and exp) are valid on it.
func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// aclService is an ACL service over ts's state and Raft log, on clock,
// configured as the agent configures its own.
func aclService(ts *servertest.TestServer, clock func() time.Time) *acl.Service {
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: clock, Logger: hclog.NewNullLogger()}
	return acl.NewService(deps, ts.Config.Datacenter, acl.AllowHTTPKeyURLs(ts.Config.Dev))
}

// aclOf is the ACL service the composition root (server/agent/wire.go)
// builds for srv: ctlhttp.New requires one.
func aclOf(srv *server.Server) *acl.Service {
	deps := svc.Deps{State: srv.State, Raft: srv, Now: time.Now, Logger: hclog.NewNullLogger()}
	return acl.NewService(deps, srv.Datacenter(), acl.AllowHTTPKeyURLs(srv.IsDev()))
}

// onClock serves ts's API from a handler of its own whose ACL service reads
// clock (serveOwn).
func onClock(t testing.TB, ts *servertest.TestServer, clock *fakeClock) (*servertest.TestServer, *ctlhttp.Handler) {
	t.Helper()
	return serveOwn(t, ts, ctlhttp.Services{ACL: aclService(ts, clock.Now)})
}

// serveOwn serves ts's API from a handler of its own (with services) on
// 127.0.0.1 and returns ts with URL pointing there, so that every request
// helper works unchanged, and the handler, whose BlockedQueries tells a
// test that a query is waiting.
func serveOwn(t testing.TB, ts *servertest.TestServer, services ctlhttp.Services) (*servertest.TestServer, *ctlhttp.Handler) {
	t.Helper()
	if services.ACL == nil {
		services.ACL = aclOf(ts.Server)
	}
	if services.Operator == nil {
		services.Operator = operator.New(ts.Server)
	}
	h := ctlhttp.New(ts.Server, hclog.NewNullLogger(), services)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	out := *ts
	out.URL = srv.URL
	return &out, h
}

// untilBlocked waits until at least n queries are blocked in h; it reports
// instead of failing so that goroutines can use it.
func untilBlocked(h *ctlhttp.Handler, n int64) error {
	deadline := time.Now().Add(10 * time.Second)
	for h.BlockedQueries() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d queries blocked after 10s, want %d", h.BlockedQueries(), n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// waitBlocked is untilBlocked for the test goroutine.
func waitBlocked(t testing.TB, h *ctlhttp.Handler, n int64) {
	t.Helper()
	if err := untilBlocked(h, n); err != nil {
		t.Fatal(err)
	}
}

// waitACLReady waits until the leader has created the built-in ACL objects
// (it does so just after winning the election, so the first requests could
// otherwise meet `ACL not found`): the anonymous token and every secret
// given resolve.
func waitACLReady(t testing.TB, ts *servertest.TestServer, secrets ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		last := ts.Do(t, "GET", "/v1/acl/token/self", "")
		ok := last.Status == 200
		for _, secret := range secrets {
			if !ok {
				break
			}
			last = ts.Do(t, "GET", "/v1/acl/token/self", "", "X-Service-Token", secret)
			ok = last.Status == 200
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ACL system did not become ready: token/self %s", last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor waits until cond holds: for a leader routine to run, never for
// time to pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
