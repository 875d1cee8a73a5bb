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
		return consulPrefixes
	case strings.HasPrefix(r.URL.Path, "/v1/deployment"), strings.HasPrefix(r.URL.Path, "/v1/job"),
		strings.HasPrefix(r.URL.Path, "/v1/evaluation"),
		strings.HasPrefix(r.URL.Path, "/v1/node"), strings.HasPrefix(r.URL.Path, "/v1/allocation"),
		strings.HasPrefix(r.URL.Path, "/v1/namespace"), strings.HasPrefix(r.URL.Path, "/v1/search"),
		strings.HasPrefix(r.URL.Path, "/v1/service"), strings.HasPrefix(r.URL.Path, "/v1/client/allocation/"):
		return nomadPrefixes
	}
	return servicePrefixes
}

// The prefix lists, shared by every response (callers only read them).
var (
	servicePrefixes = []string{servicePrefix}
	consulPrefixes  = []string{servicePrefix, "X-Consul-"}
	nomadPrefixes   = []string{servicePrefix, "X-Nomad-"}
)

// metaHeaderNames are the read-meta header names under each prefix, in
// canonical form, so that setting them needs no canonicalization.
var metaHeaderNames = map[string][3]string{}

func init() {
	for _, p := range []string{servicePrefix, "X-Consul-", "X-Nomad-"} {
		metaHeaderNames[p] = [3]string{p + "Index", p + "Knownleader", p + "Lastcontact"}
	}
}

// compatToken is the token the official clients send: X-Consul-Token
// (consul/api) or X-Nomad-Token (nomad/api).
func compatToken(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get("X-Consul-Token")); t != "" {
		return t
	}
	return strings.TrimSpace(r.Header.Get("X-Nomad-Token"))
}
