package client_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Issue 15, finding 5: a task's directories are 0700 and its logs 0600,
// rotated copies included.
func TestRawExecFileModes(t *testing.T) {
	e := newRawEnv(t)
	dir := t.TempDir()
	// 100 KB on stdout: over the env's 64 KiB, so the log is rotated.
	script := `head -c 100000 /dev/zero | tr '\0' a; echo err >&2; echo $$ > "$OUT/pid"; exec sleep 300`
	allocID := e.place(t, "modes", nil, &state.Task{Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		Env: map[string]string{"OUT": dir}, KillTimeout: time.Second})
	e.waitAlloc(t, allocID, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })
	killOnCleanup(t, waitPid(t, filepath.Join(dir, "pid")))
	allocDir := filepath.Join(e.dataDir, "alloc", allocID)
	logs := filepath.Join(allocDir, "alloc", "logs")
	rotated := filepath.Join(logs, "main.stdout.1")
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(rotated); err != nil; _, err = os.Stat(rotated) {
		if time.Now().After(deadline) {
			t.Fatalf("the log was not rotated: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range []string{filepath.Join(e.dataDir, "alloc"), allocDir, filepath.Join(allocDir, "main"), filepath.Join(allocDir, "alloc"), logs} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("%s: mode %#o, want 0700", d, m)
		}
	}
	for _, f := range []string{"main.stdout.0", "main.stderr.0", "main.stdout.1"} {
		if m := mode(t, filepath.Join(logs, f)); m != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", f, m)
		}
	}
	if m := mode(t, filepath.Join(e.dataDir, "client", "state.db")); m != 0o600 {
		t.Errorf("state file: mode %#o, want 0600", m)
	}
}

// A client refuses a data directory it does not own or that others may
// write, and a state file likewise; a missing one is created 0700.
func TestClientDataDirOwnership(t *testing.T) {
	newClient := func(dir string) error {
		_, err := client.New(client.Config{Servers: []string{"http://127.0.0.1:1"}, DataDir: dir, RawExec: true})
		return err
	}
	fresh := filepath.Join(t.TempDir(), "a", "data")
	if err := newClient(fresh); err != nil {
		t.Fatalf("a missing data dir: %v", err)
	}
	if m := mode(t, fresh); m != 0o700 {
		t.Errorf("created data dir: mode %#o, want 0700", m)
	}

	for _, m := range []os.FileMode{0o777, 0o770, 0o702} {
		dir := t.TempDir()
		if err := os.Chmod(dir, m); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("client: data directory %s is writable by its group or others (mode %#o)", dir, m)
		err := newClient(dir)
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "chmod go-w "+dir) {
			t.Errorf("mode %#o: %v, want %q", m, err, want)
		}
	}
	if err := newClient(t.TempDir()); err != nil {
		t.Fatalf("a 0700 data dir of our own: %v", err)
	}

	// A state file others could have written is not trusted either.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "client"), 0o700); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(dir, "client", "state.json")
	if err := os.WriteFile(statePath, []byte(`{"NodeID":"","Allocs":[]}`), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(statePath, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := newClient(dir); err == nil || !strings.Contains(err.Error(), "client state "+statePath+" is writable by its group or others (mode 0666)") {
		t.Errorf("a world-writable state file: %v", err)
	}

	// Owned by someone else (needs root to set up).
	if os.Geteuid() == 0 {
		other := t.TempDir()
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := newClient(other); err == nil || !strings.Contains(err.Error(), "is owned by uid 65534, not by this agent's user (uid 0)") {
			t.Errorf("a data dir of another user: %v", err)
		}
		if err := os.Chown(statePath, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		os.Chmod(statePath, 0o600)
		if err := newClient(dir); err == nil || !strings.Contains(err.Error(), "client state "+statePath+" is owned by uid 65534") {
			t.Errorf("a state file of another user: %v", err)
		}
	}
}

// Once the servers collected an allocation (GC), the client forgets it and
// removes its directory; a live allocation's directory stays.
func TestClientGCRemovesCollectedAllocDir(t *testing.T) {
	// A short interval stands for the GC's minute.
	e := newRawEnvWith(t, func(c *client.Config) { c.GCInterval = 100 * time.Millisecond })
	dir := t.TempDir()
	task := func(name string) *state.Task {
		return &state.Task{Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", `echo $$ > "$OUT/` + name + `"; echo hi; exec sleep 300`}},
			Env: map[string]string{"OUT": dir}, KillTimeout: time.Second}
	}
	goneID, keepID := e.place(t, "gone", nil, task("gone")), e.place(t, "keep", nil, task("keep"))
	for _, id := range []string{goneID, keepID} {
		e.waitAlloc(t, id, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })
	}
	killOnCleanup(t, waitPid(t, filepath.Join(dir, "gone")), waitPid(t, filepath.Join(dir, "keep")))
	goneDir, keepDir := filepath.Join(e.dataDir, "alloc", goneID), filepath.Join(e.dataDir, "alloc", keepID)

	e.stopAlloc(t, "gone", goneID)
	e.waitAlloc(t, goneID, "complete", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusComplete })
	// The next change to the node's list (here a placement) tells the
	// client the servers no longer list the finished allocation.
	pokeID := e.place(t, "poke", nil, task("poke"))
	e.waitAlloc(t, pokeID, "running", func(a *api.Allocation) bool { return a.ClientStatus == api.AllocClientStatusRunning })
	killOnCleanup(t, waitPid(t, filepath.Join(dir, "poke")))
	// Stopped but still listed by the servers: its logs stay readable.
	time.Sleep(time.Second)
	if _, err := os.Stat(filepath.Join(goneDir, "alloc", "logs", "main.stdout.0")); err != nil {
		t.Fatalf("a stopped allocation's logs went before the servers collected it: %v", err)
	}
	// Its evaluation finished: the GC collects an allocation with it.
	_, a, err := e.ts.Server.State().Alloc(nil, goneID)
	if err != nil || a == nil {
		t.Fatalf("alloc: %v", err)
	}
	ev := &state.Evaluation{ID: a.EvalID, Namespace: "default", Priority: 50, Type: state.JobTypeService, TriggeredBy: "job-register",
		JobID: "gone", Status: state.EvalStatusComplete}
	if _, err := fsm.Apply(e.ts.Server, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: []*state.Evaluation{ev}}); err != nil {
		t.Fatal(err)
	}
	if resp := e.ts.Do(t, http.MethodPut, "/v1/system/gc", ""); resp.Status != http.StatusOK || !strings.Contains(resp.Body, `"Allocs":1`) {
		t.Fatalf("system gc: %s", resp)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(goneDir); !os.IsNotExist(err); _, err = os.Stat(goneDir) {
		if time.Now().After(deadline) {
			t.Fatalf("the collected allocation's directory is still there: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(keepDir, "alloc", "logs", "main.stdout.0")); err != nil {
		t.Fatalf("a running allocation's directory went: %v", err)
	}
	// Forgotten: the saved state no longer has it.
	deadline = time.Now().Add(10 * time.Second)
	for {
		ids, err := e.client.SavedAllocIDs()
		if err == nil && !slices.Contains(ids, goneID) && slices.Contains(ids, keepID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client state still has the collected allocation (or lost the live one): %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The client's own API on a loopback listener answers only loopback Host
// names (DNS rebinding), as the servers' does.
func TestClientHTTPRefusesForeignHost(t *testing.T) {
	e := newRawEnv(t)
	url := "http://" + e.client.HTTPAddr() + "/v1/client/fs/logs/" + "00000000-0000-4000-8000-000000000000?task=main&type=stdout"
	// Loopback names pass the guard (then the logs endpoint answers as it
	// will: not found here, or its own refusal without a grant).
	for host, refused := range map[string]bool{"evil.example": true, "localhost": false, "": false, "127.0.0.1": false} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		guard := resp.StatusCode == http.StatusForbidden && strings.Contains(string(body), "refused: this agent listens on a loopback address")
		if guard != refused || (refused && !strings.Contains(string(body), `Host "evil.example" refused`)) {
			t.Errorf("Host %q: %d %q, refused by the Host check: %v, want %v", host, resp.StatusCode, body, guard, refused)
		}
	}
}
