package server_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

func get(t *testing.T, c *http.Client, method, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	buf, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(buf))
}

// With TLS, the HTTP address answers HTTPS too; the internal endpoints
// need a server certificate of the datacenter: a client certificate, no
// certificate, or a management token over plain HTTP are refused (issue 8,
// findings 2 and 7).
func TestTLSInternalEndpointsNeedServerCertificate(t *testing.T) {
	ts := servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(goodToken))
	certs := servertest.TestCerts(t)
	plain := http.DefaultClient
	anon := certs.Client(t, "", "")
	client := certs.Client(t, certs.ClientCert, certs.ClientKey)
	srv := certs.Client(t, certs.ServerCert, certs.ServerKey)
	https := "https://" + ts.HTTPAddr()

	if code, body := get(t, client, http.MethodGet, https+"/v1/status/leader", ""); code != http.StatusOK || body != `"`+ts.RaftAddr()+`"` {
		t.Fatalf("HTTPS on the HTTP address: %d %q", code, body)
	}
	const deniedInternal = "Permission denied: this endpoint is for the cluster's servers and needs this datacenter's server certificate"
	for name, c := range map[string]*http.Client{"plain HTTP": plain, "HTTPS without certificate": anon, "client certificate": client} {
		base := https
		if c == plain {
			base = ts.URL
		}
		if code, body := get(t, c, http.MethodGet, base+"/v1/internal/server", ""); code != http.StatusForbidden || body != deniedInternal {
			t.Errorf("/v1/internal/server with %s: %d %q", name, code, body)
		}
		code, body := get(t, c, http.MethodPut, base+"/v1/internal/join", `{"ID":"x"}`, "X-Service-Token", goodToken)
		if code != http.StatusForbidden || !strings.HasPrefix(body, "Permission denied: joining the cluster needs this datacenter's server certificate") {
			t.Errorf("join with %s and a management token: %d %q", name, code, body)
		}
	}
	if code, body := get(t, srv, http.MethodGet, https+"/v1/internal/server", ""); code != http.StatusOK || !strings.Contains(body, ts.NodeID()) {
		t.Errorf("/v1/internal/server with a server certificate: %d %q", code, body)
	}
}

// -dev alone has no network Raft transport (issue 8): its Raft address is
// an in-memory one, not a host:port anybody could dial.
func TestDevAloneHasNoNetworkRaft(t *testing.T) {
	ts := servertest.Start(t)
	if _, _, err := net.SplitHostPort(ts.RaftAddr()); err == nil {
		t.Fatalf("dev agent has Raft address %q, want an in-memory one", ts.RaftAddr())
	}
}
