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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdBin is the etcd server the comparisons run (Debian's etcd-server).
const EtcdBin = "/usr/bin/etcd"

// Etcd is a local etcd cluster this tool runs as a reference: every member
// on 127.0.0.1 with its data in a directory of its own, fsync on (etcd's
// default), no TLS.
type Etcd struct {
	Endpoints []string // client addresses, host:port
	Version   string
	dir       string
	cmds      []*exec.Cmd
	exited    []chan struct{}
}

// StartEtcd starts an etcd cluster of members members under dir and waits
// until it takes a put.
func StartEtcd(ctx context.Context, dir string, members int) (*Etcd, error) {
	if _, err := os.Stat(EtcdBin); err != nil {
		return nil, fmt.Errorf("%s not found (apt-get install -y etcd-server): %w", EtcdBin, err)
	}
	ver, _ := exec.Command(EtcdBin, "--version").Output()
	e := &Etcd{dir: dir, Version: strings.TrimPrefix(strings.SplitN(string(ver), "\n", 2)[0], "etcd Version: ")}
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
		initial = append(initial, fmt.Sprintf("e%d=http://%s", i, p))
	}
	for i := range members {
		name := fmt.Sprintf("e%d", i)
		logPath := filepath.Join(dir, name+".log")
		log, err := os.Create(logPath)
		if err != nil {
			e.Stop()
			return nil, err
		}
		cmd := exec.Command(EtcdBin,
			"--name="+name, "--data-dir="+filepath.Join(dir, name),
			"--listen-client-urls=http://"+e.Endpoints[i], "--advertise-client-urls=http://"+e.Endpoints[i],
			"--listen-peer-urls=http://"+peers[i], "--initial-advertise-peer-urls=http://"+peers[i],
			"--initial-cluster="+strings.Join(initial, ","), "--initial-cluster-state=new",
			"--initial-cluster-token=bench", "--log-level=warn", "--logger=zap")
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
