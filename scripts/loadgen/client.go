package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// agent is a ctlplane server this tool started.
type agent struct {
	*benchutil.Agent
	dir   string
	token string // the initial management token
}

// spawnAgent starts the ctlplane binary bin as a persistent single node on
// free ports in a new temporary directory, with ACLs on (the default) and a
// management token for the load.
func spawnAgent(ctx context.Context, bin string, extraArgs []string) (*agent, error) {
	dir, err := os.MkdirTemp("", "ctlplane-loadgen-")
	if err != nil {
		return nil, err
	}
	httpAddr, err := benchutil.FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	raftAddr, err := benchutil.FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	token := benchutil.NewToken()
	ba, err := benchutil.StartAgent(benchutil.AgentConfig{
		Bin: bin, Name: "bench", DataDir: filepath.Join(dir, "data"), HTTPAddr: httpAddr, RaftAddr: raftAddr,
		LogPath: filepath.Join(dir, "agent.log"), Args: append([]string{"-bootstrap-expect=1", "-acl-initial-management-token=" + token, "-http-max-conns-per-client=0"}, extraArgs...),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	a := &agent{Agent: ba, dir: dir, token: token}
	fmt.Fprintf(os.Stderr, "loadgen: started ctlplane pid %d on %s, data in %s\n", a.Pid(), a.URL, a.DataDir)
	c := benchutil.NewClient(a.URL, 1)
	c.Token = token
	defer c.Transport.CloseIdleConnections()
	if err := c.WaitReady(ctx, 30*time.Second, a.Exited()); err != nil {
		a.stop()
		return nil, err
	}
	return a, nil
}

// stop sends SIGTERM, waits for a clean exit (kills after 30s), reports the
// warnings and errors the server logged, and deletes the directory.
func (a *agent) stop() {
	if code := a.Stop(30 * time.Second); code != 0 {
		fmt.Fprintf(os.Stderr, "loadgen: server exited with status %d\n", code)
	}
	lines, n := a.LogIssues(10)
	for _, line := range lines {
		fmt.Fprintln(os.Stderr, "loadgen: server log:", line)
	}
	fmt.Fprintf(os.Stderr, "loadgen: server logged %d warning/error lines\n", n)
	os.RemoveAll(a.dir)
}
