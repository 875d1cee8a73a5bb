package webguard_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctlplane/ctlplane/api/webguard"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:8500": true, "127.0.0.1": true, "127.0.0.1:0": true, "127.255.1.2:80": true,
		"[::1]": true, "[::1]:8500": true, "::1": true,
		"": false, "evil.example": false, "evil.example:8500": false, "localhost.evil.example": false,
		"0.0.0.0:8500": false, "10.0.0.1:8500": false, "[::]:8500": false, "128.0.0.1": false, ":8500": false,
		"[::ffff:127.0.0.1]:1": true, "127.0.0.1.evil.example": false,
	} {
		if got := webguard.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// Wrap: which requests reach the handler, and what the refused get.
func TestWrap(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8500}
	wild := &net.TCPAddr{IP: net.IPv4zero, Port: 8600}
	h := webguard.Wrap(next, webguard.LoopbackAddrs(loop, wild))
	for _, c := range []struct {
		name, method, host string
		local              net.Addr
		headers            map[string]string
		status             int
		body               string
	}{
		{"CLI write", "PUT", "127.0.0.1:8500", loop, nil, http.StatusTeapot, ""},
		{"cross-site GET", "GET", "127.0.0.1:8500", loop, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, http.StatusTeapot, ""},
		{"cross-site POST", "POST", "127.0.0.1:8500", loop, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden,
			"Cross-origin request refused: cross-origin request detected from Sec-Fetch-Site header; a web page from another site may not send POST requests to this API\n"},
		{"same-site DELETE", "DELETE", "127.0.0.1:8500", loop, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden, ""},
		{"same-origin POST", "POST", "127.0.0.1:8500", loop, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusTeapot, ""},
		{"Origin matching Host", "POST", "localhost:8500", loop, map[string]string{"Origin": "http://localhost:8500"}, http.StatusTeapot, ""},
		{"rebinding GET", "GET", "evil.example:8500", loop, nil, http.StatusForbidden,
			`Host "evil.example:8500" refused: this agent listens on a loopback address and answers only requests for localhost, 127.0.0.0/8 or [::1] (DNS rebinding protection)` + "\n"},
		{"any name on a wildcard listener", "GET", "ctl.example.com:8600", wild, nil, http.StatusTeapot, ""},
		{"a loopback connection to a wildcard listener", "GET", "myhost:8600", &net.TCPAddr{IP: net.IPv4(127, 0, 1, 1), Port: 8600}, nil, http.StatusTeapot, ""},
	} {
		r := httptest.NewRequest(c.method, "http://"+c.host+"/v1/jobs", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, c.local))
		for k, v := range c.headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status || (c.body != "" && w.Body.String() != c.body) {
			t.Errorf("%s: %d %q, want %d %q", c.name, w.Code, w.Body.String(), c.status, c.body)
		}
		if w.Code == http.StatusForbidden && (w.Header().Get("Connection") != "close" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8") {
			t.Errorf("%s: refusal headers %v", c.name, w.Header())
		}
	}
}
