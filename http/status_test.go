package http_test

import (
	"net/http/httptest"
	"testing"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/go-hclog"
)

// TestStatus: /v1/status/leader is the leader's Raft address as a JSON
// string; /v1/status/peers the Raft addresses of the servers.
func TestStatus(t *testing.T) {
	ts := start(t)
	addr := ts.RaftAddr()
	if addr == "" {
		t.Fatal("server has no Raft address")
	}

	tests := []struct {
		path string
		body string
	}{
		{"/v1/status/leader", js(addr)},
		{"/v1/status/peers", "[" + js(addr) + "]"},
		{"/v1/status/leader?pretty", js(addr) + "\n"},
		{"/v1/status/peers?pretty", "[\n    " + js(addr) + "\n]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp := ts.Do(t, "GET", tc.path, "")
			expectJSON(t, resp, tc.body)
			// Status is not an ACL read: no index headers, and no X-Consul- ones.
			expectHeader(t, resp, "X-Consul-Index", "")
		})
	}
}

// Routes declare where they are answered: status and the agent's own
// metrics by every server itself, everything else by the leader.
func TestRoutesDeclareWhereTheyAreAnswered(t *testing.T) {
	ts := servertest.Start(t)
	h := ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts.Server)})
	for _, tc := range []struct {
		method, path string
		local        bool
	}{
		{"GET", "/v1/status/leader", true},
		{"GET", "/v1/status/peers", true},
		{"GET", "/v1/agent/metrics", true},
		{"GET", "/v1/deployments", false},
		{"PUT", "/v1/acl/binding-rule", false},
		{"GET", "/v1/status/nope", false},
		{"GET", "/nope", false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if got := h.AnsweredLocally(r); got != tc.local {
			t.Errorf("%s %s answered locally = %v, want %v", tc.method, tc.path, got, tc.local)
		}
	}
}
