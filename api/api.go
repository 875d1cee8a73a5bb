// Package api is ctlplane's Go client: the JSON wire types of the HTTP API
// and a small client for it. Each endpoint family has its own file
// (api/<family>.go) built on Client.query and Client.write.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config configures a Client.
type Config struct {
	// Address is the HTTP API base URL, e.g. http://127.0.0.1:8500
	// (a bare host:port means http://).
	Address string
	// Token is sent as X-Service-Token ("" for none: the anonymous token).
	Token string
	// NodeSecret, a node's secret (its registration's answer), is sent as
	// NodeSecretHeader: a client agent's identity on the client protocol.
	NodeSecret string
	// HTTPClient sends the requests (default: a client with its own pooled
	// transport). Many clients of one server should share one.
	HTTPClient *http.Client
	// Msgpack speaks msgpack (MsgpackContentType) on the client protocol's
	// busiest calls, a node's allocation changes and its status reports,
	// as Nomad's clients speak msgpack to their servers; JSON otherwise.
	// A server before it answers the changes in JSON (read as well) but
	// refuses a msgpack report.
	Msgpack bool
}

// Client talks to one ctlplane server.
type Client struct {
	base       *url.URL
	token      string
	nodeSecret string
	http       *http.Client
	msgpack    bool
}

// NewClient returns a client for cfg.Address.
func NewClient(cfg Config) (*Client, error) {
	addr := strings.TrimSpace(cfg.Address)
	if addr == "" {
		addr = "http://127.0.0.1:8500"
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(strings.TrimRight(addr, "/"))
	if err != nil {
		return nil, fmt.Errorf("invalid address %q: %w", cfg.Address, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid address %q: the scheme must be http or https", cfg.Address)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &Client{base: u, token: cfg.Token, nodeSecret: cfg.NodeSecret, http: hc, msgpack: cfg.Msgpack}, nil
}

// AsNode is a copy of the client that presents a node's secret and no
// ACL token (a node's calls after its registration).
func (c *Client) AsNode(secret string) *Client {
	return &Client{base: c.base, nodeSecret: secret, http: c.http, msgpack: c.msgpack}
}

// WithNodeSecret is a copy of the client that also presents a node's
// secret (a re-registration: the token introduces a new node, the secret
// proves an existing one).
func (c *Client) WithNodeSecret(secret string) *Client {
	out := *c
	out.nodeSecret = secret
	return &out
}

// Address is the server's base URL.
func (c *Client) Address() string { return c.base.String() }

// Error is a response with a status other than 200: the status and the
// server's plain-text message.
type Error struct {
	StatusCode int
	Message    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("Unexpected response code: %d (%s)", e.StatusCode, e.Message)
}

// IsNotFound says whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// QueryOptions are the parameters of a read.
type QueryOptions struct {
	// WaitIndex makes the read block until the result's index passes it.
	WaitIndex uint64
	// WaitTime bounds the block (server default 5m).
	WaitTime time.Duration
	// AllowStale lets any server answer from its own state.
	AllowStale bool
	// Params are further query parameters (e.g. namespace, prefix).
	Params map[string]string
}

// QueryMeta is what a read reports besides its result.
type QueryMeta struct {
	// LastIndex is the index of the result (X-Service-Index).
	LastIndex   uint64
	KnownLeader bool
	LastContact time.Duration
}

// query GETs path into out.
func (c *Client) query(ctx context.Context, path string, q *QueryOptions, out any) (*QueryMeta, error) {
	return c.queryAs(ctx, path, q, out, false)
}

// queryAs is query, asking for a msgpack answer when msgpack is set (the
// answer is decoded as its Content-Type says).
func (c *Client) queryAs(ctx context.Context, path string, q *QueryOptions, out any, msgpack bool) (*QueryMeta, error) {
	params := url.Values{}
	if q != nil {
		if q.WaitIndex > 0 {
			params.Set("index", strconv.FormatUint(q.WaitIndex, 10))
		}
		if q.WaitTime > 0 {
			params.Set("wait", q.WaitTime.String())
		}
		for k, v := range q.Params {
			params.Set(k, v)
		}
	}
	raw := params.Encode()
	if q != nil && q.AllowStale {
		// A flag, without "=".
		raw = strings.TrimPrefix(raw+"&stale", "&")
	}
	accept := ""
	if msgpack {
		accept = MsgpackContentType
	}
	resp, err := c.send(ctx, http.MethodGet, path, raw, nil, "", accept)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	meta := &QueryMeta{}
	meta.LastIndex, _ = strconv.ParseUint(resp.Header.Get("X-Service-Index"), 10, 64)
	meta.KnownLeader = resp.Header.Get("X-Service-KnownLeader") == "true"
	if ms, err := strconv.ParseInt(resp.Header.Get("X-Service-LastContact"), 10, 64); err == nil {
		meta.LastContact = time.Duration(ms) * time.Millisecond
	}
	if err := decode(resp, out); err != nil {
		return nil, err
	}
	return meta, nil
}

// write sends in as the JSON body (nil: none) and decodes the answer into out (nil: discarded).
func (c *Client) write(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding the request: %w", err)
		}
		body = bytes.NewReader(buf)
	}
	// A query in path (e.g. "?purge=true") is sent as the query.
	path, rawQuery, _ := strings.Cut(path, "?")
	resp, err := c.do(ctx, method, path, rawQuery, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decode(resp, out)
}

// do sends a request (a body is JSON) and turns an answer other than 200 into *Error.
func (c *Client) do(ctx context.Context, method, path, rawQuery string, body io.Reader) (*http.Response, error) {
	return c.send(ctx, method, path, rawQuery, body, "application/json", "")
}

// send is do with the body's Content-Type and the Accept header ("": none).
func (c *Client) send(ctx context.Context, method, path, rawQuery string, body io.Reader, contentType, accept string) (*http.Response, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = rawQuery
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
		if b, ok := body.(*pooledBody); ok {
			req.ContentLength = int64(b.Len()) // NewRequest knows only its own readers
		}
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.token != "" {
		req.Header.Set("X-Service-Token", c.token)
	}
	if c.nodeSecret != "" {
		req.Header.Set(NodeSecretHeader, c.nodeSecret)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &Error{StatusCode: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
	}
	return resp, nil
}

func decode(resp *http.Response, out any) error {
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if resp.Header.Get("Content-Type") == MsgpackContentType {
		// Whole, then decoded: the codec reads a plain io.Reader a byte at a time.
		buf, err := ReadBody(resp.Body, resp.ContentLength)
		if err == nil {
			err = decodeMsgpackBytes(buf, out)
		}
		if err != nil {
			return fmt.Errorf("decoding the response: %w", err)
		}
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding the response: %w", err)
	}
	return nil
}
