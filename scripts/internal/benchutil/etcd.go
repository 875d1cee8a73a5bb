package benchutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/server/tlsutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdBin is the etcd server the comparisons run (Debian's etcd-server).
const EtcdBin = "/usr/bin/etcd"

// Etcd is a local etcd cluster this tool runs as a reference: every member
// on 127.0.0.1 with its data in a directory of its own, fsync on (etcd's
// default), clients without TLS, peers with mutual TLS or without.
type Etcd struct {
	Endpoints []string // client addresses, host:port
	Version   string
	PeerTLS   bool // the members talk to each other over mutual TLS
	dir       string
	cmds      []*exec.Cmd
	exited    []chan struct{}
}

// StartEtcd starts an etcd cluster of members members under dir and waits
// until it takes a put. With peerTLS the members replicate over mutual TLS
// (--peer-client-cert-auth), with an ECDSA P-256 CA and server certificate
// (127.0.0.1 among its names) made as `ctlplane tls` makes them, so that
// it compares like for like with a ctlplane cluster's Raft over mutual TLS.
func StartEtcd(ctx context.Context, dir string, members int, peerTLS bool) (*Etcd, error) {
	if _, err := os.Stat(EtcdBin); err != nil {
		return nil, fmt.Errorf("%s not found (apt-get install -y etcd-server): %w", EtcdBin, err)
	}
	ver, _ := exec.Command(EtcdBin, "--version").Output()
	e := &Etcd{dir: dir, Version: strings.TrimPrefix(strings.SplitN(string(ver), "\n", 2)[0], "etcd Version: "), PeerTLS: peerTLS}
	scheme, peerFlags := "http", []string(nil)
	if peerTLS {
		var err error
		if peerFlags, err = etcdPeerCerts(dir); err != nil {
			return nil, err
		}
		scheme = "https"
	}
	var peers, initial []string
	for i := range members {
		c, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		p, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		e.Endpoints = append(e.Endpoints, c)
		peers = append(peers, p)
		initial = append(initial, fmt.Sprintf("e%d=%s://%s", i, scheme, p))
	}
	for i := range members {
		name := fmt.Sprintf("e%d", i)
		logPath := filepath.Join(dir, name+".log")
		log, err := os.Create(logPath)
		if err != nil {
			e.Stop()
			return nil, err
		}
		args := append([]string{
			"--name=" + name, "--data-dir=" + filepath.Join(dir, name),
			"--listen-client-urls=http://" + e.Endpoints[i], "--advertise-client-urls=http://" + e.Endpoints[i],
			"--listen-peer-urls=" + scheme + "://" + peers[i], "--initial-advertise-peer-urls=" + scheme + "://" + peers[i],
			"--initial-cluster=" + strings.Join(initial, ","), "--initial-cluster-state=new",
			"--initial-cluster-token=bench", "--log-level=warn", "--logger=zap"}, peerFlags...)
		cmd := exec.Command(EtcdBin, args...)
		cmd.Stdout, cmd.Stderr = log, log
		err = cmd.Start()
		log.Close()
		if err != nil {
			e.Stop()
			return nil, err
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		e.cmds, e.exited = append(e.cmds, cmd), append(e.exited, done)
	}
	if err := e.waitReady(ctx, 30*time.Second); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// etcdPeerCerts writes a CA and a server certificate for 127.0.0.1 into
// dir/tls and returns etcd's flags for mutual TLS between its members.
func etcdPeerCerts(dir string) ([]string, error) {
	ca, err := tlsutil.GenerateCA(tlsutil.CAOptions{})
	if err != nil {
		return nil, err
	}
	cert, err := tlsutil.GenerateCert(ca.Cert, ca.Key, tlsutil.CertOptions{Server: true, Datacenter: "dc1"})
	if err != nil {
		return nil, err
	}
	tdir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.pem": ca.Cert, "peer.pem": cert.Cert, "peer-key.pem": cert.Key}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tdir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{
		"--peer-cert-file=" + filepath.Join(tdir, "peer.pem"), "--peer-key-file=" + filepath.Join(tdir, "peer-key.pem"),
		"--peer-trusted-ca-file=" + filepath.Join(tdir, "ca.pem"), "--peer-client-cert-auth",
	}, nil
}

func (e *Etcd) waitReady(ctx context.Context, timeout time.Duration) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		for i, done := range e.exited {
			select {
			case <-done:
				return fmt.Errorf("etcd member e%d exited (log: %s)", i, filepath.Join(e.dir, fmt.Sprintf("e%d.log", i)))
			default:
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = c.Put(pctx, "bench-ready", "1")
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd not ready after %s: %v", timeout, last)
}

// Leader is the client endpoint of the member that leads.
func (e *Etcd) Leader(ctx context.Context) (string, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer c.Close()
	for _, ep := range e.Endpoints {
		st, err := c.Status(ctx, ep)
		if err != nil {
			return "", err
		}
		if st.Leader == st.Header.MemberId {
			return ep, nil
		}
	}
	return "", errors.New("no etcd member says it leads")
}

// Stop sends SIGTERM to every member and waits (SIGKILL after 10 s).
func (e *Etcd) Stop() {
	for _, c := range e.cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	for i, done := range e.exited {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			e.cmds[i].Process.Kill()
			<-done
		}
	}
}

// Pids are the members' process IDs, in Endpoints' order.
func (e *Etcd) Pids() []int {
	var out []int
	for _, c := range e.cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}
