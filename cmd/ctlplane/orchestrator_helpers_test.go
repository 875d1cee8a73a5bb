package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// Helpers of the orchestrator's subprocess tests: agents run as the test
// binary, tasks are real processes (raw_exec) that write their pids to a
// directory the test watches and, whatever happens, kills at the end.

// taskPids is a directory where test tasks write their pids
// ($PIDDIR/<alloc>.pid, and .child for a child they start). Every process
// named there (and its process group) is killed when the test ends.
func taskPids(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		for _, pid := range readPids(dir, "") {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return dir
}

// readPids reads the pids of the files of dir with the suffix ("" for all).
func readPids(dir, suffix string) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if suffix != "" && !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		buf, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(buf))); err == nil && pid > 0 {
			out[e.Name()] = pid
		}
	}
	return out
}

// waitPids waits until n files with the suffix hold pids.
func waitPids(t *testing.T, dir, suffix string, n int) map[string]int {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		got := readPids(dir, suffix)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s pid files in %s, want %d", len(got), suffix, dir, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(buf)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func requireAlive(t *testing.T, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		if !alive(pid) {
			t.Fatalf("task process %s (%d) is not running", name, pid)
		}
	}
}

func waitAllDead(t *testing.T, pids map[string]int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for name, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %s (%d) still runs", name, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// jobSpec is a one-group raw_exec job.
type jobSpec struct {
	id      string
	count   int
	script  string
	env     map[string]string
	update  map[string]any // nil: MaxParallel 1, task_states, MinHealthyTime 300ms, auto_revert
	restart map[string]any
}

// write writes the job as Nomad's JSON job file and returns its path.
func (j jobSpec) write(t *testing.T, pidDir string) string {
	t.Helper()
	update := map[string]any{"MaxParallel": 1, "HealthCheck": "task_states", "MinHealthyTime": int64(300 * time.Millisecond),
		"HealthyDeadline": int64(30 * time.Second), "ProgressDeadline": int64(60 * time.Second), "AutoRevert": true}
	for k, v := range j.update {
		update[k] = v
	}
	env := map[string]string{"PIDDIR": pidDir}
	for k, v := range j.env {
		env[k] = v
	}
	task := map[string]any{"Name": "main", "Driver": "raw_exec", "Env": env, "KillTimeout": int64(2 * time.Second),
		"Config": map[string]any{"command": "/bin/sh", "args": []string{"-c", j.script}}, "Resources": map[string]any{"CPU": 50, "MemoryMB": 16}}
	group := map[string]any{"Name": "app", "Count": j.count, "Tasks": []any{task}}
	if j.restart != nil {
		group["RestartPolicy"] = j.restart
	}
	job := map[string]any{"Job": map[string]any{"ID": j.id, "Name": j.id, "Type": "service", "Datacenters": []string{"dc1"},
		"Update": update, "TaskGroups": []any{group}}}
	buf, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), j.id+".json")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sleepScript is a long-running task that records its pid and a child's.
const sleepScript = `sleep 3600 & echo $! > "$PIDDIR/$NOMAD_ALLOC_ID.child"; echo $$ > "$PIDDIR/$NOMAD_ALLOC_ID.pid"; echo "ready $NOMAD_ALLOC_INDEX"; wait`

// stopOnCleanup stops an agent with SIGTERM when the test ends, so that a
// dev agent kills its tasks (the kill registered by startProc comes after).
func stopOnCleanup(t *testing.T, a *agent) {
	t.Cleanup(func() {
		select {
		case <-a.done:
			return
		default:
		}
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(20 * time.Second):
		}
	})
}

// dynamicPortArgs give a client node its own dynamic port range (see
// servertest.DynamicPortRange): its tasks then never meet those of a dev
// agent running beside the tests, which hands out ports from 20000 up.
func dynamicPortArgs(t *testing.T) []string {
	lo, hi := servertest.DynamicPortRange(t)
	return []string{"-min-dynamic-port=" + strconv.Itoa(lo), "-max-dynamic-port=" + strconv.Itoa(hi)}
}

// devAgent starts `agent -dev` (a server and a raw_exec client, with its
// own dynamic port range) and waits until it listens. extra flags go
// after -dev.
func devAgent(t *testing.T, extra ...string) (*agent, *api.Client) {
	t.Helper()
	args := append(append([]string{"agent", "-dev", "-http-addr=127.0.0.1:0"}, dynamicPortArgs(t)...), extra...)
	a := spawnAgent(t, "dev agent", args)
	stopOnCleanup(t, a)
	ac, err := api.NewClient(api.Config{Address: a.url})
	if err != nil {
		t.Fatal(err)
	}
	return a, ac
}

// waitNodes waits until n nodes are ready.
func waitNodes(t *testing.T, ac *api.Client, n int) []*api.Node {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		nodes, _, err := ac.Nodes(context.Background(), nil)
		ready := 0
		for _, nd := range nodes {
			if nd.Status == api.NodeStatusReady {
				ready++
			}
		}
		if err == nil && ready >= n {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ready nodes, want %d (%v)", ready, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clientAgent is `agent -client` as its own process.
type clientAgent struct {
	*proc
	nodeID string
}

var clientStartedRE = regexp.MustCompile(`client agent started: .*node_id=([0-9a-f-]+)`)

// startClientAgent starts a client agent with raw_exec enabled.
func startClientAgent(t *testing.T, args ...string) *clientAgent {
	t.Helper()
	return startClientAgentArgs(t, append([]string{"-enable-raw-exec"}, args...)...)
}

// startClientAgentArgs starts `agent -client args...`.
func startClientAgentArgs(t *testing.T, args ...string) *clientAgent {
	t.Helper()
	p := startProc(t, append(append([]string{"agent", "-client"}, dynamicPortArgs(t)...), args...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client agent stderr:\n%s", logTail(p.stderr.String()))
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		if m := clientStartedRE.FindStringSubmatch(p.stderr.String()); m != nil {
			return &clientAgent{proc: p, nodeID: m[1]}
		}
		select {
		case <-p.done:
			t.Fatalf("client agent exited: %v\n%s", p.err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the client agent did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allocsOf lists a job's allocations.
func allocsOf(t *testing.T, ac *api.Client, job string) []*api.AllocationListStub {
	t.Helper()
	allocs, _, err := ac.JobAllocations(context.Background(), job, nil)
	if err != nil {
		t.Fatal(err)
	}
	return allocs
}

func mustCode(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errOut := ctl(args...)
	if code != want {
		t.Fatalf("ctlplane %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// mustCodeRetry is mustCode that tries again while the cluster has no
// leader (an election under load on a small machine): writes need one.
func mustCodeRetry(t *testing.T, want int, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		code, out, errOut := ctl(args...)
		if code == want {
			return out
		}
		transient := strings.Contains(errOut, "No cluster leader") || strings.Contains(errOut, "connection refused") ||
			strings.Contains(errOut, fmt.Sprint(http.StatusServiceUnavailable))
		if !transient || time.Now().After(deadline) {
			t.Fatalf("ctlplane %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
