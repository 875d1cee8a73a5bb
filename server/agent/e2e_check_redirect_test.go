package agent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// redirectServer is a task's HTTP server: /away redirects to another
// address, /same to /ok on itself.
const redirectServer = `import http.server, sys
other = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(s):
        if s.path == '/away':
            s.send_response(302); s.send_header('Location', 'http://' + other + '/stolen'); s.end_headers()
        elif s.path == '/same':
            s.send_response(302); s.send_header('Location', '/ok'); s.end_headers()
        elif s.path == '/ok':
            s.send_response(200); s.end_headers(); s.wfile.write(b'fine')
        else:
            s.send_response(404); s.end_headers()
    def log_message(s, *a):
        pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
`

// Issue 31, finding 6: a client's HTTP check follows a redirect on the
// checked host and port, never one to another address: the 302 itself is
// the result (passing, as a 3xx is in Nomad) and the other address is
// never called.
func TestCheckRedirectStaysOnTheTask(t *testing.T) {
	python := python3Path(t)
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		_, _ = w.Write([]byte("secret of another address"))
	}))
	defer other.Close()
	ts := devAgent(t)
	nc := nomadClient(t, ts.URL)
	argv, _ := json.Marshal([]string{"-c", redirectServer, "${NOMAD_PORT_http}", strings.TrimPrefix(other.URL, "http://")})
	job := fmt.Sprintf(`{"Job":{"ID":"web","Datacenters":["dc1"],`+
		`"TaskGroups":[{"Name":"web","Count":1,"Networks":[{"DynamicPorts":[{"Label":"http"}]}],`+
		`"Services":[{"Name":"web","PortLabel":"http","Provider":"nomad","Checks":[`+
		`{"Name":"away","Type":"http","Path":"/away","Interval":1000000000,"Timeout":1000000000},`+
		`{"Name":"same","Type":"http","Path":"/same","Interval":1000000000,"Timeout":1000000000}]}],`+
		`"Tasks":[{"Name":"srv","Driver":"raw_exec","KillTimeout":1000000000,"Config":{"command":%q,"args":%s}}]}]}}`, python, argv)
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", job); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	t.Cleanup(func() { ts.Do(t, http.MethodDelete, "/v1/job/web?purge=true", "") })

	var results map[string]string
	waitFor(t, "both checks to have run against the task", 30*time.Second, func() bool {
		as := allocs(t, ts)
		if len(as) != 1 {
			return false
		}
		checks, err := nc.Allocations().Checks(as[0].ID, nil)
		if err != nil {
			t.Fatalf("Allocations().Checks: %v", err)
		}
		results = map[string]string{}
		for _, c := range checks {
			if c.StatusCode != 0 {
				results[c.Check] = fmt.Sprintf("%s %d %q", c.Status, c.StatusCode, c.Output)
			}
		}
		return len(results) == 2
	})
	want := map[string]string{
		"away": `success 302 ""`, // not followed: the task's own answer
		"same": `success 200 "nomad: http ok"`,
	}
	for name, w := range want {
		if results[name] != w {
			t.Errorf("check %s: %s, want %s", name, results[name], w)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the check followed the redirect to another address %d times", n)
	}
}
