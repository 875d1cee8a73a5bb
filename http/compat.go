package http

import (
	"net/http"
	"strconv"
	"strings"
)

// Compatibility with the official Go clients lives here, and only here.
//
// github.com/hashicorp/consul/api reads X-Consul-* headers and
// github.com/hashicorp/nomad/api reads X-Nomad-*; without them the clients
// see index 0 and their blocking loops never block.

const servicePrefix = "X-Service-"

// headerFamily says whose clients read a response: ours only, or Consul's
// or Nomad's official clients too.
type headerFamily int

const (
	serviceHeaders headerFamily = iota
	consulHeaders
	nomadHeaders
)

func headerFamilyOf(r *http.Request) headerFamily {
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/acl/"):
		return consulHeaders
	case strings.HasPrefix(r.URL.Path, "/v1/deployment"), strings.HasPrefix(r.URL.Path, "/v1/job"),
		strings.HasPrefix(r.URL.Path, "/v1/evaluation"),
		strings.HasPrefix(r.URL.Path, "/v1/node"), strings.HasPrefix(r.URL.Path, "/v1/allocation"),
		strings.HasPrefix(r.URL.Path, "/v1/namespace"), strings.HasPrefix(r.URL.Path, "/v1/search"),
		strings.HasPrefix(r.URL.Path, "/v1/service"), strings.HasPrefix(r.URL.Path, "/v1/client/allocation/"):
		return nomadHeaders
	}
	return serviceHeaders
}

// familyPrefixes are each family's header name prefixes, shared by every
// response (callers only read them).
var familyPrefixes = [...][]string{
	serviceHeaders: {servicePrefix},
	consulHeaders:  {servicePrefix, "X-Consul-"},
	nomadHeaders:   {servicePrefix, "X-Nomad-"},
}

// familyMetaNames are the read-meta header names (index, known leader, last
// contact) under each of a family's prefixes, in canonical form, so that
// setting them needs no canonicalization.
var familyMetaNames = func() (out [len(familyPrefixes)][][3]string) {
	for f, prefixes := range familyPrefixes {
		for _, p := range prefixes {
			out[f] = append(out[f], [3]string{p + "Index", p + "Knownleader", p + "Lastcontact"})
		}
	}
	return out
}()

// headerPrefixes are the header name prefixes a response to r carries.
func headerPrefixes(r *http.Request) []string { return familyPrefixes[headerFamilyOf(r)] }

// metaHeaderNames are the read-meta header names a response to r carries.
func metaHeaderNames(r *http.Request) [][3]string { return familyMetaNames[headerFamilyOf(r)] }

// setWriteIndex sends a write's Raft index under every header prefix the
// path's clients read.
func setWriteIndex(w http.ResponseWriter, r *http.Request, index uint64) {
	v := strconv.FormatUint(index, 10)
	for _, prefix := range headerPrefixes(r) {
		w.Header().Set(prefix+"Index", v)
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
