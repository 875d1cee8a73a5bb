package servertest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/tlsutil"
)

// Certs are the PEM files of one test binary's CA and its certificates,
// created once (in a temporary directory) and shared by every test server:
// test clusters run Raft, joining and forwarding over mutual TLS.
type Certs struct {
	Dir    string
	CAFile string
	CAKey  string
	// ServerCert/ServerKey are a server certificate of dc1.
	ServerCert, ServerKey string
	// ClientCert/ClientKey are a client certificate of dc1 (not a server's).
	ClientCert, ClientKey string

	mu      sync.Mutex
	servers map[string]tlsutil.Files // by datacenter
}

var (
	certsOnce sync.Once
	certs     *Certs
	certsErr  error
)

// TestCerts returns the test binary's certificates, creating them at first use.
func TestCerts(t testing.TB) *Certs {
	t.Helper()
	certsOnce.Do(func() { certs, certsErr = makeCerts() })
	if certsErr != nil {
		t.Fatalf("creating test certificates: %v", certsErr)
	}
	return certs
}

func makeCerts() (*Certs, error) {
	dir, err := ProcessTempDir("ctlplane-servertest-certs-pid")
	if err != nil {
		return nil, err
	}
	ca, err := tlsutil.GenerateCA(tlsutil.CAOptions{})
	if err != nil {
		return nil, err
	}
	c := &Certs{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"), servers: map[string]tlsutil.Files{}}
	if err := write(c.CAFile, ca.Cert); err != nil {
		return nil, err
	}
	if err := write(c.CAKey, ca.Key); err != nil {
		return nil, err
	}
	srv, err := c.serverFiles("dc1")
	if err != nil {
		return nil, err
	}
	c.ServerCert, c.ServerKey = srv.CertFile, srv.KeyFile
	cli, err := tlsutil.GenerateCert(ca.Cert, ca.Key, tlsutil.CertOptions{Datacenter: "dc1"})
	if err != nil {
		return nil, err
	}
	c.ClientCert, c.ClientKey = filepath.Join(dir, "dc1-client.pem"), filepath.Join(dir, "dc1-client-key.pem")
	if err := write(c.ClientCert, cli.Cert); err != nil {
		return nil, err
	}
	return c, write(c.ClientKey, cli.Key)
}

// serverFiles are the agent TLS files of a server of datacenter dc.
func (c *Certs) serverFiles(dc string) (tlsutil.Files, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.servers[dc]; ok {
		return f, nil
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return tlsutil.Files{}, err
	}
	caKey, err := os.ReadFile(c.CAKey)
	if err != nil {
		return tlsutil.Files{}, err
	}
	p, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{Server: true, Datacenter: dc})
	if err != nil {
		return tlsutil.Files{}, err
	}
	f := tlsutil.Files{CAFile: c.CAFile, CertFile: filepath.Join(c.Dir, dc+"-server.pem"), KeyFile: filepath.Join(c.Dir, dc+"-server-key.pem")}
	if err := write(f.CertFile, p.Cert); err != nil {
		return f, err
	}
	if err := write(f.KeyFile, p.Key); err != nil {
		return f, err
	}
	c.servers[dc] = f
	return f, nil
}

// ServerFiles are the agent TLS files of a server of datacenter dc.
func (c *Certs) ServerFiles(t testing.TB, dc string) tlsutil.Files {
	t.Helper()
	f, err := c.serverFiles(dc)
	if err != nil {
		t.Fatalf("creating a server certificate for %s: %v", dc, err)
	}
	return f
}

// Client is an HTTP client that trusts the test CA and presents the given
// certificate (none when certFile is "").
func (c *Certs) Client(t testing.TB, certFile, keyFile string) *http.Client {
	t.Helper()
	conf := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.Pool(t)}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatalf("loading %s: %v", certFile, err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
}

// Pool is the test CA as a certificate pool.
func (c *Certs) Pool(t testing.TB) *x509.CertPool {
	t.Helper()
	buf, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(buf)
	return pool
}

// ProcessTempDir creates a temporary directory named after prefix and this
// process's ID, for files shared by a whole test binary (no test owns them,
// so none removes them): it first removes the directories of the same
// prefix left by test processes that have exited.
func ProcessTempDir(prefix string) (string, error) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"-*"))
	for _, d := range old {
		pid, err := strconv.Atoi(d[strings.LastIndex(d, "-")+1:])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d", prefix, os.Getpid()))
	os.RemoveAll(dir)
	return dir, os.Mkdir(dir, 0o700)
}

func write(name string, data []byte) error { return os.WriteFile(name, data, 0o600) }

// InsecureRaft runs the server without TLS (plain TCP Raft, plain HTTP
// between servers), for tests that must see or cut Raft traffic.
func InsecureRaft() Option {
	return func(c *server.Config) {
		c.InsecureRaft = true
		c.TLS = tlsutil.Files{}
	}
}

// withTestTLS gives a server the test certificates unless it was made
// insecure or given its own.
func withTestTLS(t testing.TB, c *server.Config) {
	if c.InsecureRaft || c.TLS.Enabled() {
		return
	}
	dc := c.Datacenter
	if dc == "" {
		dc = "dc1"
	}
	c.TLS = TestCerts(t).ServerFiles(t, dc)
}
