package http_test

import "testing"

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
