package client_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// rawEnv is a real server with the node service, and raw_exec clients
// (real processes, wall clock) that a test can stop and start again on the
// same data directory.
type rawEnv struct {
	ts      *servertest.TestServer
	url     string
	api     *api.Client
	dataDir string
	nodeID  string
	stopFn  func()
	client  *client.Client
	// configure, when set, changes the clients' config.
	configure func(*client.Config)
}

func newRawEnv(t *testing.T) *rawEnv { return newRawEnvWith(t, nil) }

func newRawEnvWith(t *testing.T, configure func(*client.Config)) *rawEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs raw_exec tasks (real processes)")
	}
	ts := servertest.Start(t)
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts), Nodes: nodes.New(deps, nodes.Config{HeartbeatTTL: time.Minute})}))
	t.Cleanup(hs.Close)
	ac, err := api.NewClient(api.Config{Address: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := &rawEnv{ts: ts, url: hs.URL, api: ac, dataDir: t.TempDir(), configure: configure}
	e.start(t)
	// Whatever a test leaves running is killed with its client.
	t.Cleanup(func() { e.stop(true) })
	return e
}

// start runs a client on the env's data directory.
func (e *rawEnv) start(t *testing.T) {
	t.Helper()
	cfg := client.Config{Servers: []string{e.url}, NodeName: "raw-1", DataDir: e.dataDir, RawExec: true,
		HTTPAddr: "127.0.0.1:0", Resources: api.Resources{CPU: 4000, MemoryMB: 8192}, LogMaxFileSize: 64 << 10, LogMaxFiles: 3}
	if e.configure != nil {
		e.configure(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.nodeID != "" && c.NodeID() != e.nodeID {
		t.Fatalf("restarted client has node ID %s, want %s", c.NodeID(), e.nodeID)
	}
	e.nodeID, e.client = c.NodeID(), c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	e.stopFn = func() { cancel(); <-done }
	select {
	case <-c.Registered():
	case err := <-done:
		t.Fatalf("client stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the client did not register")
	}
}

// stop ends the client; kill also kills every task process it left.
func (e *rawEnv) stop(kill bool) {
	if e.stopFn != nil {
		e.stopFn()
		e.stopFn = nil
	}
	if !kill {
		return
	}
	c, err := client.New(client.Config{Servers: []string{e.url}, DataDir: e.dataDir, RawExec: true, KillTasksOnShutdown: true})
	if err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = c.Run(ctx)
	}
}

// place registers a one-task raw_exec job and places one allocation of it.
func (e *rawEnv) place(t *testing.T, id string, restart *state.RestartPolicy, task *state.Task) string {
	t.Helper()
	task.Name, task.Driver = "main", "raw_exec"
	job := &state.Job{Namespace: "default", ID: id, Name: id, Type: state.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{Name: "web", Count: 1, RestartPolicy: restart, Tasks: []*state.Task{task}}}}
	if _, err := fsm.Apply(e.ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	_, job, _ = e.ts.Server.State().Job(nil, "default", id)
	a := &state.Allocation{ID: uuid.NewString(), Namespace: "default", EvalID: uuid.NewString(), Name: id + ".web[0]",
		NodeID: e.nodeID, NodeName: "raw-1", JobID: id, JobVersion: job.Version, TaskGroup: "web"}
	plan := &state.Plan{EvalID: a.EvalID, Namespace: "default", JobID: id, JobModifyIndex: job.JobModifyIndex, Now: time.Now().UnixNano(),
		Placements: []*state.Allocation{a}}
	if res, err := fsm.Apply(e.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan}); err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %+v", err, res)
	}
	return a.ID
}

func (e *rawEnv) stopAlloc(t *testing.T, jobID, allocID string) {
	t.Helper()
	_, cur, _ := e.ts.Server.State().Job(nil, "default", jobID)
	plan := &state.Plan{EvalID: uuid.NewString(), Namespace: "default", JobID: jobID, JobModifyIndex: cur.JobModifyIndex,
		Now: time.Now().UnixNano(), Stops: []*state.AllocStop{{AllocID: allocID, DesiredDescription: "alloc not needed"}}}
	if res, err := fsm.Apply(e.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan}); err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %+v", err, res)
	}
}

func (e *rawEnv) waitAlloc(t *testing.T, id, what string, ok func(*api.Allocation) bool) *api.Allocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var index uint64
	var last *api.Allocation
	for {
		a, meta, err := e.api.Allocation(ctx, id, &api.QueryOptions{WaitIndex: index})
		if err != nil {
			t.Fatalf("waiting for alloc %s: %v (last seen %s)", what, err, describe(last))
		}
		if ok(a) {
			return a
		}
		last, index = a, meta.LastIndex
	}
}

func mainTask(a *api.Allocation) *api.TaskState {
	if ts := a.TaskStates["main"]; ts != nil {
		return ts
	}
	return &api.TaskState{}
}

// waitFile waits until path holds a pid.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if buf, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(buf))); err == nil && pid > 0 {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// processAlive: the pid exists and is not a zombie.
func processAlive(pid int) bool {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(buf)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func waitDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func killOnCleanup(t *testing.T, pids ...int) {
	t.Cleanup(func() {
		for _, pid := range pids {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})
}

// A task that ignores its kill signal, with a child in its process group:
// stop sends the signal, waits KillTimeout, then kills the whole group.
func TestRawExecStopKillsProcessGroup(t *testing.T) {
	e := newRawEnv(t)
	dir := t.TempDir()
	script := `trap "" INT TERM; sleep 300 & echo $! > "$OUT/child"; echo $$ > "$OUT/parent"; echo "hello $NOMAD_TASK_NAME"; wait`
	allocID := e.place(t, "grp", nil, &state.Task{Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		Env: map[string]string{"OUT": dir}, KillTimeout: 700 * time.Millisecond, KillSignal: "SIGTERM"})
	a := e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })
	parent, child := waitPid(t, filepath.Join(dir, "parent")), waitPid(t, filepath.Join(dir, "child"))
	killOnCleanup(t, parent, child)
	if ts := mainTask(a); ts.State != api.TaskStateRunning || ts.StartedAt.IsZero() || !sameTypes(eventTypes(ts), "Received", "Task Setup", "Started") {
		t.Fatalf("running task: %s", describe(a))
	}
	taskDir := filepath.Join(e.dataDir, "alloc", allocID, "main")
	if fi, err := os.Stat(taskDir); err != nil || !fi.IsDir() {
		t.Fatalf("task directory %s: %v", taskDir, err)
	}

	began := time.Now()
	e.stopAlloc(t, "grp", allocID)
	a = e.waitAlloc(t, allocID, "complete", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusComplete })
	if took := time.Since(began); took < 700*time.Millisecond {
		t.Errorf("killed after %v: the kill timeout was not waited for", took)
	}
	ts := mainTask(a)
	if ts.State != api.TaskStateDead || ts.Failed || ts.FinishedAt.IsZero() || !sameTypes(eventTypes(ts), "Received", "Task Setup", "Started", "Killing", "Killed") {
		t.Fatalf("stopped task: %s", describe(a))
	}
	waitDead(t, parent, child)
	out, err := os.ReadFile(filepath.Join(e.dataDir, "alloc", allocID, "alloc", "logs", "main.stdout.0"))
	if err != nil || string(out) != "hello main\n" {
		t.Errorf("stdout file: %q %v", out, err)
	}
}

// A task that keeps exiting non-zero is restarted per its policy, then fails.
func TestRawExecRestartPolicy(t *testing.T) {
	e := newRawEnv(t)
	allocID := e.place(t, "crash", &state.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: 100 * time.Millisecond, Mode: "fail"},
		&state.Task{Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo oops >&2; exit 3"}}})
	a := e.waitAlloc(t, allocID, "failed", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusFailed })
	ts := mainTask(a)
	if !ts.Failed || ts.State != api.TaskStateDead || ts.Restarts != 1 ||
		!sameTypes(eventTypes(ts), "Received", "Task Setup", "Started", "Terminated", "Restarting", "Started", "Terminated", "Not Restarting") {
		t.Fatalf("failed task: %s", describe(a))
	}
	if ev := ts.Events[3]; ev.ExitCode != 3 || ev.DisplayMessage != "Exit Code: 3" {
		t.Errorf("Terminated event: %+v", ev)
	}
	if ev := ts.Events[7]; !ev.FailsTask || !strings.Contains(ev.DisplayMessage, "Exceeded allowed attempts 1") {
		t.Errorf("Not Restarting event: %+v", ev)
	}
	// A command that does not exist is a driver failure, restarted likewise.
	badID := e.place(t, "nocmd", &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Millisecond, Mode: "fail"},
		&state.Task{Config: map[string]any{"command": "no-such-command-here"}})
	a = e.waitAlloc(t, badID, "failed", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusFailed })
	if ev := mainTask(a).Events; len(ev) < 3 || ev[2].Type != api.TaskDriverFailure || !strings.Contains(ev[2].DriverError, "no-such-command-here") {
		t.Errorf("driver failure: %s", describe(a))
	}
}

// A restarted client re-attaches to the processes it started; one that
// died while the client was down makes its allocation lost. So does a
// client upgraded from an agent that kept its state in state.json: it
// moves that file into its state DB.
func TestRawExecClientRestartReattaches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy bool
	}{{"state DB", false}, {"state.json of an older agent", true}} {
		t.Run(tc.name, func(t *testing.T) { testRestartReattaches(t, tc.legacy) })
	}
}

func testRestartReattaches(t *testing.T, legacy bool) {
	e := newRawEnv(t)
	dir := t.TempDir()
	task := func(name string) *state.Task {
		return &state.Task{Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", `echo $$ > "$OUT/` + name + `"; exec sleep 300`}},
			Env: map[string]string{"OUT": dir}, KillTimeout: time.Second}
	}
	keepID := e.place(t, "keep", nil, task("keep"))
	dieID := e.place(t, "die", nil, task("die"))
	for _, id := range []string{keepID, dieID} {
		e.waitAlloc(t, id, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })
	}
	keep, die := waitPid(t, filepath.Join(dir, "keep")), waitPid(t, filepath.Join(dir, "die"))
	killOnCleanup(t, keep, die)

	e.stop(false)
	if !processAlive(keep) || !processAlive(die) {
		t.Fatal("the tasks did not survive their client")
	}
	if p, err := os.FindProcess(die); err == nil {
		_ = p.Kill()
	}
	waitDead(t, die)
	if legacy {
		if err := client.WriteLegacyState(e.dataDir); err != nil {
			t.Fatal(err)
		}
	}
	e.start(t)
	if _, err := os.Stat(filepath.Join(e.dataDir, "client", "state.json")); !os.IsNotExist(err) {
		t.Errorf("the old state file is still there: %v", err)
	}
	if saved, err := e.client.SavedAllocIDs(); err != nil || !slices.Contains(saved, keepID) {
		t.Errorf("saved records %v (%v), want %s among them", saved, err, keepID)
	}

	a := e.waitAlloc(t, dieID, "lost", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusLost })
	if ts := mainTask(a); ts.State != api.TaskStateDead || !ts.Failed {
		t.Errorf("lost task: %s", describe(a))
	}
	a = e.waitAlloc(t, keepID, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })
	if ts := mainTask(a); ts.Restarts != 0 || !sameTypes(eventTypes(ts), "Received", "Task Setup", "Started") {
		t.Errorf("re-attached task: %s", describe(a))
	}
	if !processAlive(keep) {
		t.Fatal("the re-attached task died")
	}
	// The new client controls it: a stop kills it.
	e.stopAlloc(t, "keep", keepID)
	e.waitAlloc(t, keepID, "complete", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusComplete })
	waitDead(t, keep)
}

// The logs, read through the servers (which call the client's own
// endpoint with a grant), stream what a task writes as it writes it.
func TestRawExecLogsFollow(t *testing.T) {
	e := newRawEnv(t)
	dir := t.TempDir()
	script := `i=0; while [ -e "$OUT/go" ] || [ $i -eq 0 ]; do i=$((i+1)); echo "line $i"; echo "err $i" >&2; sleep 0.2; [ $i -ge 5 ] && exec sleep 300; done`
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	allocID := e.place(t, "logs", nil, &state.Task{Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		Env: map[string]string{"OUT": dir}, KillTimeout: time.Second})
	e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })

	base := e.url + "/v1/client/fs/logs/" + allocID
	resp, err := http.Get(base + "?task=main&type=stdout&follow=true&plain=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("logs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for i := 1; i <= 5; i++ {
		if !sc.Scan() {
			t.Fatalf("stream ended before line %d: %v", i, sc.Err())
		}
		if got := sc.Text(); got != fmt.Sprintf("line %d", i) {
			t.Fatalf("line %d: %q", i, got)
		}
	}

	// Without follow: the whole stream, or its end with origin=end.
	get := func(query string) (int, string) {
		r, err := http.Get(base + query)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get("?task=main&type=stderr&plain=true"); code != 200 || !strings.HasPrefix(body, "err 1\nerr 2\n") {
		t.Errorf("stderr: %d %q", code, body)
	}
	if code, body := get("?task=main&type=stdout&origin=end&offset=7&plain=true"); code != 200 || body != "line 5\n" {
		t.Errorf("tail: %d %q", code, body)
	}
	for query, want := range map[string]string{
		"?type=stdout":                      "must include task name",
		"?task=main&type=both":              "invalid log type",
		"?task=main&type=stdout&offset=-1":  "invalid offset",
		"?task=main&type=stdout&origin=mid": "invalid origin",
	} {
		if code, body := get(query); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q", query, code, body)
		}
	}
	if code, body := get("?task=nope&type=stdout"); code != 404 || !strings.Contains(body, "not found") {
		t.Errorf("unknown task: %d %q", code, body)
	}
	r, err := http.Get(e.url + "/v1/client/fs/logs/not-a-uuid?task=main&type=stdout")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Errorf("malformed alloc ID: %d", r.StatusCode)
	}

	// Straight to the client: a grant from the servers works (for that
	// task and stream only); no token is the anonymous token, which the
	// servers (ACLs off here) let read, as through them.
	direct := func(grant, query string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+e.client.HTTPAddr()+"/v1/client/fs/logs/"+allocID+query, nil)
		if grant != "" {
			req.Header.Set(api.LogsGrantHeader, grant)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := direct("", "?task=main&type=stdout&plain=true"); code != 200 || !strings.HasPrefix(body, "line 1\n") {
		t.Errorf("no token, ACLs off: %d %q", code, body)
	}
	g, err := e.api.LogsGrant(context.Background(), allocID, "main", "stdout")
	if err != nil || g.NodeID != e.nodeID {
		t.Fatalf("logs grant: %+v %v", g, err)
	}
	if code, body := direct(g.Grant, "?task=main&type=stdout&origin=end&offset=7&plain=true"); code != 200 || body != "line 5\n" {
		t.Errorf("with a grant: %d %q", code, body)
	}
	if code, body := direct(g.Grant, "?task=main&type=stderr"); code != 403 || !strings.Contains(body, "not for this allocation, task and stream") {
		t.Errorf("a stdout grant read stderr: %d %q", code, body)
	}
}
