package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/agent"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

func joinBody(id, name, raftAddr, httpAddr string, acl bool) string {
	return fmt.Sprintf(`{"ID":%q,"Name":%q,"RaftAddr":%q,"HTTPAddr":%q,"ACLEnabled":%t,"Key":"rogue-key-0123456789abcdef0123456789abcdef"}`,
		id, name, raftAddr, httpAddr, acl)
}

func recordOf(t *testing.T, ts *servertest.TestServer, id string) state.ServerInfo {
	t.Helper()
	_, rec, err := ts.State().Server(memdb.NewWatchSet(), id)
	if err != nil || rec == nil {
		t.Fatalf("record of %s: %v %v", id, rec, err)
	}
	return *rec
}

// Issue 8, finding 2b: a join with a member's ID and Raft address but
// another HTTP address (here even with a valid server certificate) is
// refused, and neither the record nor the Raft configuration changes, so
// followers keep forwarding to the real leader.
func TestJoinNeverRewritesAnotherMembersRecord(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	follower := followers(nodes, leader)[0]
	certs := servertest.TestCerts(t)
	rogue := certs.Client(t, certs.ServerCert, certs.ServerKey)
	before := configOf(t, leader, "")

	for _, victim := range []*servertest.TestServer{leader, follower} {
		want := recordOf(t, leader, victim.NodeID())
		body := joinBody(victim.NodeID(), victim.Config.NodeName, victim.RaftAddr(), "127.0.0.1:1", false)
		for _, via := range []*servertest.TestServer{leader, follower} {
			code, msg := get(t, rogue, http.MethodPut, "https://"+via.HTTPAddr()+"/v1/internal/join", body)
			wantMsg := fmt.Sprintf("Permission denied: server %s is a member of the cluster and only that server (with the key in its data directory) may change its record", victim.NodeID())
			if code != http.StatusForbidden || msg != wantMsg {
				t.Errorf("rogue join as %s via %s: %d %q, want 403 %q", victim.Config.NodeName, via.Config.NodeName, code, msg, wantMsg)
			}
		}
		if got := recordOf(t, leader, victim.NodeID()); !got.Same(&want) || got.ModifyIndex != want.ModifyIndex {
			t.Errorf("record of %s changed: %+v, was %+v", victim.Config.NodeName, got, want)
		}
	}
	if after := configOf(t, leader, ""); fmt.Sprint(after.Servers) != fmt.Sprint(before.Servers) {
		t.Errorf("Raft configuration changed: %+v, was %+v", after.Servers, before.Servers)
	}
	// Writes through a follower still reach the real leader.
	create(t, follower, "after-rogue")
}

// Without TLS, the same hijack with a management token is refused too.
func TestJoinNeverRewritesAnotherMembersRecordWithoutTLS(t *testing.T) {
	ts := servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(goodToken), servertest.InsecureRaft())
	want := recordOf(t, ts, ts.NodeID())
	r := ts.Do(t, http.MethodPut, "/v1/internal/join", joinBody(ts.NodeID(), "test", ts.RaftAddr(), "127.0.0.1:1", true), "X-Service-Token", goodToken)
	if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "only that server (with the key in its data directory) may change its record") {
		t.Fatalf("rogue join with the leader's ID: %s", r)
	}
	if got := recordOf(t, ts, ts.NodeID()); !got.Same(&want) {
		t.Fatalf("the leader's record changed: %+v, was %+v", got, want)
	}
}

// Issue 8, finding 2c: a join with a bogus ID and an unreachable Raft
// address leaves a single server a working leader: the joiner is a
// non-voter and is never promoted.
func TestBogusJoinerKeepsTheLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := servertest.Start(t, servertest.Persistent(t.TempDir()), func(c *server.Config) { c.DeadNonvoterTimeout = 5 * time.Second })
	certs := servertest.TestCerts(t)
	c := certs.Client(t, certs.ServerCert, certs.ServerKey)
	code, msg := get(t, c, http.MethodPut, "https://"+ts.HTTPAddr()+"/v1/internal/join",
		joinBody("99999999-8888-4777-8666-555555555555", "bogus", "127.0.0.1:1", "127.0.0.1:2", false))
	if code != http.StatusOK {
		t.Fatalf("bogus join: %d %q", code, msg)
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		create(t, ts, fmt.Sprintf("write-%d", i))
		time.Sleep(100 * time.Millisecond)
	}
	conf := configOf(t, ts, "")
	if len(conf.Servers) != 2 {
		t.Fatalf("configuration %+v: want the server and the bogus non-voter", conf.Servers)
	}
	for _, s := range conf.Servers {
		if s.Address == "127.0.0.1:1" && s.Voter {
			t.Fatalf("the unreachable joiner was made a voter: %+v", conf.Servers)
		}
	}
	// After DeadNonvoterTimeout it is removed, and its record with it.
	waitFor(t, 15*time.Second, "the unreachable non-voter to be removed", func() string {
		if c := configOf(t, ts, ""); len(c.Servers) != 1 {
			return fmt.Sprintf("configuration %+v", c.Servers)
		}
		if _, rec, _ := ts.State().Server(memdb.NewWatchSet(), "99999999-8888-4777-8666-555555555555"); rec != nil {
			return "its record is still there"
		}
		return ""
	})
	create(t, ts, "after-removal")
}

// Issue 8, finding 2a: a server whose -acl-enabled differs from the
// cluster's is refused with a clear error and stops; a direct join request
// saying so is a 409.
func TestJoinRefusesAnotherACLMode(t *testing.T) {
	first := servertest.Start(t, servertest.Persistent(t.TempDir()), servertest.ACL(goodToken))
	certs := servertest.TestCerts(t)
	c := certs.Client(t, certs.ServerCert, certs.ServerKey)
	code, msg := get(t, c, http.MethodPut, "https://"+first.HTTPAddr()+"/v1/internal/join",
		joinBody("77777777-8888-4777-8666-555555555555", "open", "127.0.0.1:1", "127.0.0.1:2", false))
	const wantMsg = "ACL mode mismatch: server open (77777777-8888-4777-8666-555555555555) has -acl-enabled=false but the cluster has -acl-enabled=true; the ACL mode is cluster state and every server must agree: start it with -acl-enabled=true"
	if code != http.StatusConflict || msg != wantMsg {
		t.Fatalf("join with ACLs off: %d %q, want 409 %q", code, msg, wantMsg)
	}

	open := servertest.StartNoWait(t, servertest.Join(0, first.HTTPAddr()))
	select {
	case err := <-open.Fatal():
		if !strings.Contains(err.Error(), "ACL mode mismatch") || !strings.Contains(err.Error(), "-acl-enabled=false") {
			t.Fatalf("the joiner stopped with %q", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a joiner with ACLs off did not stop")
	}
	if peers, _ := first.Peers(); len(peers) != 1 {
		t.Fatalf("peers %v: the joiner with ACLs off got in", peers)
	}
	if r := first.Do(t, http.MethodGet, "/v1/acl/tokens?stale", ""); r.Status != http.StatusForbidden {
		t.Fatalf("anonymous stale token list: %s", r)
	}
}

// Servers forming a new cluster that disagree on the ACL mode stop rather
// than form a mixed cluster.
func TestBootstrapRefusesMixedACLModes(t *testing.T) {
	addrs := []string{servertest.FreeAddr(t), servertest.FreeAddr(t)}
	a := servertest.StartNoWait(t, servertest.HTTPAddr(addrs[0]), servertest.Join(2, addrs...), servertest.ACL(goodToken))
	b := servertest.StartNoWait(t, servertest.HTTPAddr(addrs[1]), servertest.Join(2, addrs...))
	for _, n := range []*servertest.TestServer{a, b} {
		select {
		case err := <-n.Fatal():
			if !strings.Contains(err.Error(), "ACL mode mismatch") {
				t.Fatalf("stopped with %q", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("server %s (ACLs %t) did not stop", n.HTTPAddr(), n.Config.ACLEnabled)
		}
	}
}

// A persistent server keeps its ACL mode: started again with the other
// mode, it refuses to start.
func TestRestartWithAnotherACLModeRefused(t *testing.T) {
	dir := t.TempDir()
	ts := servertest.Start(t, servertest.Persistent(dir), servertest.ACL(goodToken))
	if err := ts.Shutdown(); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.DataDir, cfg.BootstrapExpect, cfg.BindAddr, cfg.HTTPAddr = dir, 1, "127.0.0.1:0", "127.0.0.1:0"
	cfg.ACLEnabled = false
	_, err := agent.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "ACL mode mismatch: this server's data directory belongs to a cluster with -acl-enabled=true, but the agent was started with -acl-enabled=false") {
		t.Fatalf("restart with ACLs off: %v", err)
	}
}
