package http

import (
	"net/http"
	"strings"
)

// Compatibility with the official Go clients lives here, and only here.
//
// github.com/hashicorp/consul/api reads X-Consul-* headers and
// github.com/hashicorp/nomad/api reads X-Nomad-*; without them the clients
// see index 0 and their blocking loops never block.

const servicePrefix = "X-Service-"

// headerPrefixes are the header name prefixes a response to r carries.
func headerPrefixes(r *http.Request) []string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/acl/"):
		return []string{servicePrefix, "X-Consul-"}
	case strings.HasPrefix(r.URL.Path, "/v1/deployment"), strings.HasPrefix(r.URL.Path, "/v1/job"),
		strings.HasPrefix(r.URL.Path, "/v1/evaluation"):
		return []string{servicePrefix, "X-Nomad-"}
	case strings.HasPrefix(r.URL.Path, "/v1/node"), strings.HasPrefix(r.URL.Path, "/v1/allocation"):
		return []string{servicePrefix, "X-Nomad-"}
	}
	return []string{servicePrefix}
}

// compatToken is the token the official clients send: X-Consul-Token
// (consul/api) or X-Nomad-Token (nomad/api).
func compatToken(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get("X-Consul-Token")); t != "" {
		return t
	}
	return strings.TrimSpace(r.Header.Get("X-Nomad-Token"))
}
