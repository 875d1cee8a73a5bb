package client

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// TestCheckProbe: the client's checks against a real listener give
// Nomad's results: HTTP 200 "nomad: http ok", another 2xx/3xx success with
// the body as output, 4xx/5xx failure with the body (cut at 3 KiB), the
// method, headers (Host included) and body sent; a timeout fails; TCP
// "nomad: tcp ok" or the dial error; an unknown port label fails.
func TestCheckProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(200)
		case "/created":
			w.WriteHeader(201)
			_, _ = w.Write([]byte("made"))
		case "/big":
			w.WriteHeader(500)
			_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
		case "/echo":
			if r.Method != http.MethodPost || strings.Join(r.Header.Values("X-Probe"), ",") != "a,b" ||
				r.Host != "svc.local" || string(body) != "ping" || r.URL.RawQuery != "q=1" {
				w.WriteHeader(418)
				return
			}
			w.WriteHeader(200)
		case "/slow":
			time.Sleep(1500 * time.Millisecond)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	probe := func(c *api.ServiceCheck, addr string) *api.CheckResult {
		if c.Timeout == 0 {
			c.Timeout = time.Second
		}
		cr := &checkRunner{def: c, id: "id1", group: "g", task: "t", service: "web", addr: addr, addrErr: `invalid port "nope": port label not found`}
		return cr.probe()
	}
	cases := []struct {
		check        *api.ServiceCheck
		addr         string
		status       string
		code         int
		output, mode string
	}{
		{&api.ServiceCheck{Name: "c", Type: "http", Path: "/ok"}, addr, "success", 200, "nomad: http ok", "healthiness"},
		{&api.ServiceCheck{Name: "c", Type: "http", Path: "/created", OnUpdate: "ignore"}, addr, "success", 201, "made", "readiness"},
		{&api.ServiceCheck{Name: "c", Type: "http", Path: "/missing"}, addr, "failure", 404, "404 page not found\n", "healthiness"},
		{&api.ServiceCheck{Name: "c", Type: "http", Path: "/big"}, addr, "failure", 500, strings.Repeat("x", 3*1024), "healthiness"},
		{&api.ServiceCheck{Name: "c", Type: "http", Path: "/echo?q=1", Method: "POST", Body: "ping",
			Header: map[string][]string{"X-Probe": {"a", "b"}, "Host": {"svc.local"}}}, addr, "success", 200, "nomad: http ok", "healthiness"},
		{&api.ServiceCheck{Name: "c", Type: "tcp"}, addr, "success", 0, "nomad: tcp ok", "healthiness"},
		{&api.ServiceCheck{Name: "c", Type: "tcp"}, "", "failure", 0, `invalid port "nope": port label not found`, "healthiness"},
	}
	for _, c := range cases {
		res := probe(c.check, c.addr)
		if res.Status != c.status || res.StatusCode != c.code || res.Output != c.output || res.Mode != c.mode ||
			res.ID != "id1" || res.Check != "c" || res.Group != "g" || res.Task != "t" || res.Service != "web" || res.Timestamp == 0 {
			t.Errorf("%s %s: %+v", c.check.Type, c.check.Path, res)
		}
	}
	// A check past its timeout fails; so does a port nothing listens on.
	if res := probe(&api.ServiceCheck{Name: "c", Type: "http", Path: "/slow"}, addr); res.Status != "failure" ||
		!strings.HasPrefix(res.Output, "nomad: ") || !strings.Contains(res.Output, "deadline exceeded") {
		t.Errorf("slow: %+v", res)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if res := probe(&api.ServiceCheck{Name: "c", Type: "tcp"}, closed); res.Status != "failure" || !strings.Contains(res.Output, "connection refused") {
		t.Errorf("closed port: %+v", res)
	}
}
