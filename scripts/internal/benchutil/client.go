// Package benchutil holds what the benchmark tools under scripts/ share:
// building the ctlplane binary, running agents as subprocesses, an HTTP
// client, and percentile summaries.
package benchutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"
)

// Client talks HTTP/1.1 to one server, one connection per concurrent request.
type Client struct {
	Base  string // e.g. http://127.0.0.1:8500
	Token string // ACL token, sent if not ""
	// TokenHeader carries Token: X-Service-Token when "" (Consul reads
	// ConsulTokenHeader).
	TokenHeader string
	Transport   *http.Transport
	hc          *http.Client
}

// NewClient returns a client of the server at base that keeps up to
// maxConns idle connections.
func NewClient(base string, maxConns int) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     0, // no limit
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Client{Base: strings.TrimRight(base, "/"), Transport: tr, hc: &http.Client{Transport: tr}}
}

// Response is what a call returned. A transport failure is Err; any status
// but 200 is an error for the callers' counts.
type Response struct {
	Status int
	Index  uint64 // X-Service-Index, 0 when absent
	Body   []byte
	Err    error
}

// Failure describes why r is not a success, "" when it is one.
func (r Response) Failure() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	if r.Status != http.StatusOK {
		return fmt.Sprintf("HTTP %d: %s", r.Status, Truncate(string(r.Body), 120))
	}
	return ""
}

// Do sends one request and reads the whole response. wrote, when not nil,
// is called once the request has been written to the connection.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, wrote func()) Response {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return Response{Err: err}
	}
	if c.Token != "" {
		h := c.TokenHeader
		if h == "" {
			h = "X-Service-Token"
		}
		req.Header.Set(h, c.Token)
	}
	if wrote != nil {
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote() },
		}))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return Response{Err: err}
	}
	defer resp.Body.Close()
	out := Response{Status: resp.StatusCode}
	out.Body, out.Err = io.ReadAll(resp.Body)
	if v := resp.Header.Get("X-Service-Index"); v != "" {
		out.Index, _ = strconv.ParseUint(v, 10, 64)
	}
	return out
}

// Get is Do of a GET bounded by timeout.
func (c *Client) Get(ctx context.Context, path string, timeout time.Duration) Response {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Do(ctx, http.MethodGet, path, nil, nil)
}

// WaitReady polls the list endpoint until the server answers it with 200
// (it answers 503 until there is a leader with its state caught up). It
// gives up after timeout, when ctx ends, or when exited closes.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		r := c.Get(ctx, "/v1/acl/binding-rules?authmethod=bench-ready", 2*time.Second)
		if last = r.Failure(); last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return errors.New("the server exited before it was ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("server at %s not ready after %s: %s", c.Base, timeout, last)
}

// Truncate trims s and cuts it to n bytes, marking the cut.
func Truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
