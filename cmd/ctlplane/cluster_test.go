package main

// Multi-node clusters from the command line: the leader of a cluster of
// agent processes is killed with SIGKILL and restarted, and the snapshot
// and operator commands run against in-process clusters. The subprocess
// helpers (startProc, agent, listing, writeMix, ...) are persistence_test.go's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// member is one persistent server of a subprocess cluster. Its data
// directory and ports stay the same across restarts.
type member struct {
	name     string
	dataDir  string
	raftPort int
	httpPort int
	expect   int
	join     []string
}

// memberPort is a free port that no port-0 listener or outgoing connection
// can take before the agent binds it (see servertest.FreeAddr).
func memberPort(t *testing.T) int { return freeLoopbackPort(t) }

func (m *member) raftAddr() string { return "127.0.0.1:" + strconv.Itoa(m.raftPort) }
func (m *member) httpAddr() string { return "127.0.0.1:" + strconv.Itoa(m.httpPort) }

// newMembers prepares n servers that form one cluster with -bootstrap-expect=n.
func newMembers(t *testing.T, n int) []*member {
	ms := make([]*member, n)
	var addrs []string
	for i := range ms {
		ms[i] = &member{name: fmt.Sprintf("node%d", i+1), dataDir: t.TempDir(), raftPort: memberPort(t), httpPort: memberPort(t), expect: n}
		addrs = append(addrs, ms[i].httpAddr())
	}
	for _, m := range ms {
		m.join = addrs
	}
	return ms
}

// launch starts the member's agent and waits until it listens; the cluster
// may not be formed yet.
func (m *member) launch(t *testing.T) *agent {
	t.Helper()
	args := []string{
		"agent",
		"-data-dir=" + m.dataDir,
		"-node=" + m.name,
		"-bind=" + m.raftAddr(),
		"-http-addr=" + m.httpAddr(),
		"-bootstrap-expect=" + strconv.Itoa(m.expect),
		"-raft-timeout=300ms",
		"-acl-initial-management-token=" + testManagementToken,
	}
	// Raft between the servers is mutual TLS, with certificates made by
	// `ctlplane tls`.
	args = append(args, tlsAgentArgs(t)...)
	for _, j := range m.join {
		args = append(args, "-join="+j)
	}
	a := spawnAgent(t, m.name, args)
	if a.url != "http://"+m.httpAddr() {
		t.Fatalf("%s listens on %s, want http://%s", m.name, a.url, m.httpAddr())
	}
	return a
}

// clusterState is what one agent says about the cluster.
func clusterState(a *agent) (leader string, peers []string, err error) {
	code, body, _, err := a.do(http.MethodGet, "/v1/status/leader", "")
	if err != nil || code != 200 {
		return "", nil, fmt.Errorf("status/leader: %d %q %v", code, body, err)
	}
	json.Unmarshal([]byte(body), &leader)
	code, body, _, err = a.do(http.MethodGet, "/v1/status/peers", "")
	if err != nil || code != 200 {
		return "", nil, fmt.Errorf("status/peers: %d %q %v", code, body, err)
	}
	json.Unmarshal([]byte(body), &peers)
	sort.Strings(peers)
	return leader, peers, nil
}

// waitOneCluster waits until the agents agree on one leader among them, all
// list exactly wantPeers, and default reads through each succeed. It
// returns the index of the leader.
func waitOneCluster(t *testing.T, agents []*agent, members []*member, wantPeers []string) int {
	t.Helper()
	sort.Strings(wantPeers)
	deadline := time.Now().Add(startTimeout)
	why := ""
	for time.Now().Before(deadline) {
		why = ""
		leader := ""
		for i, a := range agents {
			l, peers, err := clusterState(a)
			switch {
			case err != nil:
				why = err.Error()
			case l == "" || (i > 0 && l != leader):
				why = fmt.Sprintf("%s says the leader is %q, %s says %q", members[0].name, leader, members[i].name, l)
			case strings.Join(peers, ",") != strings.Join(wantPeers, ","):
				why = fmt.Sprintf("%s has peers %v, want %v", members[i].name, peers, wantPeers)
			}
			if why != "" {
				break
			}
			leader = l
		}
		if why == "" {
			for i, a := range agents {
				if code, body, _, err := a.do(http.MethodGet, "/v1/acl/binding-rules", ""); err != nil || code != 200 {
					why = fmt.Sprintf("read through %s: %d %q %v", members[i].name, code, body, err)
					break
				}
			}
		}
		if why == "" {
			for i, m := range members {
				if m.raftAddr() == leader {
					return i
				}
			}
			why = "the leader " + leader + " is none of the agents"
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no single cluster within %v: %s", startTimeout, why)
	return -1
}

// listStale lists every namespace from one agent's own state.
func listStale(a *agent) (listing, string, error) {
	code, body, hdr, err := a.do(http.MethodGet, "/v1/acl/binding-rules?ns=*&stale", "")
	if err != nil || code != 200 {
		return listing{}, "", fmt.Errorf("stale list: %d %q %v", code, body, err)
	}
	idx, err := strconv.ParseUint(hdr.Get("X-Service-Index"), 10, 64)
	if err != nil {
		return listing{}, "", err
	}
	return listing{body: body, index: idx}, hdr.Get("X-Service-KnownLeader"), nil
}

// waitSameState waits until every agent's own state lists what want lists.
func waitSameState(t *testing.T, agents []*agent, want listing) {
	t.Helper()
	for _, a := range agents {
		deadline := time.Now().Add(startTimeout)
		for {
			got, known, err := listStale(a)
			if err == nil && got.body == want.body && got.index == want.index && known == "true" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not catch up: has %d %s (known leader %s, %v), want %d %s", a.url, got.index, got.body, known, err, want.index, want.body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestClusterLeaderKilled(t *testing.T) {
	members := newMembers(t, 3)
	agents := make([]*agent, 3)
	// Started one at a time, last first: the first ones wait for the others.
	for i := len(members) - 1; i >= 0; i-- {
		agents[i] = members[i].launch(t)
	}
	var raftAddrs []string
	for _, m := range members {
		raftAddrs = append(raftAddrs, m.raftAddr())
	}
	li := waitOneCluster(t, agents, members, raftAddrs)
	leader := agents[li]
	var survivors []*agent
	for i, a := range agents {
		if i != li {
			survivors = append(survivors, a)
		}
	}
	killedID := leader.nodeID

	// Writes through a follower before the failure.
	acked := writeMix(t, survivors[0], 30)

	// Writers through every node, the leader too, while the leader dies.
	type outcome struct {
		name       string
		r          *rule // nil: not acknowledged (error, 503, or the process died)
		why        string
		start, end time.Time
	}
	var (
		mu          sync.Mutex
		outcomes    []outcome
		killed      = make(chan struct{})
		enough      = make(chan struct{})
		enoughOnce  sync.Once
		totalBefore int
		killStart   time.Time
	)
	var wg sync.WaitGroup
	for w := range 6 {
		a := agents[w%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			afterKill := 0
			for k := 0; k < 3000; k++ {
				dead := false
				select {
				case <-killed:
					dead = true
				default:
				}
				if dead && a == leader {
					return
				}
				if dead && afterKill >= 10 {
					return
				}
				name := fmt.Sprintf("w%d-%d", w, k)
				start := time.Now()
				code, body, _, err := a.do(http.MethodPut, "/v1/acl/binding-rule", ruleBody("", "minikube", "", "service", name, ""))
				o := outcome{name: name, start: start, end: time.Now(), why: fmt.Sprintf("%d %q %v", code, body, err)}
				if err == nil && code == 200 {
					var r rule
					if err := json.Unmarshal([]byte(body), &r); err != nil {
						t.Errorf("decoding %q: %v", body, err)
						return
					}
					o.r = &r
				} else if err == nil && !(code == http.StatusServiceUnavailable && body == "No cluster leader") {
					t.Errorf("write %s through %s: %d %q", name, a.url, code, body)
					return
				} else {
					time.Sleep(20 * time.Millisecond) // an election is on
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				if o.r != nil {
					if dead {
						afterKill++
					} else if totalBefore++; totalBefore == 60 {
						enoughOnce.Do(func() { close(enough) })
					}
				}
				mu.Unlock()
			}
			t.Errorf("writer %d did not get 10 writes through after the kill", w)
		}()
	}
	select {
	case <-enough:
	case <-time.After(2 * time.Minute):
		t.Fatal("writes before the kill did not get through")
	}
	mu.Lock()
	killStart = time.Now()
	mu.Unlock()
	leader.kill(t)
	close(killed)

	// A new leader among the survivors.
	var survivorMembers []*member
	for i, m := range members {
		if i != li {
			survivorMembers = append(survivorMembers, m)
		}
	}
	nl := waitOneCluster(t, survivors, survivorMembers, raftAddrs) // the killed node stays a member
	newLeader := survivors[nl]
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every acknowledged write is there; nothing else but unacknowledged ones.
	final := newLeader.listAll(t)
	checkAcked(t, listing{body: final.body, rules: filterRules(final.rules, acked), index: final.index}, acked)
	unsure := map[string]bool{}
	ackedN, unsureN := 0, 0
	for _, o := range outcomes {
		if o.r == nil {
			unsure[o.name] = true
			unsureN++
			if o.end.Before(killStart) {
				t.Errorf("write %s failed before the kill: %s", o.name, o.why)
			}
			continue
		}
		ackedN++
		got, ok := final.rules[o.r.ID]
		if !ok || got != *o.r {
			t.Errorf("acknowledged write %s: %+v, list has %+v", o.name, *o.r, got)
		}
	}
	for id, r := range final.rules {
		if _, ok := acked[id]; ok {
			continue
		}
		found := false
		for _, o := range outcomes {
			if o.r != nil && o.r.ID == id {
				found = true
			}
		}
		if !found && !unsure[r.BindName] {
			t.Errorf("rule %+v was never written", r)
		}
	}
	t.Logf("%d writes acknowledged around the kill, %d not acknowledged", ackedN, unsureN)
	waitSameState(t, survivors, final)

	// The killed node comes back on its data directory and catches up.
	restarted := members[li].launch(t)
	if restarted.nodeID != killedID {
		t.Errorf("node ID after restart %s, want %s", restarted.nodeID, killedID)
	}
	agents[li] = restarted
	waitOneCluster(t, agents, members, raftAddrs)
	waitSameState(t, agents, final)
	// And takes writes again, which every node sees.
	r := restarted.create(t, ruleBody("after restart", "minikube", "", "node", "after-restart", ""))
	if r.CreateIndex <= final.index {
		t.Errorf("write after the restart has index %d, not above %d", r.CreateIndex, final.index)
	}
	l := leaderOf(t, agents, members).listAll(t)
	if _, ok := l.rules[r.ID]; !ok {
		t.Errorf("write through the restarted node is missing: %s", l.body)
	}
	waitSameState(t, agents, l)
	for _, a := range agents {
		a.stop(t)
	}
}

// filterRules keeps the rules of ids (for checkAcked, which wants exactly them).
func filterRules(all map[string]rule, ids map[string]*rule) map[string]rule {
	out := map[string]rule{}
	for id, r := range all {
		if _, ok := ids[id]; ok {
			out[id] = r
		}
	}
	return out
}

// leaderOf returns the agent that leads.
func leaderOf(t *testing.T, agents []*agent, members []*member) *agent {
	t.Helper()
	var addrs []string
	for _, m := range members {
		addrs = append(addrs, m.raftAddr())
	}
	return agents[waitOneCluster(t, agents, members, addrs)]
}

// ctl runs `ctlplane args...` in-process.
func ctl(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// listOf is a node's list of every namespace, from its own state when stale.
func listOf(t *testing.T, ts *servertest.TestServer, stale bool) (string, string) {
	t.Helper()
	q := "/v1/acl/binding-rules?ns=*"
	if stale {
		q += "&stale"
	}
	r := ts.Do(t, http.MethodGet, q, "")
	if r.Status != 200 {
		t.Fatalf("list on %s: %s", ts.URL, r)
	}
	return r.Body, r.Header.Get("X-Service-Index")
}

// waitListed waits until every node's own state lists body at index.
func waitListed(t *testing.T, nodes []*servertest.TestServer, body, index string) {
	t.Helper()
	for _, n := range nodes {
		deadline := time.Now().Add(15 * time.Second)
		for {
			b, i := listOf(t, n, true)
			if b == body && i == index {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s lists %s %s, want %s %s", n.URL, i, b, index, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func seed(t *testing.T, ts *servertest.TestServer, prefix string, n int) {
	t.Helper()
	for i := range n {
		ns := ""
		if i%3 == 0 {
			ns = "ns-" + prefix
		}
		r := ts.Do(t, http.MethodPut, "/v1/acl/binding-rule", ruleBody(fmt.Sprintf("%s %d", prefix, i), "m-"+prefix, "", "service", fmt.Sprintf("%s-%d", prefix, i), ns))
		if r.Status != 200 {
			t.Fatalf("seeding: %s", r)
		}
	}
}

func TestSnapshotCommandsAcrossClusters(t *testing.T) {
	a := servertest.StartCluster(t, 3)
	aLeader := servertest.Leader(t, a)
	var aFollower *servertest.TestServer
	for _, n := range a {
		if n != aLeader {
			aFollower = n
		}
	}
	seed(t, aFollower, "a", 20)
	wantBody, wantIndex := listOf(t, aLeader, false)
	dir := t.TempDir()
	file := filepath.Join(dir, "a.snap")

	code, out, errOut := ctl("snapshot", "save", "-address="+aFollower.URL, file)
	if code != 0 {
		t.Fatalf("snapshot save: exit %d, stderr %q", code, errOut)
	}
	m := regexp.MustCompile(`^Saved and verified snapshot to index (\d+)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("snapshot save printed %q", out)
	}
	if idx, _ := strconv.ParseUint(m[1], 10, 64); strconv.FormatUint(idx, 10) != m[1] || idx < mustUint(t, wantIndex) {
		t.Errorf("saved index %s, below the list index %s", m[1], wantIndex)
	}
	// A stale save from a follower's own state works too.
	staleFile := filepath.Join(dir, "stale.snap")
	if code, _, errOut := ctl("snapshot", "save", "-stale", "-address="+aFollower.URL, staleFile); code != 0 {
		t.Errorf("snapshot save -stale: exit %d, stderr %q", code, errOut)
	}

	// inspect shows the metadata, the checksums' verdict and object counts.
	code, out, errOut = ctl("snapshot", "inspect", file)
	if code != 0 {
		t.Fatalf("snapshot inspect: exit %d, stderr %q", code, errOut)
	}
	info, _ := os.Stat(file)
	for _, want := range []string{
		"Index       " + m[1] + "\n",
		"Checksums   ok\n",
		fmt.Sprintf("Size        %d bytes", info.Size()),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^Term        [1-9]\d*$`).MatchString(out) || !regexp.MustCompile(`(?m)^ID          \S+$`).MatchString(out) {
		t.Errorf("inspect output lacks the term or ID:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^\S*binding.rules\s+20$`).MatchString(out) || !regexp.MustCompile(`(?m)^servers\s+3$`).MatchString(out) {
		t.Errorf("inspect output lacks the object counts (20 binding rules, 3 servers):\n%s", out)
	}

	// Restore onto a fresh cluster, through a follower.
	b := servertest.StartCluster(t, 3)
	bLeader := servertest.Leader(t, b)
	var bFollower *servertest.TestServer
	for _, n := range b {
		if n != bLeader {
			bFollower = n
		}
	}
	seed(t, bLeader, "b", 3)
	code, out, errOut = ctl("snapshot", "restore", "-address="+bFollower.URL, file)
	if code != 0 || out != "Restored snapshot\n" {
		t.Fatalf("snapshot restore: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	waitListed(t, b, wantBody, wantIndex)
	for _, n := range b {
		if body, idx := listOf(t, n, false); body != wantBody || idx != wantIndex {
			t.Errorf("default list through %s after restore: %s %s, want %s %s", n.URL, idx, body, wantIndex, wantBody)
		}
	}

	// Bad files are refused with a reason, and nothing changes.
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)/2] ^= 0xff
	bad := map[string][]byte{
		"corrupt":   corrupt,
		"truncated": good[:len(good)/2],
		"empty":     nil,
		"text":      []byte("not a snapshot\n"),
	}
	for name, body := range bad {
		path := filepath.Join(dir, name+".snap")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := ctl("snapshot", "restore", "-address="+bLeader.URL, path)
		if code == 0 || !strings.Contains(errOut, "400") || !strings.Contains(errOut, "invalid snapshot archive") || out != "" {
			t.Errorf("restore of the %s file: exit %d, stdout %q, stderr %q; want non-zero and a 400 saying why", name, code, out, errOut)
		}
		code, out, errOut = ctl("snapshot", "inspect", path)
		if code == 0 || !strings.Contains(errOut, "invalid snapshot archive") || strings.Contains(out, "Checksums   ok") {
			t.Errorf("inspect of the %s file: exit %d, stdout %q, stderr %q; want non-zero saying why", name, code, out, errOut)
		}
	}
	waitListed(t, b, wantBody, wantIndex)
	if code, _, errOut := ctl("snapshot", "restore", "-address="+bLeader.URL, filepath.Join(dir, "missing.snap")); code == 0 || !strings.Contains(errOut, "no such file") {
		t.Errorf("restore of a missing file: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := ctl("snapshot", "save", "-address="+bLeader.URL); code == 0 || !strings.Contains(errOut, "Usage") {
		t.Errorf("save without a file: exit %d, stderr %q", code, errOut)
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

func TestOperatorRaftCommands(t *testing.T) {
	nodes := servertest.StartCluster(t, 3)
	var leader *servertest.TestServer
	var fs []*servertest.TestServer
	// Who leads is read again on every try below: a leader change right
	// after the cluster formed (a slow machine) would otherwise fail the
	// test on a list that is right for the new leader.
	findLeader := func() {
		leader, fs = servertest.Leader(t, nodes), nil
		for _, n := range nodes {
			if n != leader {
				fs = append(fs, n)
			}
		}
	}
	peerLine := func(n *servertest.TestServer, state string) *regexp.Regexp {
		return regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+%s\s+%s\s+%s\s+true\s+3$`,
			regexp.QuoteMeta(n.Config.NodeName), regexp.QuoteMeta(n.NodeID()), regexp.QuoteMeta(n.RaftAddr()), state))
	}
	// list-peers through a follower, once every server has recorded its name.
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for {
		findLeader()
		var code int
		var errOut string
		code, out, errOut = ctl("operator", "raft", "list-peers", "-address="+fs[0].URL)
		if code != 0 {
			t.Fatalf("list-peers: exit %d, stderr %q", code, errOut)
		}
		ok := strings.HasPrefix(out, "Node ") && strings.Count(out, "\n") == 4
		for _, n := range nodes {
			state := "follower"
			if n == leader {
				state = "leader"
			}
			ok = ok && peerLine(n, state).MatchString(out)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list-peers printed:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// -stale: the other follower answers from its own state, the same once it has caught up.
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, staleOut, errOut := ctl("operator", "raft", "list-peers", "-stale", "-address="+fs[1].URL)
		if code != 0 {
			t.Fatalf("list-peers -stale: exit %d, stderr %q", code, errOut)
		}
		if staleOut == out {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list-peers -stale:\n%s\nwant\n%s", staleOut, out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// remove-peer: refused without -id or with an unknown one.
	if code, _, errOut := ctl("operator", "raft", "remove-peer", "-address="+leader.URL); code == 0 || !strings.Contains(errOut, "-id is required") {
		t.Errorf("remove-peer without -id: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := ctl("operator", "raft", "remove-peer", "-address="+leader.URL, "-id=nope"); code == 0 || !strings.Contains(errOut, "404") || !strings.Contains(errOut, `"nope"`) {
		t.Errorf("remove-peer with an unknown id: exit %d, stderr %q", code, errOut)
	}
	// Remove a stopped follower, through the other follower.
	gone := fs[1]
	if err := gone.Shutdown(); err != nil {
		t.Fatal(err)
	}
	code, removed, errOut := ctl("operator", "raft", "remove-peer", "-address="+fs[0].URL, "-id="+gone.NodeID())
	if code != 0 || removed != fmt.Sprintf("Removed peer with id %q\n", gone.NodeID()) {
		t.Fatalf("remove-peer: exit %d, stdout %q, stderr %q", code, removed, errOut)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, out, _ = ctl("operator", "raft", "list-peers", "-address="+leader.URL)
		if strings.Count(out, "\n") == 3 && !strings.Contains(out, gone.NodeID()) &&
			peerLine(leader, "leader").MatchString(out) && peerLine(fs[0], "follower").MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list-peers after remove-peer:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The two left still take writes.
	if r := fs[0].Do(t, http.MethodPut, "/v1/acl/binding-rule", ruleBody("", "m", "", "service", "after-removal", "")); r.Status != 200 {
		t.Errorf("write after remove-peer: %s", r)
	}
}
