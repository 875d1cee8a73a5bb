package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// apiClient is the HTTP client of the client subcommands.
type apiClient struct {
	address string
	token   string
	http    *http.Client
}

// clientFlags adds -address and -token to a command's flags.
func clientFlags(flags *flag.FlagSet) *apiClient {
	c := &apiClient{http: &http.Client{Timeout: 10 * time.Minute}}
	addr := os.Getenv("CTLPLANE_HTTP_ADDR")
	if addr == "" {
		addr = "http://127.0.0.1:8500"
	}
	flags.StringVar(&c.address, "address", addr, "HTTP address of a server (env CTLPLANE_HTTP_ADDR)")
	flags.StringVar(&c.token, "token", os.Getenv("CTLPLANE_TOKEN"), "ACL token (env CTLPLANE_TOKEN)")
	return c
}

// do sends a request and returns the response when its status is 200;
// any other status is an error carrying the server's message.
func (c *apiClient) do(method, path string, body io.Reader) (*http.Response, error) {
	req, err := c.newRequest(method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// newRequest builds a request to the server, with the token when there is one.
func (c *apiClient) newRequest(method, path string, body io.Reader) (*http.Request, error) {
	base := c.address
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequest(method, strings.TrimRight(base, "/")+path, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("X-Service-Token", c.token)
	}
	return req, nil
}
