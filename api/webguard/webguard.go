// Package webguard keeps web browsers from using an agent's HTTP API on
// behalf of a page from another site: it refuses cross-origin unsafe
// requests (Go's net/http.CrossOriginProtection, from Sec-Fetch-Site and
// Origin) and, on a loopback listener, any Host that is not a loopback name
// (DNS rebinding: a page whose name resolves to 127.0.0.1 is same-origin
// for the browser, but still sends its own Host). Non-browser clients send
// neither header and a loopback Host, and are unaffected.
package webguard

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Wrap guards next. loopbackListener says whether the listener a request
// arrived on is bound to a loopback address (nil: never); only those
// requests get the Host check, since a wildcard or public listener is
// reached under any name.
func Wrap(next http.Handler, loopbackListener func(r *http.Request) bool) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopbackListener != nil && loopbackListener(r) && !LoopbackHost(r.Host) {
			plain(w, http.StatusForbidden, fmt.Sprintf("Host %q refused: this agent listens on a loopback address and answers only requests for localhost, 127.0.0.0/8 or [::1] (DNS rebinding protection)", truncate(r.Host)))
			return
		}
		if err := cop.Check(r); err != nil {
			plain(w, http.StatusForbidden, fmt.Sprintf("Cross-origin request refused: %v; a web page from another site may not send %s requests to this API", err, r.Method))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHost says whether host (a Host header or a host:port address)
// names this machine's loopback interface: localhost, 127.0.0.0/8 or ::1,
// with any port.
func LoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	} else {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// LoopbackAddrs returns a check for Wrap that matches requests whose
// connection's local address is one of these listener addresses, keeping
// those bound to a loopback IP.
func LoopbackAddrs(addrs ...net.Addr) func(r *http.Request) bool {
	set := map[string]bool{}
	for _, a := range addrs {
		if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
			set[ta.String()] = true
		}
	}
	return func(r *http.Request) bool {
		local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		return ok && set[local.String()]
	}
}

// plain answers a refusal and closes the connection: net/http would
// otherwise read the rest of the refused request's body first, as slowly as
// the client sends it.
func plain(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
	// ErrNotSupported (a connection without deadlines) leaves the body
	// deadline in charge.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// truncate keeps an echoed header short.
func truncate(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}
