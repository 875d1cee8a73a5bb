package benchutil

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Consul is a Consul datacenter of one or more servers on 127.0.0.1 this
// tool runs as the upstream reference of the binding-rule API: persistent
// (each server's Raft log in bbolt under a directory of its own, as
// ctlplane's default), ACLs on with default policy deny, and a management
// token. The servers talk RPC (Raft included) without TLS, Consul's
// default. Consul is not in Debian; docs/performance.md says how to build
// 1.16.3 from the Go module proxy.
type Consul struct {
	URL     string // the leader's HTTP address, http://127.0.0.1:PORT
	Token   string // the initial management token
	Version string
	Servers int
	dir     string
	procs   []*consulProc
	leader  int // index in procs
}

// consulProc is one server process.
type consulProc struct {
	ports  ConsulPorts
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// ConsulPorts are one server's listeners on 127.0.0.1; DNS, gRPC and the
// WAN gossip are off (-1 in its config).
type ConsulPorts struct {
	HTTP, Server, SerfLAN int // Server: RPC, Raft's transport among them
}

// MaxConsulServers bounds the datacenter's size.
const MaxConsulServers = 7

// consulPortsFrom lays free ports out over servers, three each, in order:
// HTTP, server RPC, Serf LAN. They must be distinct.
func consulPortsFrom(free []int, servers int) ([]ConsulPorts, error) {
	if servers < 1 || servers > MaxConsulServers {
		return nil, fmt.Errorf("consul: %d servers; want 1 to %d", servers, MaxConsulServers)
	}
	if len(free) != 3*servers {
		return nil, fmt.Errorf("consul: %d ports for %d servers; want %d", len(free), servers, 3*servers)
	}
	seen := map[int]bool{}
	for _, p := range free {
		if p < 1 || p > 65535 || seen[p] {
			return nil, fmt.Errorf("consul: port %d out of range or given twice", p)
		}
		seen[p] = true
	}
	out := make([]ConsulPorts, servers)
	for i := range out {
		out[i] = ConsulPorts{HTTP: free[3*i], Server: free[3*i+1], SerfLAN: free[3*i+2]}
	}
	return out, nil
}

// consulConfig is the part of Consul's agent configuration (its JSON
// spelling) a reference server sets.
type consulConfig struct {
	NodeName        string   `json:"node_name"`
	Server          bool     `json:"server"`
	BootstrapExpect int      `json:"bootstrap_expect"`
	BindAddr        string   `json:"bind_addr"`
	ClientAddr      string   `json:"client_addr"`
	DataDir         string   `json:"data_dir"`
	LogLevel        string   `json:"log_level"`
	RetryJoin       []string `json:"retry_join,omitempty"`
	RetryInterval   string   `json:"retry_interval"`
	// No request to HashiCorp's update service: the bench stays on loopback.
	DisableUpdateCheck bool `json:"disable_update_check"`
	Ports              struct {
		HTTP    int `json:"http"`
		Server  int `json:"server"`
		SerfLAN int `json:"serf_lan"`
		SerfWAN int `json:"serf_wan"`
		DNS     int `json:"dns"`
		GRPC    int `json:"grpc"`
		GRPCTLS int `json:"grpc_tls"`
	} `json:"ports"`
	ACL struct {
		Enabled       bool   `json:"enabled"`
		DefaultPolicy string `json:"default_policy"`
		Tokens        struct {
			InitialManagement string `json:"initial_management"`
		} `json:"tokens"`
	} `json:"acl"`
}

// consulServerConfig renders server i of all as Consul JSON: its own
// ports, its data under dir/sI/data, bootstrap_expect the datacenter's
// size and retry_join every other server's Serf LAN address.
func consulServerConfig(dir, token string, i int, all []ConsulPorts) ([]byte, error) {
	var c consulConfig
	c.NodeName = fmt.Sprintf("bench%d", i)
	c.Server, c.BootstrapExpect = true, len(all)
	c.BindAddr, c.ClientAddr = "127.0.0.1", "127.0.0.1"
	c.DataDir = filepath.Join(dir, fmt.Sprintf("s%d", i), "data")
	c.LogLevel = "warn"
	// The servers start one after another: the first ones' joins fail
	// until the others listen, and Consul's default retry is 30 s away.
	c.RetryInterval = "1s"
	c.DisableUpdateCheck = true
	for j, p := range all {
		if j != i {
			c.RetryJoin = append(c.RetryJoin, net.JoinHostPort("127.0.0.1", strconv.Itoa(p.SerfLAN)))
		}
	}
	c.Ports.HTTP, c.Ports.Server, c.Ports.SerfLAN = all[i].HTTP, all[i].Server, all[i].SerfLAN
	c.Ports.SerfWAN, c.Ports.DNS, c.Ports.GRPC, c.Ports.GRPCTLS = -1, -1, -1, -1
	c.ACL.Enabled, c.ACL.DefaultPolicy, c.ACL.Tokens.InitialManagement = true, "deny", token
	return json.MarshalIndent(c, "", "  ")
}

// StartConsul starts bin as a datacenter of servers servers under dir
// (each in dir/sI) and waits until every server knows the same leader,
// the Raft configuration holds them all, and the leader accepts the
// management token. On failure every started server is stopped.
func StartConsul(ctx context.Context, bin, dir string, servers int) (*Consul, error) {
	if servers < 1 || servers > MaxConsulServers {
		return nil, fmt.Errorf("consul: %d servers; want 1 to %d", servers, MaxConsulServers)
	}
	ver, err := exec.Command(bin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", bin, err)
	}
	free := make([]int, 3*servers)
	for i := range free {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		_, p, _ := net.SplitHostPort(a)
		free[i], _ = strconv.Atoi(p)
	}
	ports, err := consulPortsFrom(free, servers)
	if err != nil {
		return nil, err
	}
	c := &Consul{Token: NewToken(), Version: strings.TrimSpace(strings.SplitN(string(ver), "\n", 2)[0]), Servers: servers, dir: dir}
	for i := range ports {
		if err := c.startServer(bin, i, ports); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.waitLeader(ctx, 60*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Consul) startServer(bin string, i int, all []ConsulPorts) error {
	sdir := filepath.Join(c.dir, fmt.Sprintf("s%d", i))
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return err
	}
	config, err := consulServerConfig(c.dir, c.Token, i, all)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(sdir, "consul.json")
	if err := os.WriteFile(cfgPath, config, 0o600); err != nil {
		return err
	}
	p := &consulProc{ports: all[i], log: filepath.Join(sdir, "consul.log"), exited: make(chan struct{})}
	log, err := os.Create(p.log)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(bin, "agent", "-config-file="+cfgPath)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	go func() { p.cmd.Wait(); log.Close(); close(p.exited) }()
	c.procs = append(c.procs, p)
	return nil
}

// waitLeader polls every server until they name the same leader, whose
// Raft configuration has every server and which resolves the token (the
// leader has bootstrapped the ACL system).
func (c *Consul) waitLeader(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		why := c.leaderReady(ctx)
		if why == "" {
			return nil
		}
		for i, p := range c.procs {
			select {
			case <-p.exited:
				return fmt.Errorf("consul server %d exited (log: %s)", i, p.log)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consul not ready after %s: %s", timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leaderReady is "" once the datacenter is ready, else what is missing.
func (c *Consul) leaderReady(ctx context.Context) string {
	leader := ""
	for i, p := range c.procs {
		var l string
		if why := c.getJSON(ctx, p, "/v1/status/leader", &l); why != "" {
			return fmt.Sprintf("server %d: %s", i, why)
		}
		if l == "" || (leader != "" && l != leader) {
			return fmt.Sprintf("server %d names leader %q (others %q)", i, l, leader)
		}
		leader = l
	}
	_, port, _ := net.SplitHostPort(leader)
	n, _ := strconv.Atoi(port)
	li := slices.IndexFunc(c.procs, func(p *consulProc) bool { return p.ports.Server == n })
	if li < 0 {
		return "the leader " + leader + " is none of the servers started"
	}
	var peers []string
	if why := c.getJSON(ctx, c.procs[li], "/v1/status/peers", &peers); why != "" {
		return why
	}
	if len(peers) != len(c.procs) {
		return fmt.Sprintf("%d of %d servers in the Raft configuration", len(peers), len(c.procs))
	}
	var self struct{ AccessorID string }
	if why := c.getJSON(ctx, c.procs[li], "/v1/acl/token/self", &self); why != "" {
		return "the management token: " + why
	}
	c.leader, c.URL = li, c.procs[li].url()
	return ""
}

func (p *consulProc) url() string { return "http://127.0.0.1:" + strconv.Itoa(p.ports.HTTP) }

func (c *Consul) getJSON(ctx context.Context, p *consulProc, path string, v any) string {
	cl := NewClient(p.url(), 1)
	cl.Token, cl.TokenHeader = c.Token, ConsulTokenHeader
	r := cl.Get(ctx, path, 5*time.Second)
	if f := r.Failure(); f != "" {
		return f
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	return ""
}

// ConsulTokenHeader is the header Consul reads a token from.
const ConsulTokenHeader = "X-Consul-Token"

// Pid is the leader's process.
func (c *Consul) Pid() int { return c.procs[c.leader].cmd.Process.Pid }

// Stop sends SIGTERM to every server and waits (SIGKILL after 10 s).
func (c *Consul) Stop() {
	for _, p := range c.procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
}
