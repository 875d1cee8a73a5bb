package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// `ctlplane event stream` prints the events its token may read, one JSON
// line each, says when the index asked for has left the buffer, and exits 1
// with the server's reason when its token is deleted.
func TestEventStreamCLI(t *testing.T) {
	const mgmt = "e0e0e0e0-0000-4000-8000-0000000000cc"
	ts := servertest.Start(t, servertest.ACL(mgmt), func(c *server.Config) { c.EventBufferSize = 3 })
	do := func(method, path, body string) *servertest.Response {
		r := ts.Do(t, method, path, body, "X-Service-Token", mgmt)
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r
	}
	var tok struct{ AccessorID, SecretID string }
	do("PUT", "/v1/acl/token", `{"Policies":[{"Name":"global-management"}]}`).JSON(t, &tok)
	policy := func(i int) {
		do("PUT", "/v1/acl/policy", fmt.Sprintf(`{"Name":"p%d","Rules":"namespace \"default\" { policy = \"read\" }"}`, i))
	}
	for i := 0; i < 5; i++ {
		policy(i) // more entries than the buffer keeps
	}

	pr, pw := io.Pipe()
	stderr := &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"event", "stream", "-address", ts.URL, "-token", tok.SecretID, "-topic", "ACLPolicy", "-index", "1"}, pw, stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	readLine := func() string {
		if !lines.Scan() {
			t.Fatalf("no line; stderr %q", stderr.String())
		}
		return lines.Text()
	}
	// The three kept entries, then a new one.
	var names []string
	for len(names) < 3 {
		var b struct {
			Index  uint64
			Events []struct {
				Topic, Type string
				Payload     struct{ ACLPolicy struct{ Name string } }
			}
		}
		if err := json.Unmarshal([]byte(readLine()), &b); err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Events {
			if e.Topic != "ACLPolicy" || e.Type != "ACLPolicyUpserted" {
				t.Errorf("event %+v", e)
			}
			names = append(names, e.Payload.ACLPolicy.Name)
		}
	}
	if got := strings.Join(names, " "); got != "p2 p3 p4" {
		t.Errorf("kept events: %s", got)
	}
	if s := stderr.String(); !strings.Contains(s, "The index asked for is older than the server's event buffer: starting at its oldest, index ") {
		t.Errorf("stderr %q", s)
	}
	policy(5)
	if l := readLine(); !strings.Contains(l, `"Name":"p5"`) {
		t.Errorf("live event %s", l)
	}
	do("DELETE", "/v1/acl/token/"+tok.AccessorID, "")
	go io.Copy(io.Discard, pr)
	select {
	case c := <-code:
		if c != 1 {
			t.Errorf("exit %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end when its token was deleted")
	}
	if s := stderr.String(); !strings.Contains(s, "Error: the server ended the stream: ACL token not found: the stream's token was deleted or has expired") {
		t.Errorf("stderr %q", s)
	}
}

// `deployment status -monitor` reads the deployment once, then follows its
// changes on the event stream instead of blocking queries (seen through a
// proxy that counts the requests), to the deployment's success.
func TestDeploymentMonitorFollowsEventStream(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := servertest.Start(t, servertest.DevNodes(1))
	waitFor(t, "the dev node", func() bool {
		var nodes []struct{ Status string }
		r := ts.Do(t, "GET", "/v1/nodes", "")
		return r.Status == 200 && json.Unmarshal([]byte(r.Body), &nodes) == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	job := `{"Job":{"ID":"web","Datacenters":["dc1"],"TaskGroups":[{"Name":"web","Count":2,` +
		`"Update":{"MaxParallel":1,"HealthCheck":"task_states","MinHealthyTime":1500000000,"HealthyDeadline":20000000000,"ProgressDeadline":60000000000},` +
		`"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h"},"Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	if r := ts.Do(t, "PUT", "/v1/jobs", job); r.Status != http.StatusOK {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	var dep struct{ ID string }
	waitFor(t, "the deployment", func() bool {
		r := ts.Do(t, "GET", "/v1/job/web/deployment", "")
		return r.Status == 200 && json.Unmarshal([]byte(r.Body), &dep) == nil && dep.ID != ""
	})

	target, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	var out bytes.Buffer
	code := run([]string{"deployment", "status", "-monitor", "-address=" + front.URL, dep.ID[:8]}, &out, io.Discard)
	if code != 0 || !strings.Contains(out.String(), "✓ Deployment") || !strings.Contains(out.String(), "successful") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["/v1/event/stream"] != 1 || seen["/v1/deployment/"+dep.ID] != 1 {
		t.Errorf("requests %v: want one read of the deployment, then the stream", seen)
	}
}
