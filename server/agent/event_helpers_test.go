package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// eventConfig sets the event stream's buffer size and heartbeat.
func eventConfig(size int, heartbeat time.Duration) servertest.Option {
	return func(c *server.Config) {
		c.EventBufferSize = size
		c.EventHeartbeat = heartbeat
	}
}

// nomadEvents is the unmodified Nomad client pointed at ts.
func nomadEvents(t *testing.T, ts *servertest.TestServer, token string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = ts.URL
	cfg.SecretID = token
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collector gathers what api.EventStream delivers.
type collector struct {
	mu     sync.Mutex
	events []api.Event
	err    error
	done   chan struct{}
}

func collect(t *testing.T, c *api.Client, topics map[api.Topic][]string, index uint64, q *api.QueryOptions) *collector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := c.EventStream().Stream(ctx, topics, index, q)
	if err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	col := &collector{done: make(chan struct{})}
	go func() {
		defer close(col.done)
		for evs := range ch {
			col.mu.Lock()
			if evs.Err != nil {
				col.err = evs.Err
				col.mu.Unlock()
				return
			}
			for _, e := range evs.Events {
				if e.Index != evs.Index {
					col.err = fmt.Errorf("event at index %d in the batch of index %d", e.Index, evs.Index)
				}
			}
			col.events = append(col.events, evs.Events...)
			col.mu.Unlock()
		}
	}()
	return col
}

// snapshot returns the events so far.
func (c *collector) snapshot() []api.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]api.Event(nil), c.events...)
}

// waitFor waits until some event satisfies cond and returns all so far.
func (c *collector) waitFor(t *testing.T, what string, cond func(api.Event) bool) []api.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs := c.snapshot()
		for _, e := range evs {
			if cond(e) {
				return evs
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no event %s; got %s", what, summary(c.snapshot()))
	return nil
}

func summary(evs []api.Event) string {
	out := ""
	for _, e := range evs {
		out += fmt.Sprintf("\n  %d %s %s %s", e.Index, e.Topic, e.Type, e.Key)
	}
	return out
}

// rawStream reads GET /v1/event/stream line by line.
type rawStream struct {
	resp  *http.Response
	lines chan string
}

func openRaw(t *testing.T, url, query, token string) *rawStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/v1/event/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &rawStream{resp: resp, lines: make(chan string, 1000)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	return s
}

// next returns the next line, or fails after d ("" and false at the end).
func (s *rawStream) next(t *testing.T, d time.Duration) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		return l, ok
	case <-time.After(d):
		t.Fatalf("no line within %v", d)
		return "", false
	}
}

// rawBatch is one line of the stream.
type rawBatch struct {
	Index  uint64
	Events []struct {
		Topic, Type, Key, Namespace string
		FilterKeys                  []string
		Index                       uint64
		Payload                     map[string]json.RawMessage
	}
	Error string
}

func decodeLine(t *testing.T, line string) rawBatch {
	t.Helper()
	var b rawBatch
	if err := json.Unmarshal([]byte(line), &b); err != nil {
		t.Fatalf("line %.200q (%d bytes): %v", line, len(line), err)
	}
	return b
}
