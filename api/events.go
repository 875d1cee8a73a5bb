package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Event is one event of GET /v1/event/stream; Payload holds the object
// under its name (e.g. "Deployment") as raw JSON.
type Event struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Payload    map[string]json.RawMessage
}

// EventBatch is one line of the stream: the events of one Raft entry.
type EventBatch struct {
	Index  uint64
	Events []Event
}

// EventStream reads an open event stream.
type EventStream struct {
	// Truncated: the index asked for had left the server's buffer, so the
	// stream starts later and some events were never sent.
	Truncated bool
	body      io.ReadCloser
	sc        *bufio.Scanner
}

// EventStream opens GET /v1/event/stream with params (topic, namespace,
// index). The stream lives as long as ctx; Close it when done.
func (c *Client) EventStream(ctx context.Context, params url.Values) (*EventStream, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/event/stream", params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &EventStream{body: resp.Body, sc: sc, Truncated: resp.Header.Get("X-Service-Event-Truncated") == "true"}, nil
}

// Next returns the next batch, skipping heartbeats; the server's reason
// when it ended the stream is the error.
func (s *EventStream) Next() (*EventBatch, error) {
	for s.sc.Scan() {
		var line struct {
			EventBatch
			Error string
		}
		if err := json.Unmarshal(s.sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("event stream: a line is not JSON: %w", err)
		}
		if line.Error != "" {
			return nil, fmt.Errorf("event stream ended by the server: %s", line.Error)
		}
		if line.Index == 0 && len(line.Events) == 0 {
			continue // heartbeat
		}
		return &line.EventBatch, nil
	}
	if err := s.sc.Err(); err != nil {
		return nil, fmt.Errorf("event stream: %w", err)
	}
	return nil, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
