package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/ctlplane/ctlplane/api"
)

// A dev agent runs a 3-count raw_exec job to successful through `job run`;
// the CLI shows it; `job stop` kills every task's whole process group.
func TestCLIJobRunRawExecOnDevAgent(t *testing.T) {
	pids := taskPids(t)
	a, ac := devAgent(t)
	waitNodes(t, ac, 1)
	file := jobSpec{id: "web", count: 3, script: sleepScript}.write(t, pids)
	addr := "-address=" + a.url

	out := mustCode(t, 0, "job", "run", addr, file)
	for _, want := range []string{`Monitoring evaluation "`, `Monitoring deployment "`, "successful", "placed 3/3"} {
		if !strings.Contains(out, want) {
			t.Errorf("job run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("job run redrew its output although stdout is not a terminal:\n%s", out)
	}
	mains, children := waitPids(t, pids, ".pid", 3), waitPids(t, pids, ".child", 3)
	requireAlive(t, mains)
	requireAlive(t, children)

	status := mustCode(t, 0, "job", "status", addr, "web")
	if n := strings.Count(status, " healthy "); n != 3 || !strings.Contains(status, "Status      = running") {
		t.Errorf("job status:\n%s", status)
	}
	allocs := allocsOf(t, ac, "web")
	logs := mustCode(t, 0, "alloc", "logs", addr, allocs[0].ID[:6])
	if !strings.HasPrefix(logs, "ready ") {
		t.Errorf("alloc logs: %q", logs)
	}
	if st := mustCode(t, 0, "alloc", "status", addr, allocs[0].ID[:5]); !strings.Contains(st, `Task "main" is "running"`) || !strings.Contains(st, "Started") {
		t.Errorf("alloc status:\n%s", st)
	}
	if ns := mustCode(t, 0, "node", "status", addr); !strings.Contains(ns, "raw_exec") || !strings.Contains(ns, "ready") {
		t.Errorf("node status:\n%s", ns)
	}
	if dl := mustCode(t, 0, "deployment", "list", addr); !strings.Contains(dl, "successful") {
		t.Errorf("deployment list:\n%s", dl)
	}

	mustCode(t, 0, "job", "stop", addr, "web")
	// The tasks' children ignore SIGINT (started in the background by a
	// shell): only the kill of the whole group ends them.
	waitAllDead(t, mains)
	waitAllDead(t, children)
	mustCode(t, 0, "job", "stop", "-purge", addr, "web")
	if code, _, errOut := ctl("job", "status", addr, "web"); code != 1 || !strings.Contains(errOut, `No job(s) with prefix or id "web" found`) {
		t.Errorf("job status after a purge: %d %s", code, errOut)
	}
}

// A new version whose task keeps exiting non-zero is restarted per its
// policy, fails the deployment (exit 2) and is rolled back to the stable version.
func TestCLIFailingVersionAutoReverts(t *testing.T) {
	pids := taskPids(t)
	a, ac := devAgent(t)
	waitNodes(t, ac, 1)
	addr := "-address=" + a.url
	mustCode(t, 0, "job", "run", addr, jobSpec{id: "api", count: 2, script: sleepScript}.write(t, pids))

	bad := jobSpec{id: "api", count: 2, script: `echo "crashing"; exit 7`,
		restart: map[string]any{"Attempts": 1, "Interval": int64(time.Minute), "Delay": int64(200 * time.Millisecond), "Mode": "fail"}}
	out := mustCode(t, 2, "job", "run", addr, bad.write(t, pids))
	if !strings.Contains(out, "failed") || !strings.Contains(out, "rolling back to job version 0") {
		t.Errorf("job run of the failing version:\n%s", out)
	}
	var failed *api.AllocationListStub
	for _, al := range allocsOf(t, ac, "api") {
		if al.JobVersion == 1 && al.ClientStatus == api.AllocClientStatusFailed {
			failed = al
		}
	}
	if failed == nil {
		t.Fatalf("no failed allocation of version 1: %+v", allocsOf(t, ac, "api"))
	}
	st := mustCode(t, 0, "alloc", "status", addr, failed.ID)
	for _, want := range []string{"Not Restarting", "Restarting", "Exit Code: 7", "Terminated"} {
		if !strings.Contains(st, want) {
			t.Errorf("failed alloc status lacks %q:\n%s", want, st)
		}
	}
	// The rollback registered version 0's spec as version 2, which deploys.
	waitFor(t, "the rollback's deployment to succeed", func() bool {
		d, _, err := ac.JobLatestDeployment(context.Background(), "api", nil)
		return err == nil && d != nil && d.JobVersion == 2 && d.Status == api.DeploymentStatusSuccessful
	})
	hist := mustCode(t, 0, "job", "history", addr, "api")
	if !strings.Contains(hist, "Version     = 2") {
		t.Errorf("job history:\n%s", hist)
	}
}

// `deployment status -monitor` follows a canary rollout to its promotion:
// redrawn in place on a pseudo-terminal, plain lines otherwise.
func TestCLIDeploymentMonitorTerminalAndPlain(t *testing.T) {
	pids := taskPids(t)
	a, ac := devAgent(t)
	waitNodes(t, ac, 1)
	addr := "-address=" + a.url
	spec := jobSpec{id: "canary", count: 2, script: sleepScript, update: map[string]any{"Canary": 1}}
	mustCode(t, 0, "job", "run", addr, spec.write(t, pids))
	spec.env = map[string]string{"VERSION": "2"}
	mustCode(t, 0, "job", "run", "-detach", addr, spec.write(t, pids))
	var dep *api.Deployment
	waitFor(t, "the canary deployment", func() bool {
		d, _, err := ac.JobLatestDeployment(context.Background(), "canary", nil)
		dep = d
		return err == nil && d != nil && d.JobVersion == 1
	})
	prefix := dep.ID[:7]

	// On a terminal: a subprocess on a pty.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "deployment", "status", "-monitor", addr, prefix)
	cmd.Env = append(os.Environ(), agentEnv+"=1")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); tty.Close() })
	var ttyOut lockedBuffer
	ttyDone := make(chan struct{})
	go func() { _, _ = io.Copy(&ttyOut, tty); close(ttyDone) }()

	// Not a terminal: in-process, into a buffer.
	var plainOut bytes.Buffer
	var plainCode int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		plainCode = run([]string{"deployment", "status", "-monitor", addr, prefix}, &plainOut, io.Discard)
	}()

	waitFor(t, "the monitor to show the canary awaiting promotion", func() bool {
		return strings.Contains(ttyOut.String(), "requires manual promotion")
	})
	waitFor(t, "the canary to be healthy", func() bool {
		d, _, err := ac.Deployment(context.Background(), dep.ID, nil)
		return err == nil && d.TaskGroups["app"].HealthyAllocs >= 1
	})
	mustCode(t, 0, "deployment", "promote", addr, prefix)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("monitor on a terminal: %v\n%s", err, ttyOut.String())
	}
	select {
	case <-ttyDone:
	case <-time.After(5 * time.Second):
	}
	wg.Wait()

	term := ttyOut.String()
	if !strings.Contains(term, "\x1b[") || !strings.Contains(term, "in progress...") || !strings.Contains(term, "✓ Deployment") ||
		!strings.Contains(term, "Canaries") {
		t.Errorf("terminal output:\n%q", term)
	}
	plain := plainOut.String()
	if plainCode != 0 || strings.Contains(plain, "\x1b[") || !strings.Contains(plain, "canaries 1/1") ||
		!strings.Contains(plain, "(promoted)") || !strings.Contains(plain, "✓ Deployment") {
		t.Errorf("plain output (exit %d):\n%s", plainCode, plain)
	}
}

// `alloc logs -f` streams a task's lines as they are written.
func TestCLIAllocLogsFollow(t *testing.T) {
	pids := taskPids(t)
	a, ac := devAgent(t)
	waitNodes(t, ac, 1)
	addr := "-address=" + a.url
	script := `echo $$ > "$PIDDIR/$NOMAD_ALLOC_ID.pid"; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.4; done`
	mustCode(t, 0, "job", "run", addr, jobSpec{id: "ticker", count: 1, script: script}.write(t, pids))
	alloc := allocsOf(t, ac, "ticker")[0]

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "alloc", "logs", "-f", addr, alloc.ID[:8])
	cmd.Env = append(os.Environ(), agentEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	var first time.Time
	seen := 0
	for seen < 8 && sc.Scan() {
		if seen == 0 {
			first = time.Now()
		}
		seen++
		if !strings.HasPrefix(sc.Text(), "tick ") {
			t.Fatalf("line %d: %q", seen, sc.Text())
		}
	}
	if seen < 8 {
		t.Fatalf("the stream ended after %d lines: %v", seen, sc.Err())
	}
	// Eight lines written 0.4s apart cannot all have been there at the start.
	if took := time.Since(first); took < time.Second {
		t.Errorf("8 lines in %v: not streamed as written", took)
	}
}

// A client agent started on its own with -servers joins a 3-server
// cluster, runs a job, and keeps its tasks through the leader's death;
// then it follows the new leader (a stop reaches it).
func TestClientAgentSurvivesLeaderKill(t *testing.T) {
	pids := taskPids(t)
	members := newMembers(t, 3)
	agents := make([]*agent, 3)
	var urls []string
	for i, m := range members {
		agents[i] = spawnAgent(t, m.name, []string{"agent", "-data-dir=" + m.dataDir, "-node=" + m.name, "-bind=" + m.raftAddr(),
			"-http-addr=" + m.httpAddr(), "-bootstrap-expect=3", "-raft-timeout=300ms", "-insecure-raft",
			"-acl-initial-management-token=" + testManagementToken, "-join=" + members[0].httpAddr(),
			"-join=" + members[1].httpAddr(), "-join=" + members[2].httpAddr()})
		urls = append(urls, m.httpAddr())
	}
	leader := leaderOf(t, agents, members)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testManagementToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := startClientAgent(t, "-servers="+strings.Join(urls, ","), "-data-dir="+t.TempDir(), "-node=worker-1", "-node-token-file="+tokenFile)
	ac, err := api.NewClient(api.Config{Address: leader.url, Token: testManagementToken})
	if err != nil {
		t.Fatal(err)
	}
	waitNodes(t, ac, 1)
	token := "-token=" + testManagementToken
	mustCodeRetry(t, 0, "job", "run", "-address="+leader.url, token, jobSpec{id: "svc", count: 2, script: sleepScript}.write(t, pids))
	mains := waitPids(t, pids, ".pid", 2)
	// Logs through the servers, which forward to the client's own address:
	// both check the token.
	alloc := allocsOf(t, ac, "svc")[0]
	if logs := mustCode(t, 0, "alloc", "logs", "-address="+leader.url, token, alloc.ID); !strings.HasPrefix(logs, "ready ") {
		t.Errorf("alloc logs with ACLs: %q", logs)
	}
	resp, err := http.Get(leader.url + "/v1/client/fs/logs/" + alloc.ID + "?task=main&type=stdout")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "Permission denied") {
		t.Errorf("logs without a token: %d %s", resp.StatusCode, body)
	}

	leader.kill(t)
	var rest []*agent
	var restMembers []*member
	for i, ag := range agents {
		if ag != leader {
			rest, restMembers = append(rest, ag), append(restMembers, members[i])
		}
	}
	// The survivors elect a new leader; the old one stays in the configuration.
	var next *agent
	waitFor(t, "a new leader", func() bool {
		for _, ag := range rest {
			if l, _, err := clusterState(ag); err == nil && l != "" {
				for i, m := range restMembers {
					if m.raftAddr() == l {
						next = rest[i]
						return true
					}
				}
			}
		}
		return false
	})
	requireAlive(t, mains)
	ac2, _ := api.NewClient(api.Config{Address: next.url, Token: testManagementToken})
	waitFor(t, "the node to heartbeat through the new leader", func() bool {
		n, _, err := ac2.Node(context.Background(), ca.nodeID, nil)
		return err == nil && n.Status == api.NodeStatusReady
	})
	requireAlive(t, mains)
	mustCodeRetry(t, 0, "job", "stop", "-address="+next.url, token, "svc")
	waitAllDead(t, mains)
}

// A client agent killed and started again on its -data-dir re-attaches to
// the processes it started: same pids, no restart; they stay under its control.
func TestClientAgentRestartReattaches(t *testing.T) {
	pids := taskPids(t)
	srv, ac := devAgent(t, "-dev-nodes=0")
	dataDir := t.TempDir()
	port := strconv.Itoa(memberPort(t))
	ca := startClientAgent(t, "-servers="+srv.url, "-data-dir="+dataDir, "-node=worker",
		"-http-addr=127.0.0.1:"+port, "-http-advertise=localhost:"+port)
	if nodes := waitNodes(t, ac, 1); nodes[0].HTTPAddr != "localhost:"+port {
		t.Errorf("node HTTPAddr %q, want the advertised localhost:%s", nodes[0].HTTPAddr, port)
	}
	addr := "-address=" + srv.url
	mustCode(t, 0, "job", "run", addr, jobSpec{id: "keep", count: 2, script: sleepScript}.write(t, pids))
	mains := waitPids(t, pids, ".pid", 2)
	if logs := mustCode(t, 0, "alloc", "logs", addr, allocsOf(t, ac, "keep")[0].ID); !strings.HasPrefix(logs, "ready ") {
		t.Errorf("logs through the advertised address: %q", logs)
	}

	if err := ca.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ca.done
	requireAlive(t, mains)
	ca2 := startClientAgent(t, "-servers="+srv.url, "-data-dir="+dataDir, "-node=worker")
	if ca2.nodeID != ca.nodeID {
		t.Fatalf("restarted client is node %s, was %s", ca2.nodeID, ca.nodeID)
	}
	waitFor(t, "the client to re-attach", func() bool { return strings.Contains(ca2.stderr.String(), "re-attached to a task") })
	requireAlive(t, mains)
	for _, al := range allocsOf(t, ac, "keep") {
		if al.ClientStatus != api.AllocClientStatusRunning || al.TaskStates["main"].Restarts != 0 {
			t.Errorf("after the restart: %s %s restarts=%d", al.ID, al.ClientStatus, al.TaskStates["main"].Restarts)
		}
	}
	if got := readPids(pids, ".pid"); len(got) != 2 {
		t.Errorf("tasks were started again: %v", got)
	}
	mustCode(t, 0, "job", "stop", addr, "keep")
	waitAllDead(t, mains)
}

// While its only server is down, a client agent keeps its tasks running
// and retries; once the server is back it carries on (a stop reaches it).
func TestClientAgentKeepsTasksWhileServersDown(t *testing.T) {
	pids := taskPids(t)
	dataDir, raftPort, httpPort := t.TempDir(), memberPort(t), memberPort(t)
	httpAddr := "127.0.0.1:" + strconv.Itoa(httpPort)
	args := []string{"agent", "-data-dir=" + dataDir, "-node=n1", "-bind=127.0.0.1:" + strconv.Itoa(raftPort), "-http-addr=" + httpAddr,
		"-bootstrap-expect=1", "-raft-timeout=200ms", "-acl-initial-management-token=" + testManagementToken}
	srv := spawnAgent(t, "server", args)
	t.Setenv("CTLPLANE_NODE_TOKEN", testManagementToken)
	ca := startClientAgent(t, "-servers="+httpAddr, "-data-dir="+t.TempDir(), "-node=worker")
	ac, err := api.NewClient(api.Config{Address: srv.url, Token: testManagementToken})
	if err != nil {
		t.Fatal(err)
	}
	waitNodes(t, ac, 1)
	token := "-token=" + testManagementToken
	mustCodeRetry(t, 0, "job", "run", "-address="+srv.url, token, jobSpec{id: "steady", count: 2, script: sleepScript}.write(t, pids))
	mains := waitPids(t, pids, ".pid", 2)

	srv.kill(t)
	time.Sleep(3 * time.Second)
	requireAlive(t, mains)
	select {
	case <-ca.done:
		t.Fatalf("the client agent exited while the server was down: %v", ca.err)
	default:
	}
	srv2 := spawnAgent(t, "server again", args)
	waitFor(t, "the node to be ready again", func() bool {
		n, _, err := ac.Node(context.Background(), ca.nodeID, nil)
		return err == nil && n.Status == api.NodeStatusReady
	})
	requireAlive(t, mains)
	mustCodeRetry(t, 0, "job", "stop", "-address="+srv2.url, token, "steady")
	waitAllDead(t, mains)
}
