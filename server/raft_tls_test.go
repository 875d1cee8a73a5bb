package server_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/snapshot"
	"github.com/hashicorp/raft"
)

const (
	goodToken = "a1a1a1a1-0000-4000-8000-000000000001"
	evilToken = "e7e7e7e7-0000-4000-8000-000000000002"
)

// evilSnapshot is the FSM state of a server the attacker controls, in which
// evilToken is a management token.
func evilSnapshot(t *testing.T) []byte {
	t.Helper()
	evil := servertest.Start(t, servertest.ACL(evilToken), servertest.InsecureRaft())
	req, _ := http.NewRequest(http.MethodGet, evil.URL+"/v1/snapshot", nil)
	req.Header.Set("X-Service-Token", evilToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("saving the attacker's snapshot: %v %v", err, resp)
	}
	defer resp.Body.Close()
	a, err := snapshot.Read(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := io.ReadAll(st)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

// installEvilSnapshot sends the attacker's state to target as a Raft
// InstallSnapshot from a leader of a much higher term.
func installEvilSnapshot(trans raft.Transport, target *servertest.TestServer, data []byte) error {
	conf := raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(target.NodeID()), Address: raft.ServerAddress(target.RaftAddr()), Suffrage: raft.Voter}}})
	req := &raft.InstallSnapshotRequest{
		RPCHeader:          raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte(trans.LocalAddr())},
		SnapshotVersion:    raft.SnapshotVersionMax,
		Term:               1000,
		LastLogIndex:       1 << 20,
		LastLogTerm:        1000,
		Configuration:      conf,
		ConfigurationIndex: 1,
		Size:               int64(len(data)),
	}
	var resp raft.InstallSnapshotResponse
	if err := trans.InstallSnapshot(raft.ServerID(target.NodeID()), raft.ServerAddress(target.RaftAddr()), req, &resp, bytes.NewReader(data)); err != nil {
		return err
	}
	if !resp.Success {
		return errors.New("snapshot refused")
	}
	return nil
}

func tokenWorks(t *testing.T, ts *servertest.TestServer, secret string) bool {
	r := ts.Do(t, http.MethodGet, "/v1/acl/token/self", "", "X-Service-Token", secret)
	return r.Status == http.StatusOK
}

// Issue 8, finding 1: a process that speaks the Raft protocol without the
// cluster's certificate is refused and cannot install a snapshot holding a
// token of its choosing. The control shows the same attack takes over a
// server run with -insecure-raft.
func TestRaftRefusesPeersWithoutServerCertificate(t *testing.T) {
	data := evilSnapshot(t)
	attacker, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()

	t.Run("control: insecure Raft is taken over", func(t *testing.T) {
		weak := servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(goodToken), servertest.InsecureRaft())
		if err := installEvilSnapshot(attacker, weak, data); err != nil {
			t.Fatalf("attack on insecure Raft failed (%v): the test's attack is not real", err)
		}
		waitFor(t, 10*time.Second, "the attacker's token to work", func() string {
			if tokenWorks(t, weak, evilToken) {
				return ""
			}
			return "not yet"
		})
	})

	target := servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(goodToken))
	if !target.TLSEnabled() {
		t.Fatal("test servers run without TLS")
	}
	if err := installEvilSnapshot(attacker, target, data); err == nil {
		t.Fatal("a Raft peer without a certificate installed a snapshot")
	}
	// A heartbeat of a higher term is refused as well (it would depose the leader).
	var ae raft.AppendEntriesResponse
	err = attacker.AppendEntries(raft.ServerID(target.NodeID()), raft.ServerAddress(target.RaftAddr()), &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte(attacker.LocalAddr())}, Term: 2000,
	}, &ae)
	if err == nil {
		t.Fatal("a Raft peer without a certificate got an AppendEntries answer")
	}

	// A certificate from the right CA that is not a server's (a client
	// certificate), and a server certificate of another datacenter, are
	// refused too.
	certs := servertest.TestCerts(t)
	other := certs.ServerFiles(t, "dc2")
	for name, files := range map[string][2]string{"client certificate": {certs.ClientCert, certs.ClientKey}, "dc2 server certificate": {other.CertFile, other.KeyFile}} {
		cert, err := tls.LoadX509KeyPair(files[0], files[1])
		if err != nil {
			t.Fatal(err)
		}
		conf := &tls.Config{RootCAs: certs.Pool(t), Certificates: []tls.Certificate{cert}, ServerName: "server.dc1.ctlplane"}
		trans := raft.NewNetworkTransport(&dialOnly{conf: conf, closed: make(chan struct{})}, 1, 5*time.Second, io.Discard)
		if err := installEvilSnapshot(trans, target, data); err == nil {
			t.Errorf("a Raft peer with a %s installed a snapshot", name)
		}
		trans.Close()
	}

	time.Sleep(300 * time.Millisecond)
	if tokenWorks(t, target, evilToken) {
		t.Fatal("the attacker's token works")
	}
	if !tokenWorks(t, target, goodToken) {
		t.Fatal("the cluster's own management token stopped working")
	}
	if err := target.CheckRead(true); err != nil {
		t.Fatalf("the server no longer leads: %v", err)
	}
}

// dialOnly is a Raft stream layer that only dials, over TLS.
type dialOnly struct {
	conf   *tls.Config
	closed chan struct{}
	once   sync.Once
}

func (d *dialOnly) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), d.conf)
}

func (d *dialOnly) Accept() (net.Conn, error) {
	<-d.closed
	return nil, net.ErrClosed
}

func (d *dialOnly) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

func (d *dialOnly) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// A server with TLS refuses, at start, a certificate that is not a server
// certificate of its datacenter.
func TestTLSNeedsServerCertificateOfTheDatacenter(t *testing.T) {
	certs := servertest.TestCerts(t)
	cfg := server.DefaultConfig()
	cfg.Dev, cfg.BindAddr, cfg.HTTPAddr = true, "127.0.0.1:0", "127.0.0.1:0"
	cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = certs.CAFile, certs.ClientCert, certs.ClientKey
	_, err := server.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "is not a server certificate of datacenter \"dc1\"") {
		t.Fatalf("starting with a client certificate: %v", err)
	}
}
