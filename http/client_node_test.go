package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
	nomad "github.com/hashicorp/nomad/api"
)

// cnEnv is a server with ACLs on and a real client agent (raw_exec, its
// own API) running one task, reached with Nomad's Go client.
type cnEnv struct {
	s     *acxServer
	v     *victim
	nc    *nomad.Client // management token
	alloc *nomad.Allocation
}

const cnScript = `mkdir -p "$NOMAD_TASK_DIR/data"; printf 'hello\n' > "$NOMAD_TASK_DIR/data/greeting.txt"
ln -sf /etc "$NOMAD_TASK_DIR/etc-link"; ln -sf /etc/passwd "$NOMAD_TASK_DIR/passwd-link"; ln -sf data/greeting.txt "$NOMAD_TASK_DIR/inside-link"
trap 'echo got-usr1' USR1
echo started; i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.2; done`

func cnStart(t *testing.T) *cnEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs a raw_exec task (a real process)")
	}
	s := acxStart(t, "root-secret", servertest.ACL("root-secret"))
	intro := s.tokenWithRules(t, "intro", `node = "write"`, "")
	v := &victim{dir: t.TempDir(), token: intro.SecretID, url: s.URL}
	v.start(t, true)
	t.Cleanup(v.stop)
	nc := nomadClient(t, s.TestServer, "root-secret")
	job := nomad.NewServiceJob("files", "files", "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomad.NewTaskGroup("web", 1)
	task := nomad.NewTask("app", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", cnScript})
	task.KillTimeout = new(time.Second)
	task.Resources = &nomad.Resources{CPU: new(100), MemoryMB: new(64)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	if _, _, err := nc.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	e := &cnEnv{s: s, v: v, nc: nc}
	atkWait(t, "the task to run and write its files", func() bool {
		stubs, _, err := nc.Jobs().Allocations("files", false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "running" {
			return false
		}
		e.alloc, _, err = nc.Allocations().Info(stubs[0].ID, nil)
		return err == nil && strings.Contains(e.cat(t, "/v1/client/fs/logs/"+stubs[0].ID+"?task=app&type=stdout&plain=true"), "line 2")
	})
	return e
}

// cat GETs path on the server with the management token; "" unless 200.
func (e *cnEnv) cat(t *testing.T, path string) string {
	resp := e.s.Do(t, "GET", path, "", "X-Nomad-Token", "root-secret")
	if resp.Status != 200 {
		return ""
	}
	return resp.Body
}

// serversOnly is a Nomad client that cannot reach the node's own
// address (its dials there fail as a network error, as from a laptop
// outside the cluster's network), so its node calls go to the servers.
type serversOnly struct {
	*nomad.Client
	dials *atomic.Int32
}

func nomadViaServers(t *testing.T, ts *servertest.TestServer, token, nodeAddr string) serversOnly {
	t.Helper()
	refused := &atomic.Int32{}
	// Nomad's client copies the transport's Proxy (not its dialer) into
	// the node client: the refusal is made there.
	tr := &http.Transport{Proxy: func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == nodeAddr {
			refused.Add(1)
			return nil, errors.New("unreachable from here")
		}
		return nil, nil
	}}
	cfg := nomad.DefaultConfig()
	cfg.Address, cfg.SecretID, cfg.HttpClient = ts.URL, token, &http.Client{Transport: tr}
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serversOnly{Client: c, dials: refused}
}

// nomadStatus is the status of an error of Nomad's client.
func nomadErr(t *testing.T, what string, err error, status int, contains string) {
	t.Helper()
	var ue nomad.UnexpectedResponseError
	if !errors.As(err, &ue) || ue.StatusCode() != status || !strings.Contains(ue.Body(), contains) {
		t.Errorf("%s: got %v, want %d …%s…", what, err, status, contains)
	}
}

// TestClientFramedLogsNomadAPI: AllocFS().Logs decodes Nomad's framed
// stream and yields the task's output (the node directly, with the
// caller's token turned into a grant by the servers, and through the
// servers); follow delivers new lines; a followed silent stream gets
// heartbeats; plain=true stays plain.
func TestClientFramedLogsNomadAPI(t *testing.T) {
	e := cnStart(t)
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := e.nc.AllocFS().Logs(e.alloc, false, "app", nomad.FSLogNameStdout, nomad.OriginStart, 0, cancel, nil)
	var got strings.Builder
	var last *nomad.StreamFrame
	for f := range frames {
		got.Write(f.Data)
		last = f
	}
	select {
	case err := <-errs:
		t.Fatalf("Logs: %v", err)
	default:
	}
	if !strings.HasPrefix(got.String(), "started\nline 1\nline 2\n") {
		t.Fatalf("Logs: %q", got.String())
	}
	if last == nil || last.File != "alloc/logs/app.stdout.0" || last.Offset != int64(got.Len()) {
		t.Errorf("last frame: %+v (read %d bytes)", last, got.Len())
	}

	// Follow: lines written after the start arrive.
	follow, errs := e.nc.AllocFS().Logs(e.alloc, true, "app", nomad.FSLogNameStdout, nomad.OriginEnd, 0, cancel, nil)
	var followed strings.Builder
	deadline := time.After(10 * time.Second)
	for strings.Count(followed.String(), "\n") < 3 {
		select {
		case f, ok := <-follow:
			if !ok {
				t.Fatalf("the followed stream ended: %q", followed.String())
			}
			followed.Write(f.Data)
		case err := <-errs:
			t.Fatalf("follow: %v", err)
		case <-deadline:
			t.Fatalf("followed: %q", followed.String())
		}
	}
	if !strings.HasPrefix(followed.String(), "line ") || strings.Contains(followed.String(), "started") {
		t.Errorf("followed from the end: %q", followed.String())
	}

	// Nomad's client falls back to the servers when it cannot reach the
	// node: the servers' proxy streams the same frames, followed.
	viaServers := nomadViaServers(t, e.s.TestServer, "root-secret", e.v.c.HTTPAddr())
	written := strings.Count(e.cat(t, "/v1/client/fs/logs/"+e.alloc.ID+"?task=app&type=stdout&plain=true"), "line ")
	follow, errs = viaServers.AllocFS().Logs(e.alloc, true, "app", nomad.FSLogNameStdout, nomad.OriginStart, 0, cancel, nil)
	var proxied strings.Builder
	deadline = time.After(10 * time.Second)
	// Three lines beyond what was written at the start: followed.
	beyond := fmt.Sprintf("line %d\n", written+3)
	for !strings.Contains(proxied.String(), beyond) {
		select {
		case f, ok := <-follow:
			if !ok {
				t.Fatalf("the proxied stream ended: %q", proxied.String())
			}
			if f.File != "alloc/logs/app.stdout.0" {
				t.Fatalf("proxied frame: %+v", f)
			}
			proxied.Write(f.Data)
		case err := <-errs:
			t.Fatalf("proxied follow: %v", err)
		case <-deadline:
			t.Fatalf("proxied: %q", proxied.String())
		}
	}
	if !strings.HasPrefix(proxied.String(), "started\nline 1\n") || viaServers.dials.Load() == 0 {
		t.Errorf("proxied: %q (%d refused dials to the node)", proxied.String(), viaServers.dials.Load())
	}

	// Through the servers, by hand: frames, then heartbeats on a silent stream.
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.s.URL+"/v1/client/fs/logs/"+e.alloc.ID+"?task=app&type=stderr&follow=true", nil)
	req.Header.Set("X-Nomad-Token", "root-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("framed stderr: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	var hb map[string]any
	start := time.Now()
	if err := dec.Decode(&hb); err != nil || len(hb) != 0 {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the first heartbeat took %v", time.Since(start))
	}
	stop()

	var frame api.StreamFrame
	body := e.cat(t, "/v1/client/fs/logs/"+e.alloc.ID+"?task=app&type=stdout")
	if err := json.NewDecoder(strings.NewReader(body)).Decode(&frame); err != nil || !strings.HasPrefix(string(frame.Data), "started\n") ||
		frame.File != "alloc/logs/app.stdout.0" {
		t.Errorf("framed through the servers: %v %+v", err, frame)
	}
	if plain := e.cat(t, "/v1/client/fs/logs/"+e.alloc.ID+"?task=app&type=stdout&plain=true"); !strings.HasPrefix(plain, "started\nline 1\n") {
		t.Errorf("plain: %q", plain)
	}
	expectError(t, e.s.Do(t, "GET", "/v1/client/fs/logs/"+e.alloc.ID+"?task=app&type=stdout&plain=maybe", "", "X-Nomad-Token", "root-secret"),
		400, `failed to parse plain "maybe" as a bool`)
}

// TestClientFSNomadAPI: AllocFS().List/Stat/Cat read the allocation
// directory in Nomad's AllocFileInfo shape, confined to it: "../" and
// symlinks that lead out are refused (by the node too, with a grant
// the servers minted); read-fs is needed.
func TestClientFSNomadAPI(t *testing.T) {
	e := cnStart(t)
	fsys := e.nc.AllocFS()
	root, _, err := fsys.List(e.alloc, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, f := range root {
		dirs[f.Name] = f.IsDir
	}
	if !dirs["alloc"] || !dirs["app"] {
		t.Fatalf("List /: %+v", root)
	}
	data, _, err := fsys.List(e.alloc, "app/data", nil)
	if err != nil || len(data) != 1 || data[0].Name != "greeting.txt" || data[0].Size != 6 || data[0].IsDir || !strings.HasPrefix(data[0].FileMode, "-rw") ||
		data[0].ModTime.IsZero() {
		t.Fatalf("List app/data: %v %+v", err, data)
	}
	st, _, err := fsys.Stat(e.alloc, "/app/data/greeting.txt", nil)
	if err != nil || st.Name != "greeting.txt" || st.Size != 6 || st.ContentType != "text/plain; charset=utf-8" {
		t.Fatalf("Stat: %v %+v", err, st)
	}
	for _, p := range []string{"app/data/greeting.txt", "/app/inside-link"} {
		rc, err := fsys.Cat(e.alloc, p, nil)
		if err != nil {
			t.Fatalf("Cat %s: %v", p, err)
		}
		buf := new(strings.Builder)
		_, _ = bufio.NewReader(rc).WriteTo(buf)
		rc.Close()
		if buf.String() != "hello\n" {
			t.Errorf("Cat %s: %q", p, buf.String())
		}
	}
	if body := e.cat(t, "/v1/client/fs/cat/"+e.alloc.ID+"?path=app/data/greeting.txt"); body != "hello\n" {
		t.Errorf("cat through the servers: %q", body)
	}

	// Escapes: refused by the servers ("..") and by the node (symlinks).
	_, _, err = fsys.List(e.alloc, "../", nil)
	nomadErr(t, "List ../", err, 400, `".." is not allowed`)
	_, _, err = fsys.Stat(e.alloc, "app/../../../../etc/passwd", nil)
	nomadErr(t, "Stat app/../..", err, 400, `is not allowed`)
	_, _, err = fsys.List(e.alloc, "app/etc-link", nil)
	nomadErr(t, "List of a symlink to /etc", err, 400, "path /app/etc-link escapes the allocation directory")
	_, _, err = fsys.Stat(e.alloc, "app/passwd-link", nil)
	nomadErr(t, "Stat of a symlink to /etc/passwd", err, 400, "escapes the allocation directory")
	_, err = fsys.Cat(e.alloc, "app/passwd-link", nil)
	nomadErr(t, "Cat of a symlink to /etc/passwd (node directly)", err, 400, "escapes the allocation directory")
	expectError(t, e.s.Do(t, "GET", "/v1/client/fs/cat/"+e.alloc.ID+"?path=app/etc-link/passwd", "", "X-Nomad-Token", "root-secret"),
		400, "node victim: path /app/etc-link/passwd escapes the allocation directory")
	expectError(t, e.s.Do(t, "GET", "/v1/client/fs/cat/"+e.alloc.ID+"?path=app/nothing", "", "X-Nomad-Token", "root-secret"),
		404, "node victim: file /app/nothing not found in the allocation directory")
	expectError(t, e.s.Do(t, "GET", "/v1/client/fs/cat/"+e.alloc.ID+"?path=app", "", "X-Nomad-Token", "root-secret"),
		400, "node victim: path /app is a directory")

	// read-fs is needed; read-job is not enough.
	reader := e.s.tokenWithRules(t, "reader", `node = "read"`+"\n"+`namespace "default" { policy = "read" }`, "")
	rc := nomadClient(t, e.s.TestServer, reader.SecretID)
	_, _, err = rc.AllocFS().List(e.alloc, "/", nil)
	nomadErr(t, "List without read-fs", err, 403, "Permission denied")
	_, err = rc.AllocFS().Cat(e.alloc, "app/data/greeting.txt", nil)
	nomadErr(t, "Cat without read-fs (node directly)", err, 403, "Permission denied")
	fsTok := e.s.tokenWithRules(t, "fs", `namespace "default" { capabilities = ["read-fs"] }`, "")
	if _, _, err := nomadClient(t, e.s.TestServer, fsTok.SecretID).AllocFS().List(e.alloc, "/app", nil); err != nil {
		t.Errorf("List with read-fs: %v", err)
	}

	// The node takes only a grant for exactly its call.
	nodeAddr := e.v.c.HTTPAddr()
	catGrant := e.s.must(t, "GET", "/v1/client/grant?op=fs/cat&alloc_id="+e.alloc.ID+"&path=/app/data/greeting.txt", "")
	var g api.GrantResponse
	catGrant.JSON(t, &g)
	expectError(t, e.s.Do(t, "GET", "/v1/client/grant?op=alloc/restart&alloc_id="+e.alloc.ID, "", "X-Nomad-Token", "root-secret"),
		400, `op "alloc/restart" is not granted to callers: make that call through the servers`)
	for _, c := range []struct{ path, grant string }{
		{"/v1/client/fs/ls/" + e.alloc.ID + "?path=/", ""},
		{"/v1/client/fs/cat/" + e.alloc.ID + "?path=/app/inside-link", g.Grant},
		{"/v1/client/fs/ls/" + e.alloc.ID + "?path=/app/data/greeting.txt", g.Grant},
		{"/v1/client/fs/stat/" + e.alloc.ID + "?path=/app/data/greeting.txt", g.Grant},
	} {
		req, _ := http.NewRequest("GET", "http://"+nodeAddr+c.path, nil)
		if c.grant != "" {
			req.Header.Set(api.GrantHeader, c.grant)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("node %s with grant %v: %d", c.path, c.grant != "", resp.StatusCode)
		}
	}
	// With ACLs on, no token straight to the node is the anonymous token: refused.
	for _, p := range []string{"/v1/client/fs/cat/" + e.alloc.ID + "?path=app/data/greeting.txt", "/v1/client/fs/logs/" + e.alloc.ID + "?task=app&type=stdout"} {
		resp, err := http.Get("http://" + nodeAddr + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("anonymous %s on the node: %d", p, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+nodeAddr+"/v1/client/fs/cat/"+e.alloc.ID+"?path=/app/data/greeting.txt", nil)
	req.Header.Set(api.GrantHeader, g.Grant)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("node cat with its grant: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// TestClientStatsNomadAPI: Nodes().Stats (with node_id, as Nomad's API
// sends it) answers the host's memory, CPUs, uptime and disk;
// Allocations().Stats the task's process tree usage. node:read and
// read-job are needed.
func TestClientStatsNomadAPI(t *testing.T) {
	e := cnStart(t)
	hs, err := e.nc.Nodes().Stats(e.alloc.NodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hs.Memory == nil || hs.Memory.Total == 0 || hs.Memory.Used == 0 || hs.Memory.Used > hs.Memory.Total || len(hs.CPU) == 0 || hs.Uptime == 0 ||
		len(hs.DiskStats) != 1 || hs.DiskStats[0].Size == 0 || hs.AllocDirStats == nil {
		t.Fatalf("host stats: %+v", hs)
	}
	for _, c := range hs.CPU {
		if !strings.HasPrefix(c.CPU, "cpu") || c.Idle < 0 || c.Idle > 100.001 || c.User < 0 {
			t.Errorf("cpu stats: %+v", c)
		}
	}
	// What `nomad node status ID` dereferences besides the stats.
	node, _, err := e.nc.Nodes().Info(e.alloc.NodeID, nil)
	if err != nil || node.Resources == nil || node.Resources.CPU == nil || node.Resources.MemoryMB == nil || node.Resources.DiskMB == nil {
		t.Fatalf("node: %v %+v", err, node)
	}
	if r := node.Reserved; r == nil || r.CPU == nil || r.MemoryMB == nil || r.DiskMB == nil || *node.Resources.CPU != 4000 {
		t.Fatalf("node Reserved/Resources: %+v %+v", node.Reserved, node.Resources)
	}
	nodeAllocs, _, err := e.nc.Nodes().Allocations(e.alloc.NodeID, nil)
	if err != nil || len(nodeAllocs) != 1 || nodeAllocs[0].ClientStatus != "running" || nodeAllocs[0].Job == nil {
		t.Fatalf("node allocations: %v %+v", err, nodeAllocs)
	}
	if r := nodeAllocs[0].Resources; r == nil || r.CPU == nil || *r.CPU != 100 || r.MemoryMB == nil || r.DiskMB == nil {
		t.Fatalf("node allocation Resources: %+v", r)
	}
	us, err := e.nc.Allocations().Stats(e.alloc, nil)
	if err != nil {
		t.Fatal(err)
	}
	app := us.Tasks["app"]
	if app == nil || app.ResourceUsage.MemoryStats.RSS == 0 || len(app.Pids) == 0 || us.ResourceUsage.MemoryStats.RSS != app.ResourceUsage.MemoryStats.RSS ||
		us.Timestamp == 0 || len(app.ResourceUsage.CpuStats.Measured) != 3 {
		t.Fatalf("alloc stats: %+v %+v", us, app)
	}
	expectError(t, e.s.Do(t, "GET", "/v1/client/stats", "", "X-Nomad-Token", "root-secret"),
		400, "missing node_id: the servers answer a node's stats, named by ?node_id=")
	expectError(t, e.s.Do(t, "GET", "/v1/client/stats?node_id=6d1b6e5e-0f0e-4a52-9e1f-3c2b1a0f9e8d", "", "X-Nomad-Token", "root-secret"),
		404, "node 6d1b6e5e-0f0e-4a52-9e1f-3c2b1a0f9e8d not found")

	nsOnly := nomadClient(t, e.s.TestServer, e.s.tokenWithRules(t, "ns", `namespace "default" { policy = "read" }`, "").SecretID)
	_, err = nsOnly.Nodes().Stats(e.alloc.NodeID, nil)
	nomadErr(t, "host stats without node:read", err, 403, "Permission denied")
	nodeOnly := nomadClient(t, e.s.TestServer, e.s.tokenWithRules(t, "nodes", `node = "read"`, "").SecretID)
	if _, err := nodeOnly.Nodes().Stats(e.alloc.NodeID, nil); err != nil {
		t.Errorf("host stats with node:read: %v", err)
	}
	_, err = nodeOnly.Allocations().Stats(e.alloc, nil)
	nomadErr(t, "alloc stats without read-job", err, 403, "Permission denied")
	if _, err := nsOnly.Allocations().Stats(e.alloc, nil); err != nil {
		t.Errorf("alloc stats with read-job: %v", err)
	}
}

// TestClientRestartSignalNomadAPI: Allocations().Signal reaches the task
// (its trap runs) and records a Signaling event; Restart restarts it
// (Restarts 1, a "Restart Signaled" event, running again); unknown
// signals and tasks are refused; alloc-lifecycle is needed.
func TestClientRestartSignalNomadAPI(t *testing.T) {
	e := cnStart(t)
	logs := func() string {
		return e.cat(t, "/v1/client/fs/logs/"+e.alloc.ID+"?task=app&type=stdout&plain=true")
	}
	if err := e.nc.Allocations().Signal(e.alloc, nil, "app", "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	atkWait(t, "the task's trap to run", func() bool { return strings.Contains(logs(), "got-usr1") })
	atkWait(t, "the Signaling event", func() bool {
		a, _, err := e.nc.Allocations().Info(e.alloc.ID, nil)
		if err != nil {
			return false
		}
		for _, ev := range a.TaskStates["app"].Events {
			if ev.Type == "Signaling" && ev.DisplayMessage == "Task being sent signal SIGUSR1" {
				return true
			}
		}
		return false
	})
	err := e.nc.Allocations().Signal(e.alloc, nil, "app", "SIGFOO")
	nomadErr(t, "unknown signal", err, 400, `invalid signal "SIGFOO"`)
	err = e.nc.Allocations().Signal(e.alloc, nil, "nope", "SIGUSR1")
	nomadErr(t, "unknown task", err, 404, "Could not find task runner for task: nope")
	err = e.nc.Allocations().Restart(e.alloc, "", &nomad.QueryOptions{})
	if err != nil {
		t.Fatalf("Restart of the running tasks: %v", err)
	}
	var st *nomad.TaskState
	atkWait(t, "the restarted task to run", func() bool {
		a, _, err := e.nc.Allocations().Info(e.alloc.ID, nil)
		if err != nil {
			return false
		}
		st = a.TaskStates["app"]
		return st.Restarts == 1 && st.State == "running" && strings.Count(logs(), "started\n") == 2
	})
	var types []string
	for _, ev := range st.Events {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, ","); !strings.Contains(got, "Restart Signaled,Terminated,Restarting,Started") {
		t.Errorf("events after a restart: %s", got)
	}
	if st.LastRestart.IsZero() {
		t.Error("LastRestart not set")
	}
	expectError(t, e.s.Do(t, "PUT", "/v1/client/allocation/"+e.alloc.ID+"/restart", `{"TaskName":"app","AllTasks":true}`, "X-Nomad-Token", "root-secret"),
		400, "task name cannot be set when restarting all tasks")
	expectError(t, e.s.Do(t, "PUT", "/v1/client/allocation/"+e.alloc.ID+"/restart", `{"Task":"app"}`, "X-Nomad-Token", "root-secret"),
		400, `AllocationRestartRequest decoding failed: json: unknown field "Task"`)

	reader := nomadClient(t, e.s.TestServer, e.s.tokenWithRules(t, "reader", `namespace "default" { policy = "read" }`, "").SecretID)
	nomadErr(t, "restart without alloc-lifecycle", reader.Allocations().Restart(e.alloc, "app", nil), 403, "Permission denied")
	nomadErr(t, "signal without alloc-lifecycle", reader.Allocations().Signal(e.alloc, nil, "app", "SIGKILL"), 403, "Permission denied")
	life := nomadClient(t, e.s.TestServer, e.s.tokenWithRules(t, "life", `namespace "default" { capabilities = ["alloc-lifecycle"] }`, "").SecretID)
	if err := life.Allocations().Restart(e.alloc, "app", nil); err != nil {
		t.Errorf("restart with alloc-lifecycle: %v", err)
	}
	atkWait(t, "the second restart", func() bool {
		a, _, err := e.nc.Allocations().Info(e.alloc.ID, nil)
		return err == nil && a.TaskStates["app"].Restarts == 2 && a.TaskStates["app"].State == "running"
	})
	// The node refuses a call without a grant.
	req, _ := http.NewRequest("PUT", "http://"+e.v.c.HTTPAddr()+"/v1/client/allocation/"+e.alloc.ID+"/signal", strings.NewReader(`{"Task":"app","Signal":"SIGKILL"}`))
	req.Header.Set("X-Nomad-Token", "root-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("signal to the node without a grant: %d", resp.StatusCode)
	}
}

// TestClientFSStreamNomadAPI: AllocFS().ReadAt reads a range and Stream
// follows a file in frames (what `nomad alloc fs -tail` and `-f` call),
// the node directly and through the servers, with a "file truncated"
// event when the file shrinks.
func TestClientFSStreamNomadAPI(t *testing.T) {
	e := cnStart(t)
	rc, err := e.nc.AllocFS().ReadAt(e.alloc, "app/data/greeting.txt", 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := new(strings.Builder)
	_, _ = bufio.NewReader(rc).WriteTo(buf)
	rc.Close()
	if buf.String() != "ell" {
		t.Errorf("ReadAt 1,3: %q", buf.String())
	}
	if body := e.cat(t, "/v1/client/fs/readat/"+e.alloc.ID+"?path=app/data/greeting.txt&offset=4"); body != "o\n" {
		t.Errorf("readat through the servers: %q", body)
	}

	grow := filepath.Join(e.v.dir, "alloc", e.alloc.ID, "app", "data", "grow.txt")
	if err := os.WriteFile(grow, []byte("aaaa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vs := nomadViaServers(t, e.s.TestServer, "root-secret", e.v.c.HTTPAddr())
	for name, c := range map[string]*nomad.Client{"node": e.nc, "servers": vs.Client} {
		if err := os.WriteFile(grow, []byte("aaaa\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cancel := make(chan struct{})
		frames, errs := c.AllocFS().Stream(e.alloc, "app/data/grow.txt", nomad.OriginStart, 0, cancel, nil)
		next := func(what string) *nomad.StreamFrame {
			t.Helper()
			select {
			case f := <-frames:
				return f
			case err := <-errs:
				t.Fatalf("%s: %s: %v", name, what, err)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no frame for %s", name, what)
			}
			return nil
		}
		if f := next("the start"); string(f.Data) != "aaaa\n" || f.File != "app/data/grow.txt" || f.Offset != 5 {
			t.Errorf("%s: first frame %+v", name, f)
		}
		appendFile(t, grow, "bbbb\n")
		if f := next("an append"); string(f.Data) != "bbbb\n" || f.Offset != 10 {
			t.Errorf("%s: appended frame %+v", name, f)
		}
		if err := os.WriteFile(grow, []byte("c\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f := next("the truncation")
		if f.FileEvent != "file truncated" {
			t.Errorf("%s: truncation frame %+v", name, f)
		}
		if len(f.Data) == 0 {
			f = next("the data after the truncation")
		}
		if string(f.Data) != "c\n" {
			t.Errorf("%s: after truncation %+v", name, f)
		}
		close(cancel)
	}
	if vs.dials.Load() == 0 {
		t.Error("the servers-only client reached the node")
	}
	_, errs := e.nc.AllocFS().Stream(e.alloc, "app/passwd-link", nomad.OriginStart, 0, nil, nil)
	nomadErr(t, "Stream of a symlink to /etc/passwd", <-errs, 400, "escapes the allocation directory")
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
