package benchutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Consul is a single Consul server this tool runs as the upstream reference
// of the binding-rule API: persistent (its Raft log in bbolt under dir, as
// ctlplane's default), ACLs on with default policy deny, and a management
// token. Consul is not in Debian; README ("Performance") says how to build
// 1.16.3 from the Go module proxy.
type Consul struct {
	URL     string // HTTP address, http://127.0.0.1:PORT
	Token   string // the initial management token
	Version string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartConsul starts bin as a one-server datacenter under dir and waits
// until it has a leader and accepts the management token.
func StartConsul(ctx context.Context, bin, dir string) (*Consul, error) {
	ver, err := exec.Command(bin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", bin, err)
	}
	c := &Consul{Token: NewToken(), Version: strings.TrimSpace(strings.SplitN(string(ver), "\n", 2)[0]), exited: make(chan struct{})}
	ports := make([]string, 4) // http, server RPC, serf LAN, serf WAN
	for i := range ports {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		_, ports[i], _ = net.SplitHostPort(a)
	}
	c.URL = "http://127.0.0.1:" + ports[0]
	config := fmt.Sprintf(`acl { enabled = true, default_policy = "deny", tokens { initial_management = %q } }
ports { http = %s, server = %s, serf_lan = %s, serf_wan = %s, dns = -1, grpc = -1, grpc_tls = -1 }
`, c.Token, ports[0], ports[1], ports[2], ports[3])
	cfgPath := filepath.Join(dir, "consul.hcl")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "consul.log"))
	if err != nil {
		return nil, err
	}
	c.cmd = exec.Command(bin, "agent", "-server", "-bootstrap-expect=1", "-node=bench", "-bind=127.0.0.1",
		"-client=127.0.0.1", "-data-dir="+filepath.Join(dir, "data"), "-config-file="+cfgPath, "-log-level=warn")
	c.cmd.Stdout, c.cmd.Stderr = log, log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { c.cmd.Wait(); log.Close(); close(c.exited) }()

	cl := NewClient(c.URL, 1)
	cl.Token, cl.TokenHeader = c.Token, ConsulTokenHeader
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The token works once the leader has bootstrapped the ACL system.
		r := cl.Get(ctx, "/v1/acl/token/self", 5*time.Second)
		if r.Failure() == "" {
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("consul exited (log: %s)", filepath.Join(dir, "consul.log"))
		case <-ctx.Done():
			c.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, errors.New("consul not ready after 60 s: " + r.Failure())
		}
	}
}

// ConsulTokenHeader is the header Consul reads a token from.
const ConsulTokenHeader = "X-Consul-Token"

// Pid is the server process's.
func (c *Consul) Pid() int { return c.cmd.Process.Pid }

// Stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (c *Consul) Stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}
