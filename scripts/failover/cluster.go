package main

// The cluster under test: its certificates, its three servers, their shutdown.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// node is one server of the cluster and a client of its HTTP API.
type node struct {
	*benchutil.Agent
	c *benchutil.Client
}

type cluster struct {
	dir   string
	nodes []*node
}

// makeCerts creates a CA and a server certificate in dir with `ctlplane tls`
// and returns the agent flags that use them.
func makeCerts(bin, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"tls", "ca", "create"}, {"tls", "cert", "create", "-server"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return []string{
		"-tls-ca-file=" + filepath.Join(dir, "ctlplane-agent-ca.pem"),
		"-tls-cert-file=" + filepath.Join(dir, "dc1-server-ctlplane-0.pem"),
		"-tls-key-file=" + filepath.Join(dir, "dc1-server-ctlplane-0-key.pem"),
	}, nil
}

// startCluster starts three servers that form a cluster through
// -bootstrap-expect=3 and -join, and waits until each answers a stale list.
func startCluster(bin, dir string, cfg config) (*cluster, error) {
	cl := &cluster{dir: dir}
	addrs := map[string]bool{}
	for len(addrs) < 6 {
		a, err := benchutil.FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[a] = true
	}
	var all []string
	for a := range addrs {
		all = append(all, a)
	}
	httpAddrs, raftAddrs := all[:3], all[3:]
	var joins []string
	for _, h := range httpAddrs {
		joins = append(joins, "-join="+h)
	}
	// ACLs are on, as by default; every request uses the management token.
	token := benchutil.NewToken()
	// Raft is mutual TLS, as a multi-server cluster needs by default.
	tlsArgs, err := makeCerts(bin, filepath.Join(dir, "tls"))
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		name := fmt.Sprintf("n%d", i+1)
		args := append([]string{"-bootstrap-expect=3", "-raft-timeout=" + cfg.raftTimeout.String(),
			"-acl-initial-management-token=" + token}, append(joins, tlsArgs...)...)
		a, err := benchutil.StartAgent(benchutil.AgentConfig{
			Bin: bin, Name: name, DataDir: filepath.Join(dir, name), HTTPAddr: httpAddrs[i], RaftAddr: raftAddrs[i],
			LogPath: filepath.Join(dir, name+".log"), Args: args,
		})
		if err != nil {
			return cl, err
		}
		c := benchutil.NewClient(a.URL, 16)
		c.Token = token
		cl.nodes = append(cl.nodes, &node{Agent: a, c: c})
		fmt.Fprintf(os.Stderr, "failover: started %s pid %d http %s raft %s\n", name, a.Pid(), a.HTTPAddr, a.RaftAddr)
	}
	return cl, nil
}

// shutdown stops every server, reports what they logged, and removes the
// directory unless keep.
func (cl *cluster) shutdown(keep bool) {
	for _, n := range cl.nodes {
		if code := n.Stop(30 * time.Second); code != 0 && code != -1 {
			fmt.Fprintf(os.Stderr, "failover: %s exited with status %d\n", n.Name, code)
		}
		n.c.Transport.CloseIdleConnections()
	}
	for _, n := range cl.nodes {
		// Raft's complaints about reaching a killed peer are expected;
		// show the rest.
		lines, count := n.LogIssues(1 << 20)
		var errs []string
		raftErrs := 0
		for _, l := range lines {
			switch {
			case strings.Contains(l, "[WARN]"):
			case strings.Contains(l, "[ERROR] ctlplane.raft"): // raft, raft-net
				raftErrs++
			default:
				errs = append(errs, l)
			}
		}
		fmt.Fprintf(os.Stderr, "failover: %s logged %d warning/error lines: %d Raft/transport errors (a peer was down), %d other errors\n",
			n.Name, count, raftErrs, len(errs))
		for i, l := range errs {
			if i == 5 {
				fmt.Fprintf(os.Stderr, "failover:   ... %d more\n", len(errs)-5)
				break
			}
			fmt.Fprintf(os.Stderr, "failover:   %s\n", l)
		}
	}
	if keep {
		fmt.Fprintf(os.Stderr, "failover: kept %s\n", cl.dir)
		return
	}
	os.RemoveAll(cl.dir)
}
