package main

// The agent under test: starting it, saving a snapshot into a file, reading what inspect printed.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// fileSink is a raft.SnapshotSink into a file.
type fileSink struct {
	f  *os.File
	bw *bufio.Writer
}

func newFileSink(path string) (*fileSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &fileSink{f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (s *fileSink) Write(p []byte) (int, error) { return s.bw.Write(p) }
func (s *fileSink) ID() string                  { return "bench" }

func (s *fileSink) Close() error {
	err := s.bw.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *fileSink) Cancel() error {
	s.f.Close()
	return os.Remove(s.f.Name())
}

// startAgent starts a persistent single-node server with its data in dir,
// ACLs on (the default) and token as its initial management token, and
// waits until it leads.
func startAgent(ctx context.Context, bin, dir, token string) (*benchutil.Agent, error) {
	httpAddr, err := benchutil.FreeAddr()
	if err != nil {
		return nil, err
	}
	raftAddr, err := benchutil.FreeAddr()
	if err != nil {
		return nil, err
	}
	a, err := benchutil.StartAgent(benchutil.AgentConfig{
		Bin: bin, Name: "snapbench", DataDir: filepath.Join(dir, "data"), HTTPAddr: httpAddr, RaftAddr: raftAddr,
		LogPath: filepath.Join(dir, "agent.log"), Args: []string{"-bootstrap-expect=1", "-acl-initial-management-token=" + token},
	})
	if err != nil {
		return nil, err
	}
	c := benchutil.NewClient(a.URL, 1)
	c.Token = token
	defer c.Transport.CloseIdleConnections()
	if err := c.WaitReady(ctx, 30*time.Second, a.Exited()); err != nil {
		a.Stop(10 * time.Second)
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "snapbench: started ctlplane pid %d on %s\n", a.Pid(), a.URL)
	return a, nil
}

// save downloads a snapshot archive into path and returns how long that
// took, from sending the request until the body is fully read, and its size.
func save(ctx context.Context, hc *http.Client, base, token, path string) (time.Duration, int64, error) {
	out, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	defer out.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/snapshot", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("X-Service-Token", token)
	t := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, benchutil.Truncate(string(msg), 200))
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	n, err := io.Copy(bw, resp.Body)
	d := time.Since(t)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return 0, 0, err
	}
	return d, n, nil
}

// inspectedRules finds the binding-rule count in `snapshot inspect` output.
func inspectedRules(out string) int {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == rulesTable {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}
