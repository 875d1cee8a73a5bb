package http

import (
	"net/http"
	"regexp"

	"github.com/ctlplane/ctlplane/state"
)

var namespaceRE = regexp.MustCompile(`^[a-zA-Z0-9\-_]{1,64}$`)

// resolveNamespace picks the namespace of a request: the body's, then the
// ns query parameter, then the X-Service-Namespace header, then the token's,
// then default. allowAll admits the list wildcard "*".
func resolveNamespace(r *http.Request, body string, id *identity, allowAll bool) (string, error) {
	ns := body
	if ns == "" {
		ns, _ = queryLookup(r.URL.RawQuery, "ns")
	}
	if ns == "" {
		ns = r.Header.Get(servicePrefix + "Namespace")
	}
	if ns == "" {
		ns = id.namespace()
	}
	if ns == "" {
		return state.DefaultNamespace, nil
	}
	if ns == state.AllNamespaces && allowAll {
		return ns, nil
	}
	if !namespaceRE.MatchString(ns) {
		return "", badRequest("Invalid namespace %q: a namespace name is 1 to 64 letters, digits, '-' or '_'", ns)
	}
	return ns, nil
}
