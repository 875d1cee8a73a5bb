package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// followed is a followed answer read in the background.
type followed struct {
	mu   sync.Mutex
	body strings.Builder
	done chan struct{} // closed when the body ends
	err  error
}

func follow(t *testing.T, url, token string) *followed {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("X-Nomad-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	f := &followed{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			f.mu.Lock()
			f.body.Write(buf[:n])
			if err != nil {
				f.err = err
			}
			f.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return f
}

// lines counts the task's lines received: in plain text, or in the Data
// of Nomad's frames.
func (f *followed) lines() int {
	f.mu.Lock()
	body := f.body.String()
	f.mu.Unlock()
	if !strings.HasPrefix(body, "{") {
		return strings.Count(body, "line ")
	}
	n := 0
	dec := json.NewDecoder(strings.NewReader(body))
	for {
		var frame struct{ Data []byte }
		if dec.Decode(&frame) != nil {
			return n
		}
		n += strings.Count(string(frame.Data), "line ")
	}
}

// waitLines waits until the stream has delivered n more lines than it had.
func (f *followed) waitMore(t *testing.T, n int) {
	t.Helper()
	want := f.lines() + n
	atkWait(t, fmt.Sprintf("%d more followed lines", n), func() bool { return f.lines() >= want })
}

// Issue 31, finding 6: a followed log or file stream, through the servers
// or on the node with a token, ends once its token is deleted or loses the
// capability (read-logs, read-fs), as the event stream does; an unrelated
// ACL change does not end it. The task keeps writing, so nothing else
// would end it.
func TestFollowedStreamsEndWhenTheTokenGoes(t *testing.T) {
	e := cnStart(t)
	const logsRules = `namespace "default" { capabilities = ["read-logs"] }` + "\nnode = \"read\""
	const fsRules = `namespace "default" { capabilities = ["read-fs"] }`
	logsPath := "/v1/client/fs/logs/" + e.alloc.ID + "?task=app&type=stdout&follow=true&plain=true&origin=end"
	framedPath := "/v1/client/fs/logs/" + e.alloc.ID + "?task=app&type=stdout&follow=true&origin=end"
	fsPath := "/v1/client/fs/stream/" + e.alloc.ID + "?path=alloc/logs/app.stdout.0&origin=end"
	deleteToken := func(t *testing.T, _, _, accessor string) { e.s.must(t, "DELETE", "/v1/acl/token/"+accessor, "") }
	setRules := func(rules string) func(t *testing.T, name, policyID, _ string) {
		return func(t *testing.T, name, policyID, _ string) {
			e.s.must(t, "PUT", "/v1/acl/policy/"+policyID, fmt.Sprintf(`{"Name":%s,"Rules":%s}`, js(name), js(rules)))
		}
	}
	servers, node := e.s.URL, "http://"+e.v.c.HTTPAddr()
	cases := []struct {
		name, base, path, rules string
		revoke                  func(t *testing.T, name, policyID, accessor string)
	}{
		{"logs through the servers, token deleted", servers, logsPath, logsRules, deleteToken},
		{"framed logs through the servers, read-logs removed", servers, framedPath, logsRules, setRules(`namespace "default" { capabilities = ["read-job"] }` + "\nnode = \"read\"")},
		{"fs stream through the servers, token deleted", servers, fsPath, fsRules, deleteToken},
		{"fs stream through the servers, read-fs removed", servers, fsPath, fsRules, setRules(`namespace "default" { capabilities = ["read-logs"] }`)},
		// Nomad's API goes to the node directly with the token: the node
		// asks the servers again while it follows.
		{"logs on the node, token deleted", node, logsPath, logsRules, deleteToken},
		{"framed logs on the node, read-logs removed", node, framedPath, logsRules, setRules(`namespace "default" { capabilities = ["read-job"] }` + "\nnode = \"read\"")},
		{"fs stream on the node, read-fs removed", node, fsPath, fsRules, setRules(`namespace "default" { capabilities = ["read-logs"] }`)},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("p-%d", i)
			p := e.s.policy(t, name, c.rules)
			tok := e.s.token(t, fmt.Sprintf(`{"Description":%s,"Policies":[{"ID":%s}]}`, js(name), js(p.ID)))
			f := follow(t, c.base+c.path, tok.SecretID)
			f.waitMore(t, 2)
			// An unrelated ACL change: the stream goes on.
			e.s.policy(t, name+"-other", `namespace "other" { policy = "read" }`)
			f.waitMore(t, 2)
			select {
			case <-f.done:
				t.Fatalf("the stream ended on an unrelated change: %v", f.err)
			default:
			}
			c.revoke(t, name, p.ID, tok.AccessorID)
			select {
			case <-f.done:
			case <-time.After(20 * time.Second):
				t.Fatalf("the stream goes on after the token lost its permission (%d lines)", f.lines())
			}
			// The caller's own request ends as a normal end of body.
			if f.err != io.EOF {
				t.Errorf("the stream ended with %v, want the end of its body", f.err)
			}
		})
	}
}
