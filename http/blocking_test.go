package http_test

import (
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// Blocking queries (design §2): ?index=N&wait=D on read and list answer as
// soon as the result's index passes N, or at the end of the wait with the
// current data and a 200. index missing or 0 answers at once.

// woken is how long a blocked query may take to answer after the write that
// wakes it. It is far below every wait used here, so a query that answers
// within it was woken by the write and did not run into its timeout; it is
// not a speed requirement.
const woken = 10 * time.Second

// writeResult is the outcome of a write made from another goroutine.
type writeResult struct {
	status int
	body   string
	err    error
}

// blockingStart starts a server whose API is served by a handler the test
// holds, so that it can see when a query blocks.
func blockingStart(t *testing.T) (*servertest.TestServer, *ctlhttp.Handler) {
	t.Helper()
	return serveOwn(t, start(t), ctlhttp.Services{})
}

// writeWhenBlocked sends one request from its own goroutine once a query
// is blocked in h (the test goroutine's), so that the write provably comes
// after the query started to wait.
func writeWhenBlocked(ts *servertest.TestServer, h *ctlhttp.Handler, method, path, body string) <-chan writeResult {
	ch := make(chan writeResult, 1)
	go func() {
		if err := untilBlocked(h, 1); err != nil {
			ch <- writeResult{err: err}
			return
		}
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			ch <- writeResult{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- writeResult{err: err}
			return
		}
		defer resp.Body.Close()
		buf, err := io.ReadAll(resp.Body)
		ch <- writeResult{status: resp.StatusCode, body: string(buf), err: err}
	}()
	return ch
}

// wrote waits for a write made by writeWhenBlocked and decodes the rule it answered.
func wrote(t *testing.T, ch <-chan writeResult) rule {
	t.Helper()
	w := <-ch
	if w.err != nil || w.status != 200 {
		t.Fatalf("write: %d %q %v", w.status, w.body, w.err)
	}
	resp := &servertest.Response{Status: w.status, Body: w.body}
	var r rule
	resp.JSON(t, &r)
	return r
}

func TestBlockingListWokenByWrite(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	first := create(t, ts, minimalBody)
	index := first.ModifyIndex

	began := time.Now()
	ch := writeWhenBlocked(ts, h, "PUT", rulePath, `{"AuthMethod":"minikube","BindType":"node","BindName":"n1"}`)
	resp := ts.Do(t, "GET", rulesPath+"?index="+u(index)+"&wait=30s", "")
	elapsed := time.Since(began)
	second := wrote(t, ch)

	if elapsed >= woken {
		t.Errorf("the list answered after %v: not woken by the write", elapsed)
	}
	if second.ModifyIndex <= index {
		t.Fatalf("write at %d, not above %d", second.ModifyIndex, index)
	}
	want := []rule{first, second}
	if second.ID < first.ID {
		want = []rule{second, first}
	}
	expectJSON(t, resp, listBody(want...))
	expectMeta(t, resp, second.ModifyIndex)
}

func TestBlockingListNamespaceWokenByWriteThere(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	first := create(t, ts, minimalBody)

	began := time.Now()
	ch := writeWhenBlocked(ts, h, "PUT", rulePath+"?ns=team-a", minimalBody)
	resp := ts.Do(t, "GET", rulesPath+"?ns=team-a&index="+u(first.ModifyIndex)+"&wait=30s", "")
	elapsed := time.Since(began)
	inA := wrote(t, ch)

	if elapsed >= woken {
		t.Errorf("the list answered after %v: not woken by the write", elapsed)
	}
	expectJSON(t, resp, listBody(inA))
	expectMeta(t, resp, inA.ModifyIndex)
}

func TestBlockingReadWokenByUpdate(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	r := create(t, ts, minimalBody)
	index := indexOf(t, ts.Do(t, "GET", ruleURL(r.ID), ""))

	began := time.Now()
	ch := writeWhenBlocked(ts, h, "PUT", ruleURL(r.ID), `{"Description":"updated","BindType":"service","BindName":"api"}`)
	resp := ts.Do(t, "GET", ruleURL(r.ID, "?index="+u(index)+"&wait=30s"), "")
	elapsed := time.Since(began)
	updated := wrote(t, ch)

	if elapsed >= woken {
		t.Errorf("the read answered after %v: not woken by the update", elapsed)
	}
	if updated.ModifyIndex <= index {
		t.Fatalf("update at %d, not above %d", updated.ModifyIndex, index)
	}
	expectJSON(t, resp, updated.full())
	expectMeta(t, resp, updated.ModifyIndex)
}

func TestBlockingReadWokenByDelete(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	r := create(t, ts, minimalBody)

	began := time.Now()
	ch := writeWhenBlocked(ts, h, "DELETE", ruleURL(r.ID), "")
	resp := ts.Do(t, "GET", ruleURL(r.ID, "?index="+u(r.ModifyIndex)+"&wait=30s"), "")
	elapsed := time.Since(began)
	if w := <-ch; w.err != nil || w.status != 200 || w.body != "true" {
		t.Fatalf("delete: %d %q %v", w.status, w.body, w.err)
	}

	if elapsed >= woken {
		t.Errorf("the read answered after %v: not woken by the delete", elapsed)
	}
	expectError(t, resp, 404, "Requested binding rule does not exist: ACL not found")
	if got := indexOf(t, resp); got <= r.ModifyIndex {
		t.Errorf("X-Service-Index %d after the delete, want above %d", got, r.ModifyIndex)
	}
	expectMeta(t, resp, stateOf(t, ts).index)
}

func TestBlockingReadOfMissingRuleWokenByWrite(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	r := create(t, ts, minimalBody)

	began := time.Now()
	ch := writeWhenBlocked(ts, h, "PUT", rulePath, minimalBody)
	resp := ts.Do(t, "GET", ruleURL(otherID, "?index="+u(r.ModifyIndex)+"&wait=30s"), "")
	elapsed := time.Since(began)
	other := wrote(t, ch)

	if elapsed >= woken {
		t.Errorf("the read answered after %v: not woken by the write to the table", elapsed)
	}
	expectError(t, resp, 404, "Requested binding rule does not exist: ACL not found")
	expectMeta(t, resp, other.ModifyIndex)
}

func TestBlockingTimesOutWithCurrentData(t *testing.T) {
	t.Parallel()
	ts := start(t)
	r := create(t, ts, minimalBody)
	const wait = 200 * time.Millisecond

	tests := []struct {
		name string
		path string
		want func(t *testing.T, resp *servertest.Response)
	}{
		{"list", rulesPath + "?index=" + u(r.ModifyIndex) + "&wait=200ms", func(t *testing.T, resp *servertest.Response) {
			expectJSON(t, resp, listBody(r))
		}},
		{"read", ruleURL(r.ID, "?index="+u(r.ModifyIndex)+"&wait=200ms"), func(t *testing.T, resp *servertest.Response) {
			expectJSON(t, resp, r.full())
		}},
		{"stale read", ruleURL(r.ID, "?stale&index="+u(r.ModifyIndex)+"&wait=200ms"), func(t *testing.T, resp *servertest.Response) {
			expectJSON(t, resp, r.full())
		}},
		{"consistent list", rulesPath + "?consistent&index=" + u(r.ModifyIndex) + "&wait=200ms", func(t *testing.T, resp *servertest.Response) {
			expectJSON(t, resp, listBody(r))
		}},
		{"read of a missing rule", ruleURL(otherID, "?index="+u(r.ModifyIndex)+"&wait=200ms"), func(t *testing.T, resp *servertest.Response) {
			expectError(t, resp, 404, "Requested binding rule does not exist: ACL not found")
		}},
		{"index above the table's", rulesPath + "?index=" + u(r.ModifyIndex+100) + "&wait=200ms", func(t *testing.T, resp *servertest.Response) {
			expectJSON(t, resp, listBody(r))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			resp := ts.Do(t, "GET", tc.path, "")
			// A correctness check of blocking, not a speed bound: with
			// nothing written, the query must not answer before its wait.
			if elapsed := time.Since(began); elapsed < wait {
				t.Errorf("answered after %v, before the %v wait ended", elapsed, wait)
			}
			tc.want(t, resp)
			expectMeta(t, resp, r.ModifyIndex)
		})
	}
}

func TestBlockingAnswersAtOnce(t *testing.T) {
	t.Parallel()
	ts := start(t)
	r := create(t, ts, minimalBody)
	create(t, ts, minimalBody)
	index := stateOf(t, ts).index

	for _, path := range []string{
		rulesPath + "?index=0&wait=30s",
		ruleURL(r.ID, "?index=0&wait=30s"),
		rulesPath + "?wait=30s",
		ruleURL(r.ID, "?wait=30s"),
		rulesPath + "?index=" + u(index-1) + "&wait=30s",
		ruleURL(r.ID, "?index="+u(r.ModifyIndex)+"&wait=30s"), // the table moved on since
		ruleURL(otherID, "?index=1&wait=30s"),
	} {
		t.Run(path, func(t *testing.T) {
			began := time.Now()
			resp := ts.Do(t, "GET", path, "")
			if elapsed := time.Since(began); elapsed >= woken {
				t.Errorf("answered after %v: it blocked", elapsed)
			}
			if resp.Status != 200 && resp.Status != 404 {
				t.Errorf("got %s", resp)
			}
			expectMeta(t, resp, index)
		})
	}
}

// TestBlockingDefaultWait: an index without a wait blocks (default 5m), so
// only the write ends it.
func TestBlockingDefaultWait(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	r := create(t, ts, minimalBody)

	began := time.Now()
	ch := writeWhenBlocked(ts, h, "PUT", rulePath, minimalBody)
	resp := ts.Do(t, "GET", rulesPath+"?index="+u(r.ModifyIndex), "")
	elapsed := time.Since(began)
	second := wrote(t, ch) // sent only once the query was blocked

	if elapsed >= woken {
		t.Errorf("answered after %v: not woken by the write", elapsed)
	}
	expectMeta(t, resp, second.ModifyIndex)
}

// TestBlockingReadNotWokenByUnrelatedWrite: a read blocked on one rule
// watches that rule; a write to another rule does not end it before its
// wait.
func TestBlockingReadNotWokenByUnrelatedWrite(t *testing.T) {
	t.Parallel()
	ts, h := blockingStart(t)
	r := create(t, ts, minimalBody)
	other := create(t, ts, minimalBody)
	index := other.ModifyIndex
	const wait = time.Second

	// The write comes once the read is blocked (a read that started after
	// it would rightly answer at once: the table moved on).
	began := time.Now()
	ch := writeWhenBlocked(ts, h, "PUT", ruleURL(other.ID), `{"BindType":"service","BindName":"changed"}`)
	resp := ts.Do(t, "GET", ruleURL(r.ID, "?index="+u(index)+"&wait=1s"), "")
	elapsed := time.Since(began)
	updated := wrote(t, ch)
	if updated.ModifyIndex <= index {
		t.Fatalf("unrelated write at %d, not above %d", updated.ModifyIndex, index)
	}

	if elapsed < wait {
		t.Errorf("answered after %v, before its %v wait: woken by a write to another rule", elapsed, wait)
	}
	expectJSON(t, resp, r.full())
	// The data is current (the rule did not change); the index is at least
	// the one the client sent.
	if got := indexOf(t, resp); got < index {
		t.Errorf("X-Service-Index %d below the client's %d", got, index)
	}
}
