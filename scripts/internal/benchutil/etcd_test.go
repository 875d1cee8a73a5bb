package benchutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The reference etcd's members replicate over mutual TLS when asked
// (a peer without a certificate of the CA is refused), and over plain
// HTTP otherwise; both take puts through the leader.
func TestStartEtcdPeerTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts etcd processes")
	}
	if _, err := os.Stat(EtcdBin); err != nil {
		t.Fatalf("%s is needed (apt-get install -y etcd-server): %v", EtcdBin, err)
	}
	for _, peerTLS := range []bool{true, false} {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		e, err := StartEtcd(ctx, dir, 3, peerTLS)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		peers := etcdPeerURLs(ctx, t, e)
		e.Stop()
		cancel()
		if len(peers) != 3 || e.PeerTLS != peerTLS {
			t.Fatalf("peerTLS %v: %d members, PeerTLS %v", peerTLS, len(peers), e.PeerTLS)
		}
		for _, u := range peers {
			if want := map[bool]string{true: "https://127.0.0.1:", false: "http://127.0.0.1:"}[peerTLS]; !strings.HasPrefix(u, want) {
				t.Errorf("peerTLS %v: peer URL %s, want %s...", peerTLS, u, want)
			}
		}
	}

	// Mutual: a client of the CA without a certificate is refused, one
	// with the members' certificate is answered.
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := StartEtcd(ctx, dir, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	peer := etcdPeerURLs(ctx, t, e)[0]
	caPEM, err := os.ReadFile(filepath.Join(dir, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	get := func(certs []tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		resp, err := c.Get(peer + "/members")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(nil); err == nil {
		t.Errorf("a peer request without a client certificate was answered (%d)", code)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls", "peer.pem"), filepath.Join(dir, "tls", "peer-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if code, err := get([]tls.Certificate{cert}); err != nil || code != http.StatusOK {
		t.Errorf("a peer request with the members' certificate: %d, %v; want 200", code, err)
	}
}

// etcdPeerURLs puts a key through the cluster and lists its members' peer URLs.
func etcdPeerURLs(ctx context.Context, t *testing.T, e *Etcd) []string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put: %v", err)
	}
	ml, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ml.Members {
		out = append(out, m.PeerURLs...)
	}
	return out
}
