package server_test

// Multi-node clusters of in-process servers over real TCP on 127.0.0.1:
// formation with -bootstrap-expect in every start order, a late joiner,
// leader forwarding, a minority partition, and removing peers.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

const raftTimeout = 300 * time.Millisecond

// member starts one server that forms or joins a cluster.
func member(t testing.TB, name, httpAddr string, expect int, join []string, opts ...servertest.Option) *servertest.TestServer {
	t.Helper()
	o := []servertest.Option{
		servertest.HTTPAddr(httpAddr),
		servertest.Join(expect, join...),
		servertest.RaftTimeout(raftTimeout),
		func(c *server.Config) { c.NodeName = name },
	}
	return servertest.StartNoWait(t, append(o, opts...)...)
}

func freeAddrs(t testing.TB, n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = servertest.FreeAddr(t)
	}
	return addrs
}

// formCluster starts n servers with -bootstrap-expect=n in the given order,
// waiting gap between starts; join(i) gives node i's -join addresses.
func formCluster(t testing.TB, order []int, gap time.Duration, join func(addrs []string, i int) []string) []*servertest.TestServer {
	t.Helper()
	n := len(order)
	addrs := freeAddrs(t, n)
	nodes := make([]*servertest.TestServer, n)
	for k, i := range order {
		if k > 0 && gap > 0 {
			time.Sleep(gap)
		}
		nodes[i] = member(t, fmt.Sprintf("node%d", i+1), addrs[i], n, join(addrs, i))
	}
	servertest.WaitForCluster(t, nodes)
	return nodes
}

func joinAll(addrs []string, _ int) []string { return addrs }

// joinNext gives each node only the next one's address: the others are
// learned through it.
func joinNext(addrs []string, i int) []string { return []string{addrs[(i+1)%len(addrs)]} }

func permutations(s []int) [][]int {
	if len(s) <= 1 {
		return [][]int{append([]int(nil), s...)}
	}
	var out [][]int
	for i := range s {
		rest := append(append([]int(nil), s[:i]...), s[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{s[i]}, p...))
		}
	}
	return out
}

// checkFormed asserts one cluster of all nodes, that every node agrees on
// the Raft configuration, and that a write is seen everywhere.
func checkFormed(t *testing.T, nodes []*servertest.TestServer) {
	t.Helper()
	checkOneCluster(t, nodes)
	leader := servertest.Leader(t, nodes)
	// Every server records its node name in the replicated state soon after
	// the cluster forms.
	var want raftConfig
	waitFor(t, 10*time.Second, "every server's name to be recorded", func() string {
		want = configOf(t, leader, "")
		for _, s := range want.Servers {
			if s.Node == "" {
				return fmt.Sprintf("server %s has no node name yet", s.ID)
			}
		}
		return ""
	})
	names := map[string]string{}
	for _, n := range nodes {
		names[n.NodeID()] = n.Config.NodeName
	}
	for _, s := range want.Servers {
		if names[s.ID] != s.Node {
			t.Errorf("configuration names server %s %q, want %q", s.ID, s.Node, names[s.ID])
		}
	}
	if len(want.Servers) != len(nodes) {
		t.Fatalf("configuration has %d servers, want %d: %+v", len(want.Servers), len(nodes), want)
	}
	leaders := 0
	for _, s := range want.Servers {
		if !s.Voter {
			t.Errorf("server %+v is not a voter", s)
		}
		if s.Leader {
			leaders++
			if s.Address != leader.RaftAddr() || s.ID != leader.NodeID() {
				t.Errorf("configuration names %+v as leader, want %s", s, leader.RaftAddr())
			}
		}
	}
	if leaders != 1 {
		t.Errorf("configuration names %d leaders: %+v", leaders, want)
	}
	// Every node reads the same configuration, names included, from its own state.
	for _, n := range nodes {
		waitFor(t, 10*time.Second, n.Config.NodeName+" to know every server", func() string {
			got := configOf(t, n, "?stale")
			if fmt.Sprint(got.Servers) != fmt.Sprint(want.Servers) {
				return fmt.Sprintf("has %+v, want %+v", got.Servers, want.Servers)
			}
			return ""
		})
	}
	create(t, nodes[len(nodes)-1], "formed")
	waitConverged(t, nodes, listQ(t, leader, ""))
}

func TestClusterFormationThreeNodesEveryOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	gaps := []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond}
	for k, order := range permutations([]int{0, 1, 2}) {
		gap := gaps[k%len(gaps)]
		t.Run(fmt.Sprintf("order%v_gap%v", order, gap), func(t *testing.T) {
			nodes := formCluster(t, order, gap, joinAll)
			checkFormed(t, nodes)
		})
	}
}

func TestClusterFormationFiveNodes(t *testing.T) {
	t.Run("all at once", func(t *testing.T) {
		checkFormed(t, formCluster(t, []int{0, 1, 2, 3, 4}, 0, joinAll))
	})
	t.Run("reversed one at a time, each joining only the next", func(t *testing.T) {
		checkFormed(t, formCluster(t, []int{4, 3, 2, 1, 0}, 300*time.Millisecond, joinNext))
	})
}

func TestClusterLateJoinerBecomesVoter(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	seedRules(t, followers(nodes, leader)[0], "before", 12)
	before := listQ(t, leader, "")

	// A fourth server with only -join, no -bootstrap-expect.
	late := member(t, "node4", servertest.FreeAddr(t), 0, []string{nodes[1].HTTPAddr()})
	all := append(nodes, late)
	waitFor(t, 15*time.Second, "the late joiner to become a voter", func() string {
		for _, s := range configOf(t, leader, "").Servers {
			if s.ID == late.NodeID() {
				if !s.Voter || s.Address != late.RaftAddr() {
					return fmt.Sprintf("it is %+v", s)
				}
				if s.Node != "node4" {
					return fmt.Sprintf("its node name is %q", s.Node)
				}
				return ""
			}
		}
		return "not in the configuration"
	})
	servertest.WaitForCluster(t, all)
	checkOneCluster(t, all)

	// It serves, from its own state, what was written before it joined.
	waitFor(t, 15*time.Second, "the late joiner to catch up", func() string {
		got, err := tryListStale(late)
		if err != nil {
			return err.Error()
		}
		if got.Body != before.Body || got.Index != before.Index {
			return fmt.Sprintf("has %v, want %v", got, before)
		}
		if got.KnownLeader != "true" {
			return "KnownLeader " + got.KnownLeader
		}
		return ""
	})
	// And it takes part: a write through it is everywhere.
	create(t, late, "through-late")
	waitConverged(t, all, listQ(t, leader, ""))
	if c := configOf(t, late, ""); len(c.Servers) != 4 {
		t.Errorf("configuration through the late joiner has %d servers: %+v", len(c.Servers), c)
	}
}

// sameExchange compares two answers to the same request: status, body and
// every header but Date.
func sameExchange(t *testing.T, what string, got, want *servertest.Response) {
	t.Helper()
	if got.Status != want.Status || got.Body != want.Body {
		t.Errorf("%s: follower answered %s, leader %s", what, got, want)
	}
	keys := map[string]bool{}
	for k := range got.Header {
		keys[k] = true
	}
	for k := range want.Header {
		keys[k] = true
	}
	for k := range keys {
		if k == "Date" {
			continue
		}
		if g, w := strings.Join(got.Header.Values(k), ","), strings.Join(want.Header.Values(k), ","); g != w {
			t.Errorf("%s: header %s is %q through the follower, %q on the leader", what, k, g, w)
		}
	}
}

func TestClusterForwarding(t *testing.T) {
	nodes := startCluster(t, 3)
	waitNamed(t, nodes)
	leader := servertest.Leader(t, nodes)
	fs := followers(nodes, leader)
	f1, f2 := fs[0], fs[1]

	// Writes through a follower answer like writes on the leader.
	onLeader := write(t, leader, http.MethodPut, rulePath, ruleBody("d", "minikube", `a=="b"`, "role", "on-leader", "team"))
	viaFollower := write(t, f1, http.MethodPut, rulePath, ruleBody("d", "minikube", `a=="b"`, "role", "via-follower", "team"))
	rl, rf := decodeRule(t, onLeader.Body), decodeRule(t, viaFollower.Body)
	if rf.CreateIndex <= rl.CreateIndex || rf.ModifyIndex != rf.CreateIndex {
		t.Errorf("create through the follower has indexes %d/%d after the leader's %d", rf.CreateIndex, rf.ModifyIndex, rl.CreateIndex)
	}
	masked := func(r rule) rule { r.ID, r.BindName, r.CreateIndex, r.ModifyIndex = "", "", 0, 0; return r }
	if masked(rl) != masked(rf) {
		t.Errorf("create through the follower answered %+v, on the leader %+v", rf, rl)
	}
	for _, k := range []string{"Content-Type", "X-Content-Type-Options"} {
		if onLeader.Header.Get(k) != viaFollower.Header.Get(k) {
			t.Errorf("create header %s: %q through the follower, %q on the leader", k, viaFollower.Header.Get(k), onLeader.Header.Get(k))
		}
	}
	// The follower's create is what the leader reads back.
	if got := must(t, leader, http.MethodGet, rulePath+"/"+rf.ID+"?ns=team", "").Body; got != viaFollower.Body {
		t.Errorf("leader reads %s, the follower's create answered %s", got, viaFollower.Body)
	}
	// An update and a delete through the other follower.
	upd := write(t, f2, http.MethodPut, rulePath+"/"+rl.ID, ruleBody("new", "", "", "node", "updated", "team"))
	if got := must(t, leader, http.MethodGet, rulePath+"/"+rl.ID+"?ns=team", "").Body; got != upd.Body {
		t.Errorf("leader reads %s after the update through a follower answered %s", got, upd.Body)
	}
	if body := write(t, f2, http.MethodDelete, rulePath+"/"+rf.ID+"?ns=team", "").Body; body != "true" {
		t.Errorf("delete through a follower answered %q", body)
	}
	seedRules(t, f1, "mixed", 6)

	// The same requests on the leader and through each follower get the
	// same answer: status, body and headers (index, KnownLeader, LastContact).
	missing := "11111111-2222-4333-8444-555555555555"
	reqs := []struct{ method, path, body string }{
		{"GET", rulesPath + "?ns=*", ""},
		{"GET", rulesPath + "?ns=team&consistent", ""},
		{"GET", rulesPath + "?ns=*&authmethod=minikube&pretty", ""},
		{"GET", rulePath + "/" + rl.ID + "?ns=team", ""},
		{"GET", rulePath + "/" + rl.ID + "?ns=team&consistent", ""},
		{"GET", rulePath + "/" + missing, ""},
		{"GET", rulesPath + "?stale&consistent", ""},
		{"GET", rulesPath + "?index=x", ""},
		{"PUT", rulePath, `{"Foo":1}`},
		{"PUT", rulePath, ruleBody("", "", "", "service", "x", "")},
		{"PUT", rulePath + "/" + missing, ruleBody("", "m", "", "service", "x", "")},
		{"PUT", rulePath + "/not-a-uuid", ruleBody("", "m", "", "service", "x", "")},
		{"DELETE", rulePath + "/" + missing, ""},
		{"PATCH", rulesPath, ""},
		{"GET", "/v1/no/such/endpoint", ""},
		{"GET", "/v1/operator/raft/configuration", ""},
		{"GET", "/v1/operator/raft/configuration?consistent", ""},
	}
	for _, f := range fs {
		for _, rq := range reqs {
			var want, got *servertest.Response
			for attempt := 0; attempt < 20; attempt++ {
				want = call(t, leader, rq.method, rq.path, rq.body)
				got = call(t, f, rq.method, rq.path, rq.body)
				if (want.Status != http.StatusServiceUnavailable && got.Status != http.StatusServiceUnavailable) || attempt == 19 {
					break
				}
				time.Sleep(100 * time.Millisecond) // an election: ask again
			}
			sameExchange(t, rq.method+" "+rq.path+" via "+f.Config.NodeName, got, want)
		}
	}
	// Default reads through a follower are served by the leader.
	want := listQ(t, leader, "")
	for _, f := range fs {
		got := listQ(t, f, "")
		if got != want {
			t.Errorf("default read through %s: %+v, leader %+v", f.Config.NodeName, got, want)
		}
		if got.KnownLeader != "true" || got.LastContact != "0" {
			t.Errorf("default read through %s: KnownLeader %s LastContact %s, want true and 0 (the leader's)", f.Config.NodeName, got.KnownLeader, got.LastContact)
		}
		c := listQ(t, f, "&consistent")
		if c.Body != want.Body || c.Index != want.Index {
			t.Errorf("consistent read through %s: %v, want %v", f.Config.NodeName, c, want)
		}
	}
	// Stale reads are answered by each node from its own state.
	waitConverged(t, nodes, want)
	for _, n := range nodes {
		got := listQ(t, n, "&stale")
		if got.KnownLeader != "true" {
			t.Errorf("stale read on %s: KnownLeader %q, want true", n.Config.NodeName, got.KnownLeader)
		}
		if n == leader && got.LastContact != "0" {
			t.Errorf("stale read on the leader: LastContact %q, want 0", got.LastContact)
		}
	}

	// A request that was already forwarded once is never forwarded again.
	r := call(t, f1, http.MethodGet, rulesPath, "", "X-Service-Forwarded-By", "elsewhere")
	if r.Status != http.StatusServiceUnavailable || r.Body != noLeader || r.Header.Get("Content-Type") != textType {
		t.Errorf("forwarded read reaching a follower: %s %q, want 503 %q", r, r.Header.Get("Content-Type"), noLeader)
	}
	r = call(t, f1, http.MethodPut, rulePath, ruleBody("", "m", "", "service", "twice", ""), "X-Service-Forwarded-By", "elsewhere")
	if r.Status != http.StatusServiceUnavailable || r.Body != noLeader {
		t.Errorf("forwarded write reaching a follower: %s, want 503 %q", r, noLeader)
	}
	if r := call(t, f1, http.MethodGet, rulesPath+"?stale", "", "X-Service-Forwarded-By", "elsewhere"); r.Status != 200 {
		t.Errorf("forwarded stale read on a follower: %s, want 200", r)
	}
	if r := call(t, leader, http.MethodGet, rulesPath, "", "X-Service-Forwarded-By", "elsewhere"); r.Status != 200 {
		t.Errorf("forwarded read reaching the leader: %s, want 200", r)
	}
	if got := listQ(t, leader, ""); got.Index != want.Index {
		t.Errorf("a refused forwarded write changed the index: %d, want %d", got.Index, want.Index)
	}

	// A blocking query through a follower wakes on a write through the other.
	type result struct {
		l   *servertest.Response
		err error
	}
	woke := make(chan result, 1)
	go func() {
		r, err := tryCall(client, f1, http.MethodGet, fmt.Sprintf("%s?ns=*&index=%d&wait=15s", rulesPath, want.Index), "")
		woke <- result{r, err}
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case res := <-woke:
		t.Fatalf("blocking query answered before any write: %v %v", res.l, res.err)
	default:
	}
	nr := create(t, f2, "wakes-the-query")
	select {
	case res := <-woke:
		if res.err != nil || res.l.Status != 200 {
			t.Fatalf("blocking query: %v %v", res.l, res.err)
		}
		got := toListing(t, res.l)
		if got.Index != nr.CreateIndex || !strings.Contains(got.Body, nr.ID) {
			t.Errorf("blocking query woke with %v, want index %d and rule %s", got, nr.CreateIndex, nr.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query through a follower did not wake on a write")
	}
}

// proxiedCluster starts n servers that each listen on their own Raft port
// and advertise a proxy in front of it. The proxies read the sender's ID
// from the first Raft RPC, so these clusters run Raft without TLS.
func proxiedCluster(t *testing.T, n int) ([]*servertest.TestServer, []*raftProxy) {
	t.Helper()
	addrs := freeAddrs(t, n)
	nodes := make([]*servertest.TestServer, n)
	proxies := make([]*raftProxy, n)
	for i := range nodes {
		bind := servertest.FreeAddr(t)
		proxies[i] = startRaftProxy(t, bind)
		nodes[i] = member(t, fmt.Sprintf("node%d", i+1), addrs[i], n, addrs,
			servertest.BindAddr(bind), servertest.Advertise(proxies[i].Addr()), servertest.InsecureRaft())
	}
	servertest.WaitForCluster(t, nodes)
	checkOneCluster(t, nodes)
	for i, n := range nodes {
		if n.RaftAddr() != proxies[i].Addr() {
			t.Fatalf("%s advertises %s, want its proxy %s", n.Config.NodeName, n.RaftAddr(), proxies[i].Addr())
		}
	}
	return nodes, proxies
}

// isolate cuts node i off from the others, both ways.
func isolate(nodes []*servertest.TestServer, proxies []*raftProxy, i int) {
	proxies[i].Cut()
	for j, p := range proxies {
		if j != i {
			p.Block(nodes[i].NodeID())
		}
	}
}

func heal(proxies []*raftProxy) {
	for _, p := range proxies {
		p.Heal()
	}
}

func TestClusterMinorityPartition(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run("isolated "+which, func(t *testing.T) {
			nodes, proxies := proxiedCluster(t, 3)
			leader := servertest.Leader(t, nodes)
			seedRules(t, leader, "before", 8)
			before := listQ(t, leader, "")
			waitConverged(t, nodes, before)

			cutIdx := 0
			for i, n := range nodes {
				if (which == "leader") == (n == leader) {
					cutIdx = i
					break
				}
			}
			cutNode := nodes[cutIdx]
			var majority []*servertest.TestServer
			for i, n := range nodes {
				if i != cutIdx {
					majority = append(majority, n)
				}
			}
			isolate(nodes, proxies, cutIdx)

			// The cut node loses its leader: stale reads still answer, from
			// its own (old) state, with KnownLeader false.
			waitFor(t, 10*time.Second, "the cut node to lose its leader", func() string {
				got, err := tryListStale(cutNode)
				if err != nil {
					return err.Error()
				}
				if got.KnownLeader != "false" {
					return "KnownLeader " + got.KnownLeader
				}
				if got.Body != before.Body || got.Index != before.Index {
					return fmt.Sprintf("stale read %v, want the state before the cut %v", got, before)
				}
				if ms, err := strconv.Atoi(got.LastContact); err != nil || (which == "follower" && ms < int(raftTimeout/time.Millisecond)) {
					return fmt.Sprintf("LastContact %q, want at least the Raft timeout", got.LastContact)
				}
				return ""
			})
			// The majority has (or elects) a leader and takes writes.
			newLeader := servertest.Leader(t, majority)
			var during []rule
			for i, n := range append(majority, newLeader) {
				during = append(during, create(t, n, fmt.Sprintf("during-%d", i)))
			}
			duringList := listQ(t, newLeader, "&stale")
			for _, r := range during {
				if !strings.Contains(duringList.Body, r.ID) {
					t.Errorf("majority list lacks %+v: %v", r, duringList)
				}
			}

			// Writes and non-stale reads on the cut node fail promptly with
			// 503, whatever it was before the cut.
			short := &http.Client{Timeout: 10 * time.Second}
			for _, rq := range []struct{ method, path, body string }{
				{"PUT", rulePath, ruleBody("", "m", "", "service", "refused", "")},
				{"PUT", rulePath + "/" + during[0].ID, ruleBody("", "m", "", "service", "refused", "")},
				{"DELETE", rulePath + "/" + during[0].ID, ""},
				{"GET", rulesPath, ""},
				{"GET", rulesPath + "?consistent", ""},
				{"GET", rulePath + "/" + during[0].ID + "?consistent", ""},
				{"GET", "/v1/operator/raft/configuration", ""},
				{"GET", "/v1/snapshot", ""},
			} {
				r, err := tryCall(short, cutNode, rq.method, rq.path, rq.body)
				if err != nil {
					t.Errorf("%s %s on the cut node: %v (want a prompt 503)", rq.method, rq.path, err)
					continue
				}
				if r.Status != http.StatusServiceUnavailable || r.Body != noLeader {
					t.Errorf("%s %s on the cut node: %s, want 503 %q", rq.method, rq.path, r, noLeader)
				}
			}
			var leaderAddr string
			must(t, cutNode, "GET", "/v1/status/leader", "").JSON(t, &leaderAddr)
			if leaderAddr != "" {
				t.Errorf("cut node reports leader %q, want none", leaderAddr)
			}
			// Nothing the cut node refused reached the majority.
			if got := listQ(t, newLeader, "&stale"); got.Body != duringList.Body || got.Index != duringList.Index {
				t.Errorf("majority state changed while the cut node refused writes: %v, want %v", got, duringList)
			}

			heal(proxies)
			// The cut node catches up and follows the majority's leader.
			waitFor(t, 20*time.Second, "the healed node to catch up", func() string {
				got, err := tryListStale(cutNode)
				if err != nil {
					return err.Error()
				}
				r, err := tryCall(client, servertest.Leader(t, nodes), http.MethodGet, rulesPath+"?ns=*", "")
				if err != nil || r.Status != 200 {
					return fmt.Sprintf("leader list: %v %v", r, err)
				}
				cur := toListing(t, r)
				if got.Body != cur.Body || got.Index != cur.Index || got.KnownLeader != "true" {
					return fmt.Sprintf("has %v (known leader %s), leader has %v", got, got.KnownLeader, cur)
				}
				return ""
			})
			checkOneCluster(t, nodes)
			servertest.WaitForCluster(t, nodes)
			after := create(t, cutNode, "after-heal")
			final := listQ(t, servertest.Leader(t, nodes), "")
			rules := rulesOf(t, final.Body)
			for _, r := range append(during, after) {
				if rules[r.ID] != r {
					t.Errorf("rule %+v acknowledged during or after the partition is %+v", r, rules[r.ID])
				}
			}
			allowed := map[string]bool{}
			for id, r := range rulesOf(t, before.Body) {
				allowed[r.BindName] = true
				if rules[id] != r {
					t.Errorf("rule %+v from before the partition is %+v", r, rules[id])
				}
			}
			for _, r := range append(during, after) {
				allowed[r.BindName] = true
			}
			// Nothing the cut node refused is there.
			for _, r := range rules {
				if !allowed[r.BindName] {
					t.Errorf("rule %+v was never acknowledged", r)
				}
			}
			waitConverged(t, nodes, final)
		})
	}
}

func TestClusterRemovePeer(t *testing.T) {
	nodes := startCluster(t, 3)
	late := member(t, "node4", servertest.FreeAddr(t), 0, []string{nodes[0].HTTPAddr()})
	all := append(append([]*servertest.TestServer(nil), nodes...), late)
	servertest.WaitForCluster(t, all)
	checkOneCluster(t, all)
	leader := servertest.Leader(t, all)
	seedRules(t, leader, "r", 4)
	fs := followers(nodes, leader) // followers among the first three

	// Missing and unknown IDs, through a follower and on the leader.
	for _, n := range []*servertest.TestServer{fs[0], leader} {
		r := call(t, n, http.MethodDelete, "/v1/operator/raft/peer", "")
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "?id") || r.Header.Get("Content-Type") != textType {
			t.Errorf("remove without id on %s: %s, want 400 naming ?id", n.Config.NodeName, r)
		}
		r = call(t, n, http.MethodDelete, "/v1/operator/raft/peer?id=", "")
		if r.Status != http.StatusBadRequest {
			t.Errorf("remove with empty id on %s: %s, want 400", n.Config.NodeName, r)
		}
		r = call(t, n, http.MethodDelete, "/v1/operator/raft/peer?id=no-such-server", "")
		if r.Status != http.StatusNotFound || !strings.Contains(r.Body, `"no-such-server"`) {
			t.Errorf("remove unknown id on %s: %s, want 404 naming the id", n.Config.NodeName, r)
		}
		r = call(t, n, http.MethodGet, "/v1/operator/raft/peer?id=x", "")
		if r.Status != http.StatusMethodNotAllowed || !strings.Contains(r.Header.Get("Allow"), "DELETE") {
			t.Errorf("GET of the peer endpoint on %s: %s Allow %q, want 405", n.Config.NodeName, r, r.Header.Get("Allow"))
		}
	}
	if c := configOf(t, leader, ""); len(c.Servers) != 4 {
		t.Fatalf("refused removals changed the configuration: %+v", c)
	}

	// Remove the stopped late joiner (the usual case: a dead server), through a follower.
	if err := late.Shutdown(); err != nil {
		t.Fatalf("stopping node4: %v", err)
	}
	if r := call(t, fs[0], http.MethodDelete, "/v1/operator/raft/peer?id="+late.NodeID(), ""); r.Status != 200 || r.Body != "true" {
		t.Fatalf("remove node4: %s, want 200 true", r)
	}
	wantIDs := []string{}
	for _, n := range nodes {
		wantIDs = append(wantIDs, n.NodeID())
	}
	sort.Strings(wantIDs)
	checkConfig := func(members []*servertest.TestServer, ids []string) {
		t.Helper()
		for _, n := range members {
			waitFor(t, 10*time.Second, n.Config.NodeName+" to see the configuration shrink", func() string {
				c := configOf(t, n, "?stale")
				var got []string
				for _, s := range c.Servers {
					got = append(got, s.ID)
					if s.Node == "" {
						return fmt.Sprintf("server %s has no name", s.ID)
					}
				}
				sort.Strings(got)
				if strings.Join(got, ",") != strings.Join(ids, ",") {
					return fmt.Sprintf("configuration %v, want %v", got, ids)
				}
				return ""
			})
		}
		checkOneCluster(t, members)
	}
	checkConfig(nodes, wantIDs)
	// Its record is forgotten too, and removing it again is 404.
	waitFor(t, 10*time.Second, "node4's record to be forgotten", func() string {
		if _, ok := leader.ServerNames()[late.NodeID()]; ok {
			return "still recorded"
		}
		return ""
	})
	if r := call(t, leader, http.MethodDelete, "/v1/operator/raft/peer?id="+late.NodeID(), ""); r.Status != http.StatusNotFound {
		t.Errorf("removing node4 again: %s, want 404", r)
	}

	// Remove a live follower: the other two go on as a cluster of two.
	gone := fs[1]
	if r := call(t, leader, http.MethodDelete, "/v1/operator/raft/peer?id="+gone.NodeID(), ""); r.Status != 200 {
		t.Fatalf("remove %s: %s", gone.Config.NodeName, r)
	}
	rest := followers(nodes, gone)
	var restIDs []string
	for _, n := range rest {
		restIDs = append(restIDs, n.NodeID())
	}
	sort.Strings(restIDs)
	checkConfig(rest, restIDs)
	if err := gone.Shutdown(); err != nil {
		t.Fatalf("stopping %s: %v", gone.Config.NodeName, err)
	}
	create(t, rest[0], "after-removals")
	create(t, rest[1], "after-removals-2")
	waitConverged(t, rest, listQ(t, leader, ""))
}

// Concurrent writes through every node of a cluster get distinct indexes
// and all land on every node. A write may meet a leader election (the
// timeouts are short and the machine is loaded): its 503 is not an
// acknowledgement, and the write is retried under a new name; such a write
// may or may not have been applied.
func TestClusterConcurrentWritesThroughEveryNode(t *testing.T) {
	nodes := startCluster(t, 3)
	var mu sync.Mutex
	acked := map[string]rule{}
	unsure := map[string]bool{} // BindNames of writes answered 503
	var wg sync.WaitGroup
	for i, n := range nodes {
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 10 {
					for attempt := 0; ; attempt++ {
						name := fmt.Sprintf("n%d-w%d-%d-%d", i, w, k, attempt)
						r, err := tryCall(client, n, http.MethodPut, rulePath, ruleBody("", "m", "", "service", name, ""))
						if err == nil && r.Status == http.StatusServiceUnavailable && r.Body == noLeader && attempt < 50 {
							mu.Lock()
							unsure[name] = true
							mu.Unlock()
							time.Sleep(50 * time.Millisecond)
							continue
						}
						if err != nil || r.Status != 200 {
							t.Errorf("create %s: %v %v", name, r, err)
							return
						}
						var got rule
						if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
							t.Errorf("decoding %q: %v", r.Body, err)
							return
						}
						mu.Lock()
						acked[got.ID] = got
						mu.Unlock()
						break
					}
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(unsure) > 0 {
		t.Logf("%d writes met an election and were retried", len(unsure))
	}
	leader := servertest.Leader(t, nodes)
	final := listQ(t, leader, "")
	rules := rulesOf(t, final.Body)
	indexes := map[uint64]string{}
	for id, r := range acked {
		if rules[id] != r {
			t.Errorf("acknowledged %+v, list has %+v", r, rules[id])
		}
		if other, dup := indexes[r.CreateIndex]; dup {
			t.Errorf("rules %s and %s share index %d", id, other, r.CreateIndex)
		}
		indexes[r.CreateIndex] = id
		if r.CreateIndex > final.Index {
			t.Errorf("rule index %d above the list index %d", r.CreateIndex, final.Index)
		}
	}
	for id, r := range rules {
		if _, ok := acked[id]; !ok && !unsure[r.BindName] {
			t.Errorf("rule %+v was never written", r)
		}
	}
	if len(acked) != 90 {
		t.Errorf("%d writes acknowledged, want 90", len(acked))
	}
	waitConverged(t, nodes, final)
}
