package agent_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	consulapi "github.com/hashicorp/consul/api"
	nomadapi "github.com/hashicorp/nomad/api"
)

// send makes one request with a chosen Host and headers (name, value pairs).
func send(t *testing.T, method, rawURL, host, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	buf, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(buf)
}

// Issue 15, finding 4: a web page on another site cannot make a dev agent
// (ACLs off, raw_exec on) run a command, neither by a cross-site form-like
// POST nor through DNS rebinding; same-origin and non-browser clients work.
func TestCrossSiteWritesRefused(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	marker := filepath.Join(t.TempDir(), "pwned")
	job := `{"Job":{"ID":"evil","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"raw_exec",` +
		`"Config":{"command":"/bin/sh","args":["-c","touch ` + marker + `"]}}]}]}}`

	// A browser's cross-site "simple" request: text/plain needs no preflight.
	status, body := send(t, http.MethodPost, ts.URL+"/v1/jobs", "", job,
		"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain")
	if status != http.StatusForbidden || !strings.Contains(body, "Cross-origin request refused: cross-origin request detected from Sec-Fetch-Site header") {
		t.Fatalf("cross-site POST: %d %q, want 403 naming the cross-origin request", status, body)
	}
	// An older browser sends only Origin.
	status, body = send(t, http.MethodPut, ts.URL+"/v1/jobs", "", job, "Origin", "http://evil.example", "Content-Type", "text/plain")
	if status != http.StatusForbidden || !strings.Contains(body, "Origin does not match Host") {
		t.Fatalf("cross-origin PUT with Origin only: %d %q", status, body)
	}
	// DNS rebinding: evil.example resolves to 127.0.0.1, so the page is
	// same-origin for the browser, but its Host gives it away.
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		status, body = send(t, method, ts.URL+"/v1/jobs", "evil.example:"+port(t, ts.URL), job, "Sec-Fetch-Site", "same-origin")
		if status != http.StatusForbidden || !strings.Contains(body, `Host "evil.example:`) || !strings.Contains(body, "DNS rebinding") {
			t.Fatalf("%s with Host evil.example: %d %q", method, status, body)
		}
	}
	if status, body = send(t, http.MethodGet, ts.URL+"/v1/job/evil", "", ""); status != http.StatusNotFound {
		t.Fatalf("the refused job exists: %d %q", status, body)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the refused job's command ran: %v", err)
	}

	// Same origin (the agent's own page, if it had one), and loopback names.
	same := strings.Replace(job, `"evil"`, `"same"`, 1)
	same = strings.Replace(same, "touch "+marker, "true", 1)
	status, body = send(t, http.MethodPost, ts.URL+"/v1/jobs", "localhost:"+port(t, ts.URL), same,
		"Origin", "http://localhost:"+port(t, ts.URL), "Content-Type", "application/json")
	if status != http.StatusOK {
		t.Fatalf("same-origin POST: %d %q", status, body)
	}
	for _, h := range []string{"127.0.0.1", "127.1.2.3:80", "LOCALHOST", "[::1]:8500"} {
		if status, body = send(t, http.MethodGet, ts.URL+"/v1/job/same", h, ""); status != http.StatusOK {
			t.Errorf("Host %s: %d %q", h, status, body)
		}
	}

	// The official clients, unmodified.
	ncfg := nomadapi.DefaultConfig()
	ncfg.Address = ts.URL
	nc, err := nomadapi.NewClient(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	nj := nomadapi.NewServiceJob("official", "official", "global", 50)
	nj.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("web", 1)
	tg.AddTask(nomadapi.NewTask("app", "mock_driver").SetConfig("run_for", "1h"))
	nj.AddTaskGroup(tg)
	if _, _, err := nc.Jobs().Register(nj, nil); err != nil {
		t.Fatalf("nomad/api register: %v", err)
	}
	if _, _, err := nc.Jobs().Info("official", nil); err != nil {
		t.Fatalf("nomad/api info: %v", err)
	}
	ccfg := consulapi.DefaultConfig()
	ccfg.Address = strings.TrimPrefix(ts.URL, "http://")
	cc, err := consulapi.NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	rule, _, err := cc.ACL().BindingRuleCreate(&consulapi.ACLBindingRule{AuthMethod: "m", BindType: consulapi.BindingRuleBindTypeService, BindName: "web"}, nil)
	if err != nil || rule.ID == "" {
		t.Fatalf("consul/api binding rule create: %v %+v", err, rule)
	}
	if _, err := cc.ACL().BindingRuleDelete(rule.ID, nil); err != nil {
		t.Fatalf("consul/api binding rule delete: %v", err)
	}
}

func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// A refused request is answered at once and its connection closed: the
// rest of its body is not waited for.
func TestRefusedHostClosesConnection(t *testing.T) {
	ts := servertest.Start(t)
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/jobs HTTP/1.1\r\nHost: evil.example\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n{")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `Host "evil.example" refused`) || !resp.Close {
		t.Fatalf("refused Host: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	start := time.Now()
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF || time.Since(start) > 2*time.Second {
		t.Fatalf("the connection stays open after the refusal (%d, %v after %v)", n, err, time.Since(start))
	}
}
