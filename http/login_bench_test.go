package http_test

// Throughput benchmarks over real HTTP against real servers:
//
//	go test -run '^$' -bench 'BenchmarkLogin|BenchmarkCreateACL' -benchtime 5s ./http/
//
// BenchmarkLogin posts /v1/acl/login (validate a JWT, evaluate 10 binding
// rules, mint a token through Raft). BenchmarkCreateACL creates binding rules
// on a persistent node (bbolt Raft log), with access control on and off.

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
)

// benchParallelism is goroutines per GOMAXPROCS in RunParallel: requests
// mostly wait on a Raft commit, so more of them than CPUs are in flight.
const benchParallelism = 8

// benchClient is an HTTP client that keeps a connection per goroutine.
func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// benchPost sends body to path and drains the answer; it returns the status
// and, unless it is 200, the body.
func benchPost(c *http.Client, method, url, body string, headers ...string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(buf), nil
	}
	return resp.StatusCode, "", nil
}

// runParallelPosts sends the same request b.N times from RunParallel
// goroutines, failing on anything but 200, and reports ops/s under unit.
func runParallelPosts(b *testing.B, method, url, body, unit string, headers ...string) {
	b.Helper()
	c := benchClient()
	defer c.CloseIdleConnections()
	var failed atomic.Bool
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			status, msg, err := benchPost(c, method, url, body, headers...)
			if err != nil || status != http.StatusOK {
				// b.Fatal belongs to the benchmark's goroutine: report
				// here, stop this worker, and fail below.
				if !failed.Swap(true) {
					b.Errorf("%s %s: status %d %q, error %v", method, url, status, msg, err)
				}
				return
			}
		}
	})
	b.StopTimer()
	if failed.Load() {
		b.Fatalf("%s %s did not answer 200 every time", method, url)
	}
	if secs := b.Elapsed().Seconds(); secs > 0 {
		b.ReportMetric(float64(b.N)/secs, unit)
	}
}

// loginBenchRules are the method's 10 binding rules: for the benchmark's
// JWT (sub Web-Frontend, team Payments, region EU, groups dev and admin)
// six selectors match, and one of those names a role that does not exist.
var loginBenchRules = []struct{ selector, bindType, bindName string }{
	{`value.team == "Payments"`, "service", "svc-${value.name}"},
	{`value.team == "Infra"`, "service", "infra-${value.name}"},
	{`"dev" in list.groups`, "service", "dev-${value.team}"},
	{``, "service", "all-${value.name}"},
	{`value.region == "EU"`, "node", "node-${value.name}"},
	{`value.region == "US"`, "node", "us-${value.name}"},
	{`value.name matches "^db-"`, "node", "db-${value.name}"},
	{`"admin" in list.groups`, "role", "payments-readers"},
	{`"ops" in list.groups`, "role", "ops"},
	{`value.team == "Payments" and value.region == "EU"`, "role", "eu-payments"},
}

func BenchmarkLogin(b *testing.B) {
	s := &lgServer{servertest.Start(b, servertest.ACL(lgMgmt))}
	waitACLReady(b, s.TestServer, lgMgmt)
	key := newLgKey(b, jose.RS256)
	s.mustAdmin(b, "PUT", methodPath, methodBody(b, "bench-jwt", `,"MaxTokenTTL":"1h"`, key))
	s.mustAdmin(b, "PUT", policyPath, `{"Name":"readers","Rules":"acl = \"read\""}`)
	s.mustAdmin(b, "PUT", rolePath, `{"Name":"payments-readers","Policies":[{"Name":"readers"}]}`)
	for _, r := range loginBenchRules {
		s.addRule(b, "bench-jwt", r.selector, r.bindType, r.bindName)
	}
	// One JWT, valid for the whole run, signed before the clock starts.
	c := claims(map[string]any{"exp": time.Now().Add(time.Hour).Unix()})
	body := loginBody("bench-jwt", key.sign(b, c))

	// The login binds what the rules say it should.
	var tok loginToken
	s.Do(b, "POST", loginPath, body).JSON(b, &tok)
	var services, nodes, roles []string
	for _, si := range tok.ServiceIdentities {
		services = append(services, si.ServiceName)
	}
	for _, ni := range tok.NodeIdentities {
		nodes = append(nodes, ni.NodeName)
	}
	for _, r := range tok.Roles {
		roles = append(roles, r.Name)
	}
	// Rules are evaluated in ID order (random): compare sorted names.
	sort.Strings(services)
	if got, want := strings.Join(services, ",")+"|"+strings.Join(nodes, ",")+"|"+strings.Join(roles, ","),
		"all-web-frontend,dev-payments,svc-web-frontend|node-web-frontend|payments-readers"; got != want {
		b.Fatalf("login bound %s, want %s (token %+v)", got, want, tok)
	}

	runParallelPosts(b, "POST", s.URL+loginPath, body, "logins/s")
}

func BenchmarkCreateACL(b *testing.B) {
	body, _ := json.Marshal(map[string]string{
		"Description": "bench", "AuthMethod": "bench-jwt", "Selector": `value.team == "Payments"`,
		"BindType": "service", "BindName": "svc-${value.name}",
	})
	for _, mode := range []struct {
		name string
		acl  bool
	}{{"acl-on", true}, {"acl-off", false}} {
		b.Run(mode.name, func(b *testing.B) {
			// A fresh persistent node (Raft log and snapshots in bbolt files
			// under b.TempDir()) for every run of this function.
			opts := []servertest.Option{servertest.Persistent(b.TempDir())}
			var headers []string
			if mode.acl {
				opts = append(opts, servertest.ACL(lgMgmt))
				headers = []string{"X-Service-Token", lgMgmt}
			}
			ts := servertest.Start(b, opts...)
			if mode.acl {
				waitACLReady(b, ts, lgMgmt)
				if r := ts.Do(b, "PUT", rulePath, string(body)); r.Status != http.StatusForbidden {
					b.Fatalf("a create without a token answered %s, want 403", r)
				}
			}
			runParallelPosts(b, "PUT", ts.URL+rulePath, string(body), "creates/s", headers...)
		})
	}
}
