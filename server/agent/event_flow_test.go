package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// An idle stream sends `{}` at the heartbeat interval.
func TestEventStreamHeartbeat(t *testing.T) {
	ts := servertest.Start(t, eventConfig(0, 100*time.Millisecond))
	s := openRaw(t, ts.URL, "topic=Deployment", "")
	if s.resp.StatusCode != http.StatusOK || s.resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q", s.resp.StatusCode, s.resp.Header.Get("Content-Type"))
	}
	start := time.Now()
	for i := 0; i < 3; i++ {
		if l, _ := s.next(t, 2*time.Second); l != "{}" {
			t.Fatalf("line %d: %q, want a heartbeat", i, l)
		}
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("3 heartbeats took %v at a 100ms interval", d)
	}
}

// dialTiny opens a connection with a tiny receive window and subscribes to
// the Job topic on it, reading nothing but the response's headers.
func dialTiny(t *testing.T, ts *servertest.TestServer) (net.Conn, *http.Response) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(context.Background(), "tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /v1/event/stream?topic=Job HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(ts.URL, "http://"))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("subscribe: %d %s", resp.StatusCode, msg)
	}
	return conn, resp
}

// registerBig registers n jobs of ~120 KB each (job Meta and task Config
// at their caps): more than socket buffers hold.
func registerBig(t *testing.T, ts *servertest.TestServer, n int) {
	t.Helper()
	meta := map[string]string{}
	for k := 0; k < 60; k++ {
		meta[fmt.Sprint("k", k)] = strings.Repeat("m", 1000)
	}
	metaJSON, _ := json.Marshal(meta)
	for i := 0; i < n; i++ {
		spec := jobSpec{count: 1, config: map[string]any{"run_for": "1h", "pad": strings.Repeat("c", 60<<10)}}
		body := strings.Replace(spec.body(), `"ID":"web"`, fmt.Sprintf(`"ID":"job%d","Meta":%s`, i, metaJSON), 1)
		if r := ts.Do(t, http.MethodPut, "/v1/jobs", body); r.Status != http.StatusOK {
			t.Fatalf("register %d: %d %s", i, r.Status, r.Body)
		}
	}
}

// readAll reads a stream's lines to its end.
func readAll(t *testing.T, body io.Reader) []string {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end")
	}
	return lines
}

// A subscriber that stops reading while the cluster goes on writing is cut
// off with a message once it falls behind the buffer: the server never
// holds more than the buffer's batches for it.
func TestEventStreamSlowConsumerCutOff(t *testing.T) {
	const size = 5
	ts := servertest.Start(t, eventConfig(size, 0), func(c *server.Config) { c.EventWriteTimeout = time.Minute })
	_, resp := dialTiny(t, ts)
	const jobs = 80
	registerBig(t, ts, jobs)
	if n := ts.EventBuffer().Size(); n != size {
		t.Fatalf("buffer size %d", n)
	}
	// Now read it all: the jobs' events it got before it fell behind (how
	// many depends on scheduling, none included), then the reason it was
	// cut off.
	lines := readAll(t, resp.Body)
	if len(lines) < 1 {
		t.Fatal("the stream ended without a line")
	}
	last := decodeLine(t, lines[len(lines)-1])
	if !strings.HasPrefix(last.Error, "subscription closed by server: the client fell behind the event buffer") || !strings.HasSuffix(last.Error, "(5 batches kept)") {
		t.Errorf("last line: %q", last.Error)
	}
	got := 0
	for _, l := range lines[:len(lines)-1] {
		got += len(decodeLine(t, l).Events)
	}
	if got >= jobs {
		t.Errorf("the slow consumer got %d job events of %d before it was cut off", got, jobs)
	}
}

// A subscriber that reads nothing at all is cut off when a write has waited
// the write timeout, though it has not fallen behind the buffer.
func TestEventStreamStalledConsumerCutOff(t *testing.T) {
	ts := servertest.Start(t, eventConfig(1000, 0), func(c *server.Config) { c.EventWriteTimeout = 300 * time.Millisecond })
	_, resp := dialTiny(t, ts)
	const jobs = 80
	registerBig(t, ts, jobs)
	time.Sleep(time.Second)        // past the write timeout
	lines := readAll(t, resp.Body) // it ends: the server closed the connection
	got := 0
	for i, l := range lines {
		var b rawBatch
		if err := json.Unmarshal([]byte(l), &b); err != nil {
			if i == len(lines)-1 {
				break // the write the deadline cut short
			}
			t.Fatalf("line %d of %d (%d bytes) is not JSON: %v", i, len(lines), len(l), err)
		}
		if b.Error != "" {
			t.Errorf("a stalled consumer got a message it could not read: %q", b.Error)
		}
		got += len(b.Events)
	}
	if got >= jobs {
		t.Errorf("the stalled consumer got all %d job events: it was not cut off", got)
	}
}

// On a 3-server cluster a follower serves the stream from its own buffer,
// byte for byte what the leader serves: the events come from the entries
// both apply.
func TestEventStreamFollowerMatchesLeader(t *testing.T) {
	nodes := servertest.StartCluster(t, 3, eventConfig(1000, 0))
	leader := servertest.Leader(t, nodes)
	var follower *servertest.TestServer
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	fromLeader := openRaw(t, leader.URL, "topic=Job&topic=Evaluation&namespace=*", "")
	fromFollower := openRaw(t, follower.URL, "topic=Job&topic=Evaluation&namespace=*", "")
	mustOK := func(r *servertest.Response) {
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	mustOK(leader.Do(t, http.MethodPut, "/v1/namespace/other", `{"Name":"other"}`))
	for i, ns := range []string{"default", "other", "default"} {
		body := strings.Replace(jobSpec{count: 1}.body(), `"ID":"web"`, fmt.Sprintf(`"ID":"j%d","Namespace":%q`, i, ns), 1)
		mustOK(follower.Do(t, http.MethodPut, "/v1/jobs", body)) // forwarded to the leader
	}
	read := func(s *rawStream) []string {
		var out []string
		for {
			l, ok := s.next(t, 10*time.Second)
			if !ok {
				t.Fatal("stream ended")
			}
			if l == "{}" {
				continue
			}
			out = append(out, l)
			if strings.Contains(l, `"Key":"j2"`) {
				return out
			}
		}
	}
	a, b := read(fromLeader), read(fromFollower)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("leader:\n%s\nfollower:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if len(a) < 3 {
		t.Errorf("%d batches for 3 registrations", len(a))
	}
	for _, l := range a {
		bt := decodeLine(t, l)
		if len(bt.Events) == 0 || bt.Index == 0 {
			t.Errorf("batch %q", l)
		}
	}
}

// -event-buffer-size=-1 turns the stream off: 501 with a message.
func TestEventStreamOff(t *testing.T) {
	ts := servertest.Start(t, eventConfig(-1, 0))
	if ts.EventBuffer() != nil {
		t.Fatal("a buffer with the stream off")
	}
	r := ts.Do(t, http.MethodGet, "/v1/event/stream", "")
	if r.Status != http.StatusNotImplemented || r.Body != "The event stream is not served by this agent (its event buffer is off)" {
		t.Errorf("%d %q", r.Status, r.Body)
	}
}
