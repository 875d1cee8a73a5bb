package main

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// runIn runs `ctlplane args...` as a subprocess in dir and returns its exit
// code and output.
func runIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	p := startProcIn(t, dir, args...)
	code := p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

func startProcIn(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	skipProcessInShort(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), agentEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p
}

var (
	tlsDirOnce sync.Once
	tlsDir     string
	tlsDirErr  string
)

// tlsAgentArgs are the -tls-* flags of a server of dc1, with a CA and a
// server certificate made once per test binary by `ctlplane tls`.
func tlsAgentArgs(t *testing.T) []string {
	t.Helper()
	tlsDirOnce.Do(func() {
		dir, err := servertest.ProcessTempDir("ctlplane-clitest-certs-pid")
		if err != nil {
			tlsDirErr = err.Error()
			return
		}
		for _, args := range [][]string{{"tls", "ca", "create"}, {"tls", "cert", "create", "-server"}, {"tls", "cert", "create", "-client"}} {
			if code, out, errOut := runIn(t, dir, args...); code != 0 {
				tlsDirErr = strings.Join(args, " ") + ": " + out + errOut
				return
			}
		}
		tlsDir = dir
	})
	if tlsDirErr != "" {
		t.Fatalf("creating certificates: %s", tlsDirErr)
	}
	return []string{
		"-tls-ca-file=" + filepath.Join(tlsDir, "ctlplane-agent-ca.pem"),
		"-tls-cert-file=" + filepath.Join(tlsDir, "dc1-server-ctlplane-0.pem"),
		"-tls-key-file=" + filepath.Join(tlsDir, "dc1-server-ctlplane-0-key.pem"),
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(buf)
	if b == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// `tls ca create` and `tls cert create` write Consul's file names, mode
// 0600, with the server's names, and never overwrite a file.
func TestTLSCreateCommands(t *testing.T) {
	dir := t.TempDir()
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errOut := runIn(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
		return out
	}
	mustRun("tls", "ca", "create", "-days", "30")
	mustRun("tls", "cert", "create", "-server", "-dc", "east", "-additional-dnsname", "ctl.example.com", "-additional-ipaddress", "10.0.0.7")
	mustRun("tls", "cert", "create", "-server", "-dc", "east")
	mustRun("tls", "cert", "create", "-client")
	for _, f := range []string{"ctlplane-agent-ca.pem", "ctlplane-agent-ca-key.pem", "east-server-ctlplane-0.pem", "east-server-ctlplane-0-key.pem",
		"east-server-ctlplane-1.pem", "east-server-ctlplane-1-key.pem", "dc1-client-ctlplane-0.pem", "dc1-client-ctlplane-0-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	ca := readCert(t, filepath.Join(dir, "ctlplane-agent-ca.pem"))
	if !ca.IsCA || ca.NotAfter.After(time.Now().AddDate(0, 0, 31)) {
		t.Errorf("CA: IsCA %v, NotAfter %v; want a CA valid 30 days", ca.IsCA, ca.NotAfter)
	}
	srv := readCert(t, filepath.Join(dir, "east-server-ctlplane-0.pem"))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, name := range []string{"server.east.ctlplane", "localhost", "127.0.0.1", "ctl.example.com", "10.0.0.7"} {
		if _, err := srv.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	cli := readCert(t, filepath.Join(dir, "dc1-client-ctlplane-0.pem"))
	if cli.VerifyHostname("server.dc1.ctlplane") == nil || cli.VerifyHostname("client.dc1.ctlplane") != nil {
		t.Errorf("client certificate names %v: want client.dc1.ctlplane and not the server name", cli.DNSNames)
	}

	code, _, errOut := runIn(t, dir, "tls", "ca", "create")
	if code == 0 || !strings.Contains(errOut, "ctlplane-agent-ca.pem already exists") {
		t.Errorf("second ca create: exit %d %q, want a refusal to overwrite", code, errOut)
	}
	code, _, errOut = runIn(t, dir, "tls", "cert", "create", "-server", "-client")
	if code == 0 || !strings.Contains(errOut, "give exactly one of -server and -client") {
		t.Errorf("cert create -server -client: exit %d %q", code, errOut)
	}
}

// Secure by default (issue 8, finding 1): an agent asked to form or join a
// multi-server cluster without TLS refuses to start and says how to create
// certificates; -insecure-raft lets it.
func TestAgentRefusesClusterWithoutTLS(t *testing.T) {
	for _, args := range [][]string{
		{"-bootstrap-expect=3", "-join=127.0.0.1:1"},
		{"-join=127.0.0.1:1"},
	} {
		p := startProc(t, append([]string{"agent", "-data-dir=" + t.TempDir(), "-http-addr=127.0.0.1:0", "-bind=127.0.0.1:0"}, args...)...)
		if code := p.wait(t); code != 1 {
			t.Fatalf("%v: exit %d, want 1; stderr:\n%s", args, code, p.stderr.String())
		}
		for _, want := range []string{"without TLS", "ctlplane tls ca create", "ctlplane tls cert create -server", "-insecure-raft"} {
			if !strings.Contains(p.stderr.String(), want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, p.stderr.String())
			}
		}
	}
	p := startProc(t, "agent", "-data-dir="+t.TempDir(), "-http-addr=127.0.0.1:0", "-bind=127.0.0.1:0", "-join=127.0.0.1:1", "-insecure-raft")
	a := &agent{proc: p}
	deadline := time.Now().Add(startTimeout)
	for !listeningRE.MatchString(p.stderr.String()) {
		a.checkAlive(t, deadline, "start with -insecure-raft")
		time.Sleep(20 * time.Millisecond)
	}
}

var httpsListeningRE = regexp.MustCompile(`HTTPS API listening: address=(https://[^ \n]+)`)

// An agent with TLS serves HTTPS on -https-addr; the CLI talks to it with
// -ca-file (or CTLPLANE_CACERT), and plain HTTP is refused there.
func TestAgentHTTPSAndCLI(t *testing.T) {
	args := append([]string{"agent", "-data-dir=" + t.TempDir(), "-node=n1", "-bind=127.0.0.1:0", "-http-addr=127.0.0.1:0",
		"-https-addr=127.0.0.1:0", "-bootstrap-expect=1", "-raft-timeout=200ms", "-acl-initial-management-token=" + testManagementToken}, tlsAgentArgs(t)...)
	p := startProc(t, args...)
	a := &agent{proc: p}
	deadline := time.Now().Add(startTimeout)
	var httpsURL string
	for {
		if m := httpsListeningRE.FindStringSubmatch(p.stderr.String()); m != nil {
			httpsURL = m[1]
			break
		}
		a.checkAlive(t, deadline, "log its HTTPS address")
		time.Sleep(20 * time.Millisecond)
	}
	ca := filepath.Join(tlsDir, "ctlplane-agent-ca.pem")
	var code int
	var out, errOut string
	for {
		code, out, errOut = ctl("operator", "raft", "list-peers", "-address", httpsURL, "-ca-file", ca, "-token", testManagementToken)
		// The node's name shows once its own record is written, just after
		// it wins its election.
		if (code == 0 && strings.Contains(out, "n1") && strings.Contains(out, "leader")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "n1") || !strings.Contains(out, "leader") {
		t.Fatalf("list-peers over HTTPS: exit %d\n%s%s", code, out, errOut)
	}
	// With a client certificate too.
	code, out, errOut = ctl("operator", "raft", "list-peers", "-address", httpsURL, "-ca-file", ca, "-token", testManagementToken,
		"-client-cert", filepath.Join(tlsDir, "dc1-client-ctlplane-0.pem"), "-client-key", filepath.Join(tlsDir, "dc1-client-ctlplane-0-key.pem"))
	if code != 0 {
		t.Fatalf("list-peers with a client certificate: exit %d\n%s%s", code, out, errOut)
	}
	// The same through the environment.
	t.Setenv("CTLPLANE_CACERT", ca)
	t.Setenv("CTLPLANE_HTTP_ADDR", httpsURL)
	t.Setenv("CTLPLANE_TOKEN", testManagementToken)
	if code, out, errOut = ctl("operator", "raft", "list-peers"); code != 0 {
		t.Fatalf("list-peers with CTLPLANE_CACERT: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("CTLPLANE_CACERT", "")
	// Without the CA the server is not trusted.
	if code, _, errOut = ctl("operator", "raft", "list-peers", "-address", httpsURL, "-token", testManagementToken); code == 0 || !strings.Contains(errOut, "certificate") {
		t.Errorf("list-peers without -ca-file: exit %d %q, want a certificate error", code, errOut)
	}
	// Plain HTTP to the HTTPS-only port gets no API answer.
	if resp, err := http.Get("http://" + strings.TrimPrefix(httpsURL, "https://") + "/v1/status/leader"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the HTTPS port answered 200")
		}
	}
}
