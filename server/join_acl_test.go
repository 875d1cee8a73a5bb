package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// Without TLS (insecure mode) and with ACLs on, only a management token may
// add a server: operator:write is not enough (issue 8, finding 2). A
// server without a token stays out, a server with the management token gets in.
func TestJoinNeedsManagementTokenWithoutTLS(t *testing.T) {
	const mgmt = "6c3b1d7e-0f4a-4b2c-9d8e-7a6b5c4d3e2f"
	// A lone dev server has no network Raft transport: the first is persistent.
	first := servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(mgmt), servertest.InsecureRaft())

	// A token with operator:write only.
	pol := first.Do(t, http.MethodPut, "/v1/acl/policy", `{"Name":"ops","Rules":"operator = \"write\""}`, "X-Service-Token", mgmt)
	if pol.Status != http.StatusOK {
		t.Fatalf("creating policy: %s", pol)
	}
	const opSecret = "0d6c7b2a-1e3f-4a5b-8c9d-0e1f2a3b4c5d"
	tok := first.Do(t, http.MethodPut, "/v1/acl/token", `{"SecretID":"`+opSecret+`","Policies":[{"Name":"ops"}]}`, "X-Service-Token", mgmt)
	if tok.Status != http.StatusOK {
		t.Fatalf("creating token: %s", tok)
	}

	// The join endpoint itself: no token, an unknown one and an
	// operator:write token are all refused.
	body := `{"ID":"11111111-2222-3333-4444-555555555555","Name":"x","RaftAddr":"127.0.0.1:1","HTTPAddr":"127.0.0.1:2","ACLEnabled":true,"Key":"k"}`
	const denied = "Permission denied: joining the cluster needs a management token (agent flag -join-token, or env CTLPLANE_JOIN_TOKEN)"
	for _, tok := range []string{"", "not-a-token", opSecret} {
		r := first.Do(t, http.MethodPut, "/v1/internal/join", body, "X-Service-Token", tok)
		if r.Status != http.StatusForbidden || strings.TrimSpace(r.Body) != denied {
			t.Fatalf("join with token %q: %s, want 403 %q", tok, r, denied)
		}
	}

	outsider := servertest.StartNoWait(t, servertest.ACL(""), servertest.Join(0, first.HTTPAddr()), servertest.InsecureRaft(),
		func(c *server.Config) { c.JoinToken = opSecret })
	insider := servertest.StartNoWait(t, servertest.ACL(""), servertest.Join(0, first.HTTPAddr()), servertest.InsecureRaft(),
		func(c *server.Config) { c.JoinToken = mgmt })

	deadline := time.Now().Add(15 * time.Second)
	for {
		peers, err := first.Peers()
		if err != nil {
			t.Fatal(err)
		}
		if len(peers) == 2 {
			if !contains(peers, insider.RaftAddr()) || contains(peers, outsider.RaftAddr()) {
				t.Fatalf("peers %v: want the first server and %s (with the token), not %s", peers, insider.RaftAddr(), outsider.RaftAddr())
			}
			break
		}
		if len(peers) > 2 || time.Now().After(deadline) {
			t.Fatalf("peers %v after %v: want exactly the first server and the one with the join token", peers, 15*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The outsider keeps asking and keeps being refused.
	time.Sleep(600 * time.Millisecond)
	if peers, _ := first.Peers(); len(peers) != 2 || contains(peers, outsider.RaftAddr()) {
		t.Fatalf("peers %v: the server without a join token got in", peers)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
