package main

// These tests run the real agent as a separate process (the test binary
// re-executes itself, see TestMain), stop it cleanly or kill it without
// warning, start it again on the same data directory and check that every
// acknowledged write survived with its indexes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// agentEnv makes the test binary act as the ctlplane binary: os.Args[1:] are
// the command line of `ctlplane`.
const agentEnv = "CTLPLANE_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// skipProcessInShort leaves tests that spawn the ctlplane binary out of
// the fast tier (go test -short); the full suite runs them.
func skipProcessInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: spawns the ctlplane binary")
	}
}

// Generous limits: the machine is small and shared, and the binary is built
// with the race detector.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 60 * time.Second
)

// lockedBuffer collects a subprocess's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is one run of the test binary as `ctlplane <args>`.
type proc struct {
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, valid after done
}

// startProc starts `ctlplane args...`. The process is killed when the test ends.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	skipProcessInShort(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("finding the test binary: %v", err)
	}
	p := &proc{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(os.Environ(), agentEnv+"=1")
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("process %v did not exit within %v; stderr:\n%s", p.cmd.Args[1:], stopTimeout, logTail(p.stderr.String()))
	}
	var exitErr *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exitErr) {
		t.Fatalf("waiting for %v: %v", p.cmd.Args[1:], p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// logTail is the end of a long log, for failure messages.
func logTail(s string) string {
	const max = 16 << 10
	if len(s) > max {
		return "...\n" + s[len(s)-max:]
	}
	return s
}

// freeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment
// ago, below the kernel's ephemeral range (see servertest.FreeAddr): a
// restarted node binds the same port again.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(servertest.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// node is one persistent server's identity: its data directory and Raft
// port stay the same across restarts, as they would in production.
type node struct {
	dataDir  string
	raftPort int
	extra    []string
}

func newNode(t *testing.T, extra ...string) *node {
	return &node{dataDir: t.TempDir(), raftPort: freeLoopbackPort(t), extra: extra}
}

// agent is a running agent process.
type agent struct {
	*proc
	url    string // HTTP API base, e.g. http://127.0.0.1:41234
	nodeID string // as logged at start
	client *http.Client
}

var listeningRE = regexp.MustCompile(`HTTP API listening: address=(http://[^ \n]+).* node_id=([0-9a-f-]+)`)

// testManagementToken is the secret of the management token every test agent creates at first start.
const testManagementToken = "3f0c6b1e-2d4a-4c5b-9e8f-0a1b2c3d4e5f"

// spawnAgent starts an agent process and waits until it logs its HTTP
// address; its log is shown if the test fails.
func spawnAgent(t *testing.T, name string, args []string) *agent {
	t.Helper()
	a := &agent{proc: startProc(t, args...), client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(a.client.CloseIdleConnections)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, logTail(a.stderr.String()))
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		if m := listeningRE.FindStringSubmatch(a.stderr.String()); m != nil {
			a.url, a.nodeID = m[1], m[2]
			return a
		}
		a.checkAlive(t, deadline, "log its HTTP address")
		time.Sleep(10 * time.Millisecond)
	}
}

// start runs the agent on the node's data directory and waits until it
// answers reads. The HTTP port is picked by the agent and read from its log.
func (n *node) start(t *testing.T) *agent {
	t.Helper()
	args := append([]string{
		"agent",
		"-data-dir=" + n.dataDir,
		"-node=n1",
		"-bind=127.0.0.1:" + strconv.Itoa(n.raftPort),
		"-http-addr=127.0.0.1:0",
		"-bootstrap-expect=1",
		"-raft-timeout=200ms",
		// ACLs are on by default on a persistent agent: the tests act as
		// this management token.
		"-acl-initial-management-token=" + testManagementToken,
	}, n.extra...)
	a := spawnAgent(t, "agent "+n.dataDir, args)
	deadline := time.Now().Add(startTimeout)
	for {
		status, _, _, err := a.do(http.MethodGet, "/v1/acl/binding-rules", "")
		if err == nil && status == http.StatusOK {
			return a
		}
		a.checkAlive(t, deadline, "answer GET /v1/acl/binding-rules with 200")
		time.Sleep(20 * time.Millisecond)
	}
}

func (a *agent) checkAlive(t *testing.T, deadline time.Time, what string) {
	t.Helper()
	select {
	case <-a.done:
		t.Fatalf("agent exited (%v) before it could %s; stderr:\n%s", a.err, what, logTail(a.stderr.String()))
	default:
	}
	if time.Now().After(deadline) {
		t.Fatalf("agent did not %s within %v", what, startTimeout)
	}
}

// stop sends SIGTERM and requires a clean exit.
func (a *agent) stop(t *testing.T) {
	t.Helper()
	a.client.CloseIdleConnections()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM: %v", err)
	}
	if code := a.wait(t); code != 0 {
		t.Fatalf("agent exited with %d after SIGTERM, want 0; stderr:\n%s", code, logTail(a.stderr.String()))
	}
	if !strings.Contains(a.stderr.String(), "shutdown complete") {
		t.Errorf("agent log lacks %q after SIGTERM", "shutdown complete")
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (a *agent) kill(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatalf("sending SIGKILL: %v", err)
	}
	a.wait(t)
	a.client.CloseIdleConnections()
}

// do sends one request and returns status, body and headers. Transport
// errors are returned, not fatal: the kill test expects them.
func (a *agent) do(method, path, body string) (int, string, http.Header, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("X-Service-Token", testManagementToken)
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode, string(buf), resp.Header, nil
}

// must sends a request that must be answered with 200 and returns the body.
func (a *agent) must(t *testing.T, method, path, body string) (string, http.Header) {
	t.Helper()
	code, out, hdr, err := a.do(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if code != http.StatusOK {
		t.Fatalf("%s %s %s: %d %q, want 200", method, path, body, code, out)
	}
	return out, hdr
}

// rule is a binding rule as the API shows it.
type rule struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	Namespace   string
	CreateIndex uint64
	ModifyIndex uint64
}

// ruleBody is the JSON body of a create or update.
func ruleBody(desc, method, selector, bindType, bindName, ns string) string {
	buf, _ := json.Marshal(map[string]string{
		"Description": desc, "AuthMethod": method, "Selector": selector,
		"BindType": bindType, "BindName": bindName, "Namespace": ns,
	})
	return string(buf)
}

func decodeRule(t *testing.T, body string) rule {
	t.Helper()
	var r rule
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("decoding rule %q: %v", body, err)
	}
	return r
}

func (a *agent) create(t *testing.T, body string) rule {
	t.Helper()
	out, _ := a.must(t, http.MethodPut, "/v1/acl/binding-rule", body)
	r := decodeRule(t, out)
	if r.ID == "" || r.CreateIndex == 0 || r.ModifyIndex != r.CreateIndex {
		t.Fatalf("create answered %s", out)
	}
	return r
}

func (a *agent) update(t *testing.T, id, body string) rule {
	t.Helper()
	out, _ := a.must(t, http.MethodPut, "/v1/acl/binding-rule/"+id, body)
	return decodeRule(t, out)
}

// listing is the full list of every namespace: raw body, parsed rules and index.
type listing struct {
	body  string
	rules map[string]rule
	index uint64
}

func (a *agent) listAll(t *testing.T) listing {
	t.Helper()
	body, hdr := a.must(t, http.MethodGet, "/v1/acl/binding-rules?ns=*", "")
	var rules []rule
	if err := json.Unmarshal([]byte(body), &rules); err != nil {
		t.Fatalf("decoding list %q: %v", body, err)
	}
	l := listing{body: body, rules: map[string]rule{}}
	for _, r := range rules {
		l.rules[r.ID] = r
	}
	if len(l.rules) != len(rules) {
		t.Fatalf("list has duplicate IDs: %s", body)
	}
	idx, err := strconv.ParseUint(hdr.Get("X-Service-Index"), 10, 64)
	if err != nil {
		t.Fatalf("list X-Service-Index %q: %v", hdr.Get("X-Service-Index"), err)
	}
	l.index = idx
	return l
}

// writeMix creates n rules of varied shape, updates some and deletes some,
// and returns the acknowledged state per ID (deleted IDs map to nil).
func writeMix(t *testing.T, a *agent, n int) map[string]*rule {
	t.Helper()
	acked := map[string]*rule{}
	var ids []string
	bindTypes := []string{"service", "node", "role"}
	for i := range n {
		selector := ""
		if i%3 != 0 {
			selector = fmt.Sprintf(`serviceaccount.namespace=="ns-%d" and serviceaccount.name!=default`, i)
		}
		ns := ""
		if i%5 == 0 {
			ns = "team-" + strconv.Itoa(i%2)
		}
		method := "minikube"
		if i%4 == 0 {
			method = "jwt-" + strconv.Itoa(i)
		}
		bindType := bindTypes[i%3]
		bindName := fmt.Sprintf("name-%d-${serviceaccount.name}", i)
		desc := ""
		if i%2 == 0 {
			desc = fmt.Sprintf("rule %d: ünïcode \"quoted\" <html> & more", i)
		}
		r := a.create(t, ruleBody(desc, method, selector, bindType, bindName, ns))
		wantNS := ns
		if wantNS == "" {
			wantNS = "default"
		}
		if r.Description != desc || r.AuthMethod != method || r.Selector != selector || r.BindType != bindType || r.BindName != bindName || r.Namespace != wantNS {
			t.Fatalf("create %d answered %+v", i, r)
		}
		acked[r.ID] = &r
		ids = append(ids, r.ID)
	}
	// Update every fourth rule, some twice; AuthMethod omitted keeps the stored one.
	for i := 1; i < n; i += 4 {
		prev := acked[ids[i]]
		for round := range 1 + i%2 {
			body := ruleBody(fmt.Sprintf("updated %d/%d", i, round), "", "", "role", fmt.Sprintf("Updated-%d-%d", i, round), prev.Namespace)
			r := a.update(t, prev.ID, body)
			if r.CreateIndex != prev.CreateIndex || r.ModifyIndex <= prev.ModifyIndex || r.AuthMethod != prev.AuthMethod || r.Selector != "" || r.BindType != "role" {
				t.Fatalf("update of %+v answered %+v", *prev, r)
			}
			acked[r.ID] = &r
			prev = &r
		}
	}
	// Delete every seventh rule.
	for i := 3; i < n; i += 7 {
		r := acked[ids[i]]
		out, _ := a.must(t, http.MethodDelete, "/v1/acl/binding-rule/"+r.ID+"?ns="+r.Namespace, "")
		if out != "true" {
			t.Fatalf("delete answered %q, want true", out)
		}
		acked[r.ID] = nil
	}
	return acked
}

// checkAcked asserts that the listing holds exactly the acknowledged state.
func checkAcked(t *testing.T, l listing, acked map[string]*rule) {
	t.Helper()
	live := 0
	for id, want := range acked {
		got, ok := l.rules[id]
		if want == nil {
			if ok {
				t.Errorf("deleted rule %s is back: %+v", id, got)
			}
			continue
		}
		live++
		if !ok {
			t.Errorf("acknowledged rule %s is missing", id)
			continue
		}
		if got != *want {
			t.Errorf("rule %s is\n  %+v\nwant the acknowledged\n  %+v", id, got, *want)
		}
		if l.index < want.ModifyIndex {
			t.Errorf("list index %d is below rule %s's ModifyIndex %d", l.index, id, want.ModifyIndex)
		}
	}
	if len(l.rules) != live {
		t.Errorf("list has %d rules, want the %d acknowledged ones", len(l.rules), live)
	}
}

// checkReads reads every live rule on its own and compares it.
func checkReads(t *testing.T, a *agent, acked map[string]*rule) {
	t.Helper()
	for id, want := range acked {
		path := "/v1/acl/binding-rule/" + id
		if want == nil {
			code, body, _, err := a.do(http.MethodGet, path, "")
			if err != nil || code != http.StatusNotFound {
				t.Errorf("GET deleted %s: %d %q %v, want 404", id, code, body, err)
			}
			continue
		}
		body, _ := a.must(t, http.MethodGet, path+"?ns="+want.Namespace, "")
		if got := decodeRule(t, body); got != *want {
			t.Errorf("GET %s = %+v, want %+v", id, got, *want)
		}
	}
}

// checkNewWrites asserts that writes after a restart get indexes above
// everything before it.
func checkNewWrites(t *testing.T, a *agent, before listing, acked map[string]*rule) {
	t.Helper()
	r := a.create(t, ruleBody("after restart", "minikube", "", "service", "after-restart", ""))
	if r.CreateIndex <= before.index {
		t.Errorf("rule created after restart has CreateIndex %d, not above the index %d before it", r.CreateIndex, before.index)
	}
	for id, prev := range acked {
		if prev == nil {
			continue
		}
		u := a.update(t, id, ruleBody("updated after restart", prev.AuthMethod, prev.Selector, prev.BindType, prev.BindName, prev.Namespace))
		if u.CreateIndex != prev.CreateIndex || u.ModifyIndex <= r.ModifyIndex {
			t.Errorf("update after restart of %+v answered %+v", *prev, u)
		}
		break
	}
	after := a.listAll(t)
	if after.index <= before.index {
		t.Errorf("list index after new writes is %d, want above %d", after.index, before.index)
	}
}

func TestAgentRestartAfterCleanStop(t *testing.T) {
	n := newNode(t)
	a := n.start(t)
	acked := writeMix(t, a, 50)
	before := a.listAll(t)
	checkAcked(t, before, acked)
	nodeID := a.nodeID
	a.stop(t)

	if buf, err := os.ReadFile(filepath.Join(n.dataDir, "node-id")); err != nil || string(buf) != nodeID {
		t.Errorf("node-id file holds %q (%v), want the logged node ID %q", buf, err, nodeID)
	}
	if _, err := os.Stat(filepath.Join(n.dataDir, "raft", "raft.db")); err != nil {
		t.Errorf("Raft store: %v", err)
	}

	a = n.start(t)
	if a.nodeID != nodeID {
		t.Errorf("node ID after restart is %s, want %s", a.nodeID, nodeID)
	}
	after := a.listAll(t)
	if after.body != before.body {
		t.Errorf("list after restart differs:\nbefore %s\nafter  %s", before.body, after.body)
	}
	if after.index != before.index {
		t.Errorf("list index after restart is %d, want %d", after.index, before.index)
	}
	checkAcked(t, after, acked)
	checkReads(t, a, acked)
	checkNewWrites(t, a, before, acked)

	// A second clean cycle keeps the writes made after the first restart.
	before = a.listAll(t)
	a.stop(t)
	a = n.start(t)
	if after := a.listAll(t); after.body != before.body || after.index != before.index {
		t.Errorf("second restart changed the list:\nbefore %d %s\nafter  %d %s", before.index, before.body, after.index, after.body)
	}
	a.stop(t)
}

// killOp is one write of the kill test.
type killOp struct {
	create bool
	id     string // update only
	body   string
	req    rule // what the body asks for
}

func TestAgentRestartAfterKill(t *testing.T) {
	t.Run("log only", func(t *testing.T) { testRestartAfterKill(t) })
	// Snapshots every few entries: the kill may land during one.
	t.Run("with snapshots", func(t *testing.T) {
		testRestartAfterKill(t, "-snapshot-threshold=16", "-snapshot-interval=100ms")
	})
}

func testRestartAfterKill(t *testing.T, extra ...string) {
	n := newNode(t, extra...)
	a := n.start(t)

	const writers = 4
	var (
		mu      sync.Mutex
		acked   = map[string]*rule{}
		pending = map[int]*killOp{} // per writer: the write in flight when it stopped
		total   int
	)
	stop := make(chan struct{})
	enough := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []rule
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Create, and now and then update one of this writer's rules,
				// so the in-flight write at the kill may be either.
				o := &killOp{create: true}
				o.req = rule{Description: fmt.Sprintf("w%d-%d", w, i), AuthMethod: fmt.Sprintf("method-%d", w), BindType: "service", BindName: fmt.Sprintf("w%d-%d", w, i), Namespace: "default"}
				if i%3 == 2 && len(mine) > 0 {
					prev := mine[i%len(mine)]
					o = &killOp{id: prev.ID}
					o.req = rule{ID: prev.ID, Description: fmt.Sprintf("w%d-%d updated", w, i), AuthMethod: prev.AuthMethod, Selector: "a==b", BindType: "node", BindName: fmt.Sprintf("upd-w%d-%d", w, i), Namespace: "default", CreateIndex: prev.CreateIndex}
				}
				o.body = ruleBody(o.req.Description, o.req.AuthMethod, o.req.Selector, o.req.BindType, o.req.BindName, "")
				path := "/v1/acl/binding-rule"
				if !o.create {
					path += "/" + o.id
				}
				code, body, _, err := a.do(http.MethodPut, path, o.body)
				if err != nil {
					// The process died under this request: its outcome is unknown.
					mu.Lock()
					pending[w] = o
					mu.Unlock()
					return
				}
				if code != http.StatusOK {
					t.Errorf("writer %d: PUT %s: %d %q", w, path, code, body)
					return
				}
				var r rule
				if err := json.Unmarshal([]byte(body), &r); err != nil {
					t.Errorf("writer %d: decoding %q: %v", w, body, err)
					return
				}
				mu.Lock()
				acked[r.ID] = &r
				total++
				if total == 150 {
					close(enough)
				}
				mu.Unlock()
				if o.create {
					mine = append(mine, r)
				} else {
					for j := range mine {
						if mine[j].ID == r.ID {
							mine[j] = r
						}
					}
				}
			}
		}()
	}
	writersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(writersDone)
	}()
	select {
	case <-enough:
	case <-writersDone:
		t.Fatalf("every writer stopped before the kill, after %d acknowledged writes", total)
	case <-time.After(2 * time.Minute):
		close(stop)
		<-writersDone
		t.Fatalf("only %d writes were acknowledged", total)
	}
	a.kill(t) // with writes in flight
	close(stop)
	<-writersDone
	if t.Failed() {
		return
	}
	t.Logf("%d writes acknowledged, %d in flight at the kill; snapshots on disk: %v", total, len(pending), snapshotDirs(t, n.dataDir))

	a = n.start(t)
	l := a.listAll(t)
	for id, want := range acked {
		got, ok := l.rules[id]
		if !ok {
			t.Errorf("acknowledged rule %s is missing", id)
			continue
		}
		if got == *want {
			continue
		}
		// Only an update in flight at the kill may have gone further.
		var inflight *killOp
		for _, o := range pending {
			if !o.create && o.id == id {
				inflight = o
			}
		}
		if inflight != nil {
			want := inflight.req
			want.ModifyIndex = got.ModifyIndex
			if got == want && got.ModifyIndex > acked[id].ModifyIndex {
				t.Logf("the update of %s in flight at the kill was committed", id)
				continue
			}
		}
		t.Errorf("rule %s is\n  %+v\nwant the acknowledged\n  %+v", id, got, *want)
	}
	// Anything else must be a create that was in flight at the kill.
	var creates []*killOp
	for _, o := range pending {
		if o.create {
			creates = append(creates, o)
		}
	}
	for id, got := range l.rules {
		if acked[id] != nil {
			continue
		}
		matched := false
		for i, o := range creates {
			want := o.req
			want.ID, want.CreateIndex, want.ModifyIndex = got.ID, got.CreateIndex, got.CreateIndex
			if got == want {
				t.Logf("the create of %s in flight at the kill was committed", id)
				creates = append(creates[:i], creates[i+1:]...)
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("rule %+v was never acknowledged nor in flight", got)
		}
	}
	var maxIdx uint64
	for _, r := range acked {
		maxIdx = max(maxIdx, r.ModifyIndex)
	}
	if l.index < maxIdx {
		t.Errorf("list index after restart is %d, below the highest acknowledged index %d", l.index, maxIdx)
	}
	checkNewWrites(t, a, l, acked)
	a.stop(t)
}

// snapshotDirs lists the finished snapshots under the data directory.
func snapshotDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "raft", "snapshots"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading snapshot directory: %v", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dataDir, "raft", "snapshots", e.Name(), "state.bin")); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestAgentRestartFromSnapshot(t *testing.T) {
	n := newNode(t, "-snapshot-threshold=16", "-snapshot-interval=100ms")
	a := n.start(t)
	acked := writeMix(t, a, 40)

	deadline := time.Now().Add(startTimeout)
	for len(snapshotDirs(t, n.dataDir)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot in %s after %v", filepath.Join(n.dataDir, "raft", "snapshots"), startTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// More writes after the snapshot: the restart must restore the
	// snapshot and then replay the log entries that follow it.
	for id, r := range acked {
		if r == nil {
			continue
		}
		u := a.update(t, id, ruleBody("after snapshot", "", r.Selector, r.BindType, r.BindName, r.Namespace))
		acked[id] = &u
		break
	}
	more := writeMix(t, a, 10)
	for id, r := range more {
		acked[id] = r
	}
	before := a.listAll(t)
	checkAcked(t, before, acked)
	a.stop(t)

	snaps := snapshotDirs(t, n.dataDir)
	if len(snaps) == 0 || len(snaps) > 2 {
		t.Errorf("snapshots kept: %v, want 1 or 2", snaps)
	}

	a = n.start(t)
	if !strings.Contains(a.stderr.String(), "restored from snapshot") {
		t.Errorf("agent did not log that it restored from a snapshot")
	}
	after := a.listAll(t)
	if after.body != before.body || after.index != before.index {
		t.Errorf("list after restart from snapshot differs:\nbefore %d %s\nafter  %d %s", before.index, before.body, after.index, after.body)
	}
	checkAcked(t, after, acked)
	checkReads(t, a, acked)
	checkNewWrites(t, a, before, acked)
	a.stop(t)
}

func TestCommandLine(t *testing.T) {
	t.Run("version", func(t *testing.T) {
		p := startProc(t, "version")
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit code %d, want 0; stderr: %s", code, p.stderr)
		}
		if out := p.stdout.String(); !regexp.MustCompile(`^ctlplane v\S+\n$`).MatchString(out) {
			t.Errorf("version printed %q, want ctlplane v...", out)
		}
	})
	t.Run("unknown command", func(t *testing.T) {
		p := startProc(t, "frobnicate")
		if code := p.wait(t); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if errOut := p.stderr.String(); !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("stderr %q lacks the unknown command and the usage", errOut)
		}
	})
	t.Run("no command", func(t *testing.T) {
		p := startProc(t)
		if code := p.wait(t); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if !strings.Contains(p.stderr.String(), "Usage:") {
			t.Errorf("stderr %q lacks the usage", p.stderr)
		}
	})
	t.Run("agent without data dir", func(t *testing.T) {
		p := startProc(t, "agent")
		if code := p.wait(t); code == 0 {
			t.Fatalf("exit code 0, want non-zero")
		}
		if !strings.Contains(p.stderr.String(), "-data-dir") {
			t.Errorf("stderr %q does not mention -data-dir", p.stderr)
		}
	})
	t.Run("agent with unknown flag", func(t *testing.T) {
		p := startProc(t, "agent", "-no-such-flag")
		if code := p.wait(t); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if !strings.Contains(p.stderr.String(), "no-such-flag") {
			t.Errorf("stderr %q does not name the flag", p.stderr)
		}
	})
}
