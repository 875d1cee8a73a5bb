package main

import (
	"crypto/tls"
	"crypto/x509"
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
	// TLS: the CA to verify the server with (default: the system's) and a
	// client certificate to present.
	caFile, certFile, keyFile string

	client *http.Client
}

// clientFlags adds -address, -token and the TLS options to a command's flags.
func clientFlags(flags *flag.FlagSet) *apiClient {
	c := &apiClient{}
	// Nomad's variables are accepted too, so that a Nomad user's shell works.
	addr := firstEnv("CTLPLANE_HTTP_ADDR", "NOMAD_ADDR")
	if addr == "" {
		addr = "http://127.0.0.1:8500"
	}
	flags.StringVar(&c.address, "address", addr, "HTTP address of a server, http://host:port or https://host:port (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR)")
	flags.StringVar(&c.token, "token", firstEnv("CTLPLANE_TOKEN", "NOMAD_TOKEN"), "ACL token (env CTLPLANE_TOKEN, then NOMAD_TOKEN)")
	flags.StringVar(&c.caFile, "ca-file", os.Getenv("CTLPLANE_CACERT"), "CA certificate to verify an HTTPS server with (env CTLPLANE_CACERT)")
	flags.StringVar(&c.certFile, "client-cert", os.Getenv("CTLPLANE_CLIENT_CERT"), "client certificate to present over HTTPS (env CTLPLANE_CLIENT_CERT)")
	flags.StringVar(&c.keyFile, "client-key", os.Getenv("CTLPLANE_CLIENT_KEY"), "key of -client-cert (env CTLPLANE_CLIENT_KEY)")
	return c
}

// firstEnv is the first of the variables that is set and not empty.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// http is the HTTP client, built at first use (after the flags are parsed).
func (c *apiClient) http() (*http.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		buf, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("failed to read the CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(buf) {
			return nil, fmt.Errorf("the CA file %s holds no PEM certificate", c.caFile)
		}
		conf.RootCAs = pool
	}
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, fmt.Errorf("-client-cert and -client-key go together")
	}
	if c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("failed to load the client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = conf
	c.client = &http.Client{Timeout: 10 * time.Minute, Transport: tr}
	return c.client, nil
}

// send sends a request with the client's TLS settings.
func (c *apiClient) send(req *http.Request) (*http.Response, error) {
	hc, err := c.http()
	if err != nil {
		return nil, err
	}
	return hc.Do(req)
}

// do sends a request and returns the response when its status is 200;
// any other status is an error carrying the server's message.
func (c *apiClient) do(method, path string, body io.Reader) (*http.Response, error) {
	req, err := c.newRequest(method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
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
