package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/nomad/api"
)

const eventMgmt = "e0e0e0e0-0000-4000-8000-00000000aaaa"

func mustDo(t *testing.T, ts *servertest.TestServer, method, path, body string) *servertest.Response {
	t.Helper()
	r := ts.Do(t, method, path, body, "X-Service-Token", eventMgmt)
	if r.Status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
	}
	return r
}

func registerIn(t *testing.T, ts *servertest.TestServer, ns, id string) {
	t.Helper()
	body := strings.Replace(jobSpec{count: 1}.body(), `"ID":"web"`, fmt.Sprintf(`"ID":%q,"Namespace":%q`, id, ns), 1)
	mustDo(t, ts, http.MethodPut, "/v1/jobs", body)
}

// Each event reaches a token only if it may read its object; a token that
// loses a permission stops getting those events; a deleted token ends the
// stream with a message; an unknown one is refused.
func TestEventStreamACL(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(eventMgmt), eventConfig(1000, 0))
	mustDo(t, ts, http.MethodPut, "/v1/namespace/other", `{"Name":"other"}`)
	var pol state.ACLPolicy
	mustDo(t, ts, http.MethodPut, "/v1/acl/policy", `{"Name":"reader","Rules":"namespace \"default\" { policy = \"read\" }"}`).JSON(t, &pol)
	var tok state.ACLToken
	mustDo(t, ts, http.MethodPut, "/v1/acl/token", fmt.Sprintf(`{"Policies":[{"ID":%q}]}`, pol.ID)).JSON(t, &tok)

	if r := ts.Do(t, http.MethodGet, "/v1/event/stream", "", "X-Nomad-Token", "e0e0e0e0-0000-4000-8000-00000000bbbb"); r.Status != http.StatusForbidden || r.Body != "ACL not found" {
		t.Errorf("unknown token: %d %q", r.Status, r.Body)
	}

	all := map[api.Topic][]string{api.TopicAll: {"*"}}
	reader := collect(t, nomadEvents(t, ts, tok.SecretID), all, 0, &api.QueryOptions{Namespace: "*"})
	admin := collect(t, nomadEvents(t, ts, eventMgmt), all, 0, &api.QueryOptions{Namespace: "*"})
	raw := openRaw(t, ts.URL, "namespace=*&topic=Job", tok.SecretID)

	registerIn(t, ts, "default", "a")
	registerIn(t, ts, "other", "b")
	// The policy changes: default no longer readable, other readable.
	mustDo(t, ts, http.MethodPut, "/v1/acl/policy/"+pol.ID, `{"Name":"reader","Rules":"namespace \"other\" { policy = \"read\" }"}`)
	registerIn(t, ts, "default", "c")
	registerIn(t, ts, "other", "d")
	admin.waitFor(t, "of job d", func(e api.Event) bool { return e.Topic == api.TopicJob && e.Key == "d" })
	reader.waitFor(t, "of job d", func(e api.Event) bool { return e.Topic == api.TopicJob && e.Key == "d" })

	seen := func(col *collector) string {
		var out []string
		for _, e := range col.snapshot() {
			if e.Topic == api.TopicJob || strings.HasPrefix(string(e.Topic), "ACL") {
				out = append(out, string(e.Topic)+":"+e.Key)
			}
		}
		return strings.Join(out, " ")
	}
	if got := seen(reader); got != "Job:a Job:d" {
		t.Errorf("reader saw %s, want Job:a Job:d (no ACL objects, nothing it could not read when it came)", got)
	}
	if got := seen(admin); !strings.Contains(got, "ACLPolicy:"+pol.ID) || !strings.Contains(got, "ACLToken:"+tok.AccessorID) ||
		!strings.HasSuffix(got, "Job:a Job:b ACLPolicy:"+pol.ID+" Job:c Job:d") {
		t.Errorf("management saw %s", got)
	}
	for _, e := range admin.snapshot() {
		if e.Topic == "ACLToken" {
			if s, _ := e.Payload["ACLToken"].(map[string]any)["SecretID"].(string); s != "" {
				t.Errorf("a token event carries its secret: %v", e.Payload)
			}
		}
	}

	// Deleting the token ends its streams.
	mustDo(t, ts, http.MethodDelete, "/v1/acl/token/"+tok.AccessorID, "")
	var last string
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-raw.lines:
			if !ok {
				done = true
				break
			}
			last = l
		case <-deadline:
			t.Fatalf("the stream of a deleted token did not end; last line %q", last)
		}
	}
	if b := decodeLine(t, last); b.Error != "ACL token not found: the stream's token was deleted or has expired" {
		t.Errorf("last line %q", last)
	}
	select {
	case <-reader.done:
	case <-time.After(10 * time.Second):
		t.Fatal("api.EventStream of a deleted token did not end")
	}
	if reader.err == nil {
		t.Error("api.EventStream ended without an error")
	}
}
