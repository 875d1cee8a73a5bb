package http_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// A victim node run by a real client agent (raw_exec, its own logs API),
// against a server with ACLs on.
type victim struct {
	dir    string
	token  string
	url    string
	c      *client.Client
	stopFn func()
}

func (v *victim) start(t *testing.T, kill bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs raw_exec tasks (real processes)")
	}
	c, err := client.New(client.Config{Servers: []string{v.url}, Token: v.token, NodeName: "victim", DataDir: v.dir,
		RawExec: true, KillTasksOnShutdown: kill, HTTPAddr: "127.0.0.1:0", Resources: api.Resources{CPU: 4000, MemoryMB: 4096},
		// A followed stream opened on the node with a token re-checks it often.
		TokenCheckInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	v.c, v.stopFn = c, func() { cancel(); <-done }
	select {
	case <-c.Registered():
	case err := <-done:
		v.stopFn = func() {}
		t.Fatalf("victim client stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the victim did not register")
	}
}

func (v *victim) stop() {
	if v.stopFn != nil {
		v.stopFn()
		v.stopFn = nil
	}
}

// atkWait polls cond for up to 20s.
func atkWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// atkRefused checks that err is an API error with that status whose
// message starts with prefix.
func atkRefused(t *testing.T, what string, err error, status int, prefix string) {
	t.Helper()
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != status || !strings.HasPrefix(apiErr.Message, prefix) {
		t.Errorf("%s: got %v, want %d %q…", what, err, status, prefix)
	}
}

const victimJob = `{"Job":{"ID":"secret-app","Datacenters":["dc1"],"TaskGroups":[{"Name":"web","Count":1,
 "Update":{"MaxParallel":1,"HealthCheck":"manual","MinHealthyTime":10000000,"HealthyDeadline":60000000000,"ProgressDeadline":120000000000},
 "Tasks":[{"Name":"app","Driver":"raw_exec","Env":{"DB_PASSWORD":"hunter2"},
  "Config":{"command":"/bin/sh","args":["-c","echo hello-from-victim; exec sleep 300"]},
  "KillTimeout":100000000,"Resources":{"CPU":100,"MemoryMB":64}}]}]}}`

// TestNodeIdentityAttacker: a second node, holding its own node:write
// token, tries everything a node token could do to another node before
// node secrets existed. Each attempt is refused and the victim keeps
// running its job; the victim's own path (register, heartbeat, run, logs
// through the servers, restart with the same identity) still works.
func TestNodeIdentityAttacker(t *testing.T) {
	s := acxStart(t, "root-secret", servertest.ACL("root-secret"), servertest.HeartbeatTTL(time.Second))
	intro := s.tokenWithRules(t, "victim-intro", `node = "write"`, "")
	evil := s.tokenWithRules(t, "attacker", `node = "write"`, "")
	ctx := context.Background()

	v := &victim{dir: t.TempDir(), token: intro.SecretID, url: s.URL}
	v.start(t, false)
	t.Cleanup(func() { v.stop(); v.start(t, true); v.stop() }) // kills the tasks it left
	victimID, victimSecret := v.c.NodeID(), v.c.NodeSecret()
	if len(victimSecret) != 36 {
		t.Fatalf("victim secret %q", victimSecret)
	}
	fi, err := os.Stat(filepath.Join(v.dir, "client", "node-secret"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("node-secret file: %v %v", fi, err)
	}
	// Reads never show the secret, not even to the management token.
	for _, path := range []string{"/v1/node/" + victimID, "/v1/nodes"} {
		if body := s.must(t, "GET", path, "").Body; strings.Contains(body, victimSecret) || !strings.Contains(body, victimID) {
			t.Errorf("GET %s: %s", path, body)
		}
	}

	s.must(t, "PUT", "/v1/jobs", victimJob)
	var allocID string
	atkWait(t, "the victim's allocation to run", func() bool {
		var allocs []*state.Allocation
		s.must(t, "GET", "/v1/job/secret-app/allocations", "").JSON(t, &allocs)
		if len(allocs) == 1 && allocs[0].ClientStatus == state.AllocClientStatusRunning {
			allocID = allocs[0].ID
			return true
		}
		return false
	})

	// The attacker introduces its own node: that is what node:write is for.
	ac, err := api.NewClient(api.Config{Address: s.URL, Token: evil.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	own := ntNode("attacker")
	self := ntRegister(t, ac, own)

	// 1. Re-register the victim by ID: with its token, with its own secret.
	take := ntNode("victim")
	take.ID, take.HTTPAddr = victimID, "127.0.0.1:1"
	_, err = ac.RegisterNode(ctx, take)
	atkRefused(t, "re-register by ID", err, 403, "Permission denied: node secret ID does not match")
	_, err = ac.WithNodeSecret(self.secret).RegisterNode(ctx, take)
	atkRefused(t, "re-register by ID with another node's secret", err, 403, "Permission denied: node secret ID does not match")
	// 2. By Name alone: refused, and the answer does not name the victim.
	byName := ntNode("victim")
	byName.ID = ""
	resp := s.Do(t, "PUT", "/v1/client/register", mustJSON(t, byName), "X-Service-Token", evil.SecretID)
	if resp.Status != 403 || strings.Contains(resp.Body, victimID) {
		t.Errorf("re-register by name: %s", resp)
	}
	// 3. Heartbeat the victim.
	_, err = ac.Heartbeat(ctx, victimID)
	atkRefused(t, "heartbeat with a token", err, 403, "Permission denied")
	_, err = self.Heartbeat(ctx, victimID)
	atkRefused(t, "heartbeat with another node's secret", err, 403, "Permission denied: the node secret presented is not node "+victimID)
	// 4. Read the victim's allocations (their Env and Config).
	for _, h := range [][]string{{"X-Service-Token", evil.SecretID}, {api.NodeSecretHeader, self.secret}, {"X-Service-Token", "root-secret"}} {
		r := s.Do(t, "GET", "/v1/client/allocations/"+victimID, "", h...)
		if r.Status != 403 || strings.Contains(r.Body, "hunter2") {
			t.Errorf("read the victim's allocations with %s: %s", h[0], r)
		}
	}
	// A blocking read is refused before it waits.
	began := time.Now()
	r := s.Do(t, "GET", "/v1/client/allocations/"+victimID+"?index=999999&wait=5s", "", api.NodeSecretHeader, self.secret)
	if r.Status != 403 || time.Since(began) > 2*time.Second {
		t.Errorf("blocking read of the victim's allocations: %s after %v", r, time.Since(began))
	}
	// 5. Update the victim's allocations: a forged failure, forged health.
	failed := []*api.AllocClientUpdate{{ID: allocID, ClientStatus: api.AllocClientStatusFailed,
		TaskStates: map[string]*api.TaskState{"app": {State: api.TaskStateDead, Failed: true}}}}
	_, err = ac.UpdateAllocations(ctx, victimID, failed)
	atkRefused(t, "update as the victim with a token", err, 403, "Permission denied")
	_, err = self.UpdateAllocations(ctx, victimID, failed)
	atkRefused(t, "update as the victim with another secret", err, 403, "Permission denied")
	_, err = self.UpdateAllocations(ctx, own.ID, failed)
	atkRefused(t, "update of the victim's allocation as itself", err, 403,
		"Permission denied: allocation "+allocID+" is not placed on node "+own.ID)
	healthy := true
	health := []*api.AllocClientUpdate{{ID: allocID, ClientStatus: api.AllocClientStatusRunning,
		DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now()}}}
	_, err = self.UpdateAllocations(ctx, own.ID, health)
	atkRefused(t, "forged health as itself", err, 403, "Permission denied: allocation "+allocID)
	// Even the victim's own client may not report health of a manual group.
	_, err = ac.AsNode(victimSecret).UpdateAllocations(ctx, victimID, health)
	atkRefused(t, "client-reported health of a manual group", err, 409,
		`Task group "web" of alloc "`+allocID+`" uses health_check = "manual": allocation health can only be set by hand`)

	// The victim is untouched: its node, its allocation, no replacement;
	// and it keeps heartbeating (TTL 1s: it would be down by now otherwise).
	time.Sleep(1500 * time.Millisecond)
	var n api.Node
	s.must(t, "GET", "/v1/node/"+victimID, "").JSON(t, &n)
	if n.Status != api.NodeStatusReady || n.HTTPAddr != v.c.HTTPAddr() || n.Name != "victim" {
		t.Errorf("victim node: %+v", n)
	}
	var allocs []*state.Allocation
	s.must(t, "GET", "/v1/job/secret-app/allocations", "").JSON(t, &allocs)
	if len(allocs) != 1 || allocs[0].ClientStatus != state.AllocClientStatusRunning || allocs[0].DeploymentStatus.IsHealthy() {
		t.Errorf("victim allocations after the attack: %+v", allocs)
	}
	if evals := ntEvals(t, s.TestServer, "secret-app", state.EvalTriggerRetryFailedAlloc); len(evals) != 0 {
		t.Errorf("a forged failure caused %d evaluations", len(evals))
	}

	// The operator reads the logs through the servers.
	logs := s.mustAs(t, "root-secret", "GET", "/v1/client/fs/logs/"+allocID+"?task=app&type=stdout&plain=true", "")
	if logs.Body != "hello-from-victim\n" {
		t.Errorf("logs: %q", logs.Body)
	}

	// A restarted client keeps its identity and its task.
	v.stop()
	v.start(t, false)
	if v.c.NodeID() != victimID || v.c.NodeSecret() != victimSecret {
		t.Fatalf("restarted client: %s %s, want %s and the same secret", v.c.NodeID(), v.c.NodeSecret(), victimID)
	}
	if _, err := ac.AsNode(victimSecret).Heartbeat(ctx, victimID); err != nil {
		t.Errorf("the victim's secret after its restart: %v", err)
	}
	s.must(t, "GET", "/v1/job/secret-app/allocations", "").JSON(t, &allocs)
	if len(allocs) != 1 || allocs[0].ID != allocID || allocs[0].ClientStatus != state.AllocClientStatusRunning {
		t.Errorf("after the restart: %+v", allocs)
	}
}

// TestNodeLogsProxyForwardsNoCredentials: a listener registered as a
// node's HTTP address sees only a grant for that allocation, task and
// stream when an operator reads that node's logs; a server's own address
// and unreachable ones are refused without quoting what the dial said.
func TestNodeLogsProxyForwardsNoCredentials(t *testing.T) {
	s := acxStart(t, "root-secret", servertest.ACL("root-secret"))
	intro := s.tokenWithRules(t, "intro", `node = "write"`, "")
	ac, err := api.NewClient(api.Config{Address: s.URL, Token: intro.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	caught := make(chan http.Header, 4)
	catcher := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caught <- r.Header.Clone()
		_, _ = io.WriteString(w, "caught")
	})}
	ln := listenLocal(t)
	go func() { _ = catcher.Serve(ln) }()
	t.Cleanup(func() { _ = catcher.Close() })

	node := ntNode("catcher")
	node.HTTPAddr = ln.Addr().String()
	nc := ntRegister(t, ac, node)
	// A server's own address is refused at registration; the same
	// listener by another name passes there, and is refused by the proxy
	// on the address it would dial.
	serverAddr := strings.TrimPrefix(s.URL, "http://")
	loop := ntNode("loop")
	loop.HTTPAddr = serverAddr
	_, err = ac.RegisterNode(context.Background(), loop)
	atkRefused(t, "a server's address as HTTPAddr", err, 400, `Node HTTPAddr "`+serverAddr+`" is the address of server `)
	_, port, _ := net.SplitHostPort(serverAddr)
	loop.HTTPAddr = "localhost:" + port
	ntRegister(t, ac, loop)
	dead := ntNode("dead")
	dead.HTTPAddr = "127.0.0.1:1"
	ntRegister(t, ac, dead)

	job := ntJob(t, s.TestServer, "logged", nil, nil)
	onCatcher, _ := ntPlace(t, s.TestServer, job, node.ID, node.Name, 1, time.Now())
	onLoop, _ := ntPlace(t, s.TestServer, job, loop.ID, loop.Name, 1, time.Now())
	onDead, _ := ntPlace(t, s.TestServer, job, dead.ID, dead.Name, 1, time.Now())
	allocID := onCatcher[0].ID

	creds := []string{"X-Service-Token", "root-secret", "Authorization", "Bearer root-secret", "X-Nomad-Token", "root-secret",
		"X-Consul-Token", "root-secret", "Cookie", "session=root-secret", "Proxy-Authorization", "Basic cm9vdA=="}
	resp := s.Do(t, "GET", "/v1/client/fs/logs/"+allocID+"?task=server&type=stdout&follow=true", "", creds...)
	if resp.Status != 200 || resp.Body != "caught" {
		t.Fatalf("logs through the catcher: %s", resp)
	}
	var h http.Header
	select {
	case h = <-caught:
	case <-time.After(5 * time.Second):
		t.Fatal("the catcher saw no request")
	}
	for name, vals := range h {
		for _, val := range vals {
			if strings.Contains(val, "root-secret") || strings.Contains(val, "cm9vdA") {
				t.Errorf("header %s carried a credential: %q", name, val)
			}
		}
	}
	for _, name := range []string{"X-Service-Token", "Authorization", "X-Nomad-Token", "X-Consul-Token", "Cookie", "Proxy-Authorization"} {
		if h.Get(name) != "" {
			t.Errorf("header %s reached the node", name)
		}
	}
	grant := h.Get(api.LogsGrantHeader)
	now := time.Now()
	if err := api.VerifyLogsGrant(nc.secret, grant, allocID, "server", "stdout", now); err != nil {
		t.Errorf("the grant does not verify for its own allocation: %v", err)
	}
	for _, c := range []struct{ alloc, task, stream string }{
		{onLoop[0].ID, "server", "stdout"}, {allocID, "other", "stdout"}, {allocID, "server", "stderr"},
	} {
		if api.VerifyLogsGrant(nc.secret, grant, c.alloc, c.task, c.stream, now) == nil {
			t.Errorf("the grant verifies for %+v", c)
		}
	}
	if api.VerifyLogsGrant(nc.secret, grant, allocID, "server", "stdout", now.Add(2*api.LogsGrantTTL)) == nil {
		t.Error("the grant verifies after its expiry")
	}
	if api.VerifyLogsGrant(uuid.NewString(), grant, allocID, "server", "stdout", now) == nil {
		t.Error("the grant verifies under another secret")
	}

	// A server's own address, and an unreachable one.
	expectError(t, s.Do(t, "GET", "/v1/client/fs/logs/"+onLoop[0].ID+"?task=server&type=stdout", "", "X-Service-Token", "root-secret"),
		502, "refusing to call node loop: its HTTP address is one of the servers' own")
	expectError(t, s.Do(t, "GET", "/v1/client/fs/logs/"+onDead[0].ID+"?task=server&type=stdout", "", "X-Service-Token", "root-secret"),
		502, "failed to reach node dead")
	// Without read-logs: refused before any call.
	reader := s.tokenWithRules(t, "reader", `node = "read"`+"\n"+`namespace "default" { policy = "read" }`, "")
	expectError(t, s.Do(t, "GET", "/v1/client/fs/logs/"+allocID+"?task=server&type=stdout", "", "X-Service-Token", reader.SecretID), 403, "Permission denied")
	select {
	case h := <-caught:
		t.Errorf("a refused read reached the node: %v", h)
	default:
	}
}

func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
