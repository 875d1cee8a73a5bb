package server_test

// Helpers shared by the cluster and snapshot tests: bounded HTTP calls,
// binding-rule writes and listings, polling, and cluster-wide agreement.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

const (
	rulesPath = "/v1/acl/binding-rules"
	rulePath  = "/v1/acl/binding-rule"
	jsonType  = "application/json"
	textType  = "text/plain; charset=utf-8"
	noLeader  = "No cluster leader"
)

// client bounds every request: a test must fail, not hang, when a node
// does not answer.
var client = &http.Client{Timeout: 20 * time.Second}

// call sends one request to a node and returns the finished exchange.
// headers are name, value pairs.
func call(t testing.TB, ts *servertest.TestServer, method, path, body string, headers ...string) *servertest.Response {
	t.Helper()
	resp, err := tryCall(client, ts, method, path, body, headers...)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, ts.URL, path, err)
	}
	return resp
}

// tryCall is call with the transport error returned, through any client.
func tryCall(c *http.Client, ts *servertest.TestServer, method, path, body string, headers ...string) (*servertest.Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &servertest.Response{Status: resp.StatusCode, Header: resp.Header, Body: string(buf)}, nil
}

// must sends a request that must be answered with 200.
func must(t testing.TB, ts *servertest.TestServer, method, path, body string) *servertest.Response {
	t.Helper()
	r := call(t, ts, method, path, body)
	if r.Status != http.StatusOK {
		t.Fatalf("%s %s%s %s: %s, want 200", method, ts.URL, path, body, r)
	}
	return r
}

// write sends a write that must succeed. A 503 "No cluster leader" (an
// election: the Raft timeouts are short and the machine is small and
// shared) is retried for a while; such a write may then be applied twice,
// so callers compare by name where that matters.
func write(t testing.TB, ts *servertest.TestServer, method, path, body string) *servertest.Response {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := call(t, ts, method, path, body)
		if r.Status == http.StatusServiceUnavailable && r.Body == noLeader && time.Now().Before(deadline) {
			t.Logf("%s %s%s met an election, retrying", method, ts.URL, path)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s%s %s: %s, want 200", method, ts.URL, path, body, r)
		}
		return r
	}
}

// startCluster starts n in-memory servers forming one cluster.
func startCluster(t testing.TB, n int) []*servertest.TestServer {
	t.Helper()
	return servertest.StartCluster(t, n, servertest.RaftTimeout(raftTimeout))
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

func ruleBody(desc, method, selector, bindType, bindName, ns string) string {
	buf, _ := json.Marshal(map[string]string{
		"Description": desc, "AuthMethod": method, "Selector": selector,
		"BindType": bindType, "BindName": bindName, "Namespace": ns,
	})
	return string(buf)
}

func decodeRule(t testing.TB, body string) rule {
	t.Helper()
	var r rule
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("decoding rule %q: %v", body, err)
	}
	return r
}

// create makes one rule through ts and checks the answer.
func create(t testing.TB, ts *servertest.TestServer, name string) rule {
	t.Helper()
	r := decodeRule(t, write(t, ts, http.MethodPut, rulePath, ruleBody("rule "+name, "minikube", "", "service", name, "")).Body)
	if r.ID == "" || r.BindName != name || r.CreateIndex == 0 || r.ModifyIndex != r.CreateIndex {
		t.Fatalf("create %s answered %+v", name, r)
	}
	return r
}

// seedRules writes n varied rules (namespaces, selectors, an update and a
// delete) through ts and returns the live ones.
func seedRules(t testing.TB, ts *servertest.TestServer, prefix string, n int) []rule {
	t.Helper()
	var out []rule
	for i := range n {
		ns := ""
		if i%3 == 0 {
			ns = "team-" + strconv.Itoa(i%2)
		}
		sel := ""
		if i%2 == 1 {
			sel = fmt.Sprintf(`serviceaccount.name=="%s-%d"`, prefix, i)
		}
		bt := []string{"service", "node", "role"}[i%3]
		r := decodeRule(t, write(t, ts, http.MethodPut, rulePath,
			ruleBody(fmt.Sprintf("%s %d ü \"q\"", prefix, i), "method-"+prefix, sel, bt, fmt.Sprintf("%s-%d", prefix, i), ns)).Body)
		out = append(out, r)
	}
	if n >= 2 {
		// Update the first and delete the second, so indexes are not all creates.
		u := decodeRule(t, write(t, ts, http.MethodPut, rulePath+"/"+out[0].ID,
			ruleBody("updated", "", "", "role", prefix+"-updated", out[0].Namespace)).Body)
		if u.ModifyIndex <= u.CreateIndex {
			t.Fatalf("update answered %+v", u)
		}
		out[0] = u
		if body := write(t, ts, http.MethodDelete, rulePath+"/"+out[1].ID+"?ns="+out[1].Namespace, "").Body; body != "true" {
			t.Fatalf("delete answered %q", body)
		}
		out = append(out[:1], out[2:]...)
	}
	return out
}

// listing is a full list of every namespace as one node answered it.
type listing struct {
	Body        string
	Index       uint64
	KnownLeader string
	LastContact string
}

func (l listing) String() string { return fmt.Sprintf("index %d %s", l.Index, l.Body) }

// listQ lists every namespace with extra query parameters ("", "&stale", "&consistent").
func listQ(t testing.TB, ts *servertest.TestServer, extra string) listing {
	t.Helper()
	r := must(t, ts, http.MethodGet, rulesPath+"?ns=*"+extra, "")
	return toListing(t, r)
}

func toListing(t testing.TB, r *servertest.Response) listing {
	t.Helper()
	idx, err := strconv.ParseUint(r.Header.Get("X-Service-Index"), 10, 64)
	if err != nil {
		t.Fatalf("X-Service-Index %q: %v", r.Header.Get("X-Service-Index"), err)
	}
	return listing{Body: r.Body, Index: idx, KnownLeader: r.Header.Get("X-Service-KnownLeader"), LastContact: r.Header.Get("X-Service-LastContact")}
}

// rulesOf decodes a list body into rules by ID.
func rulesOf(t testing.TB, body string) map[string]rule {
	t.Helper()
	var rules []rule
	if err := json.Unmarshal([]byte(body), &rules); err != nil {
		t.Fatalf("decoding list %q: %v", body, err)
	}
	out := map[string]rule{}
	for _, r := range rules {
		out[r.ID] = r
	}
	return out
}

// waitFor polls cond until it returns "" (success) or the timeout passes,
// then fails with cond's last explanation.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, timeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tryListStale lists through ts with ?stale, reporting failures instead of failing.
func tryListStale(ts *servertest.TestServer) (listing, error) {
	r, err := tryCall(client, ts, http.MethodGet, rulesPath+"?ns=*&stale", "")
	if err != nil {
		return listing{}, err
	}
	if r.Status != http.StatusOK {
		return listing{}, fmt.Errorf("status %s", r)
	}
	idx, err := strconv.ParseUint(r.Header.Get("X-Service-Index"), 10, 64)
	if err != nil {
		return listing{}, err
	}
	return listing{Body: r.Body, Index: idx, KnownLeader: r.Header.Get("X-Service-KnownLeader"), LastContact: r.Header.Get("X-Service-LastContact")}, nil
}

// waitConverged waits until every node's ?stale list equals want (body and
// index), i.e. every node has applied the same state.
func waitConverged(t testing.TB, nodes []*servertest.TestServer, want listing) {
	t.Helper()
	for _, n := range nodes {
		waitFor(t, 15*time.Second, "node "+n.Config.NodeName+" to catch up", func() string {
			got, err := tryListStale(n)
			if err != nil {
				return err.Error()
			}
			if got.Body != want.Body || got.Index != want.Index {
				return fmt.Sprintf("has %v, want %v", got, want)
			}
			return ""
		})
	}
}

// statusOf returns a node's /v1/status/leader and sorted /v1/status/peers.
func statusOf(t testing.TB, ts *servertest.TestServer) (string, []string) {
	t.Helper()
	var leader string
	var peers []string
	must(t, ts, http.MethodGet, "/v1/status/leader", "").JSON(t, &leader)
	must(t, ts, http.MethodGet, "/v1/status/peers", "").JSON(t, &peers)
	sort.Strings(peers)
	return leader, peers
}

// raftServer is one entry of GET /v1/operator/raft/configuration.
type raftServer struct {
	ID              string
	Node            string
	Address         string
	Leader          bool
	ProtocolVersion string
	Voter           bool
}

type raftConfig struct {
	Servers []raftServer
	Index   uint64
}

func configOf(t testing.TB, ts *servertest.TestServer, extra string) raftConfig {
	t.Helper()
	var c raftConfig
	must(t, ts, http.MethodGet, "/v1/operator/raft/configuration"+extra, "").JSON(t, &c)
	return c
}

// checkOneCluster asserts that the nodes form exactly one cluster with one
// leader: each node's leader and peers are the same, the peers are exactly
// the nodes' Raft addresses, and exactly one node is the ready leader.
func checkOneCluster(t testing.TB, nodes []*servertest.TestServer) {
	t.Helper()
	var want []string
	for _, n := range nodes {
		want = append(want, n.RaftAddr())
	}
	sort.Strings(want)
	waitFor(t, 15*time.Second, "all nodes to agree on one cluster", func() string {
		leaders := 0
		for _, n := range nodes {
			if n.CheckRead(false) == nil {
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Sprintf("%d ready leaders", leaders)
		}
		var leader0 string
		for i, n := range nodes {
			leader, peers := statusOf(t, n)
			if leader == "" {
				return n.Config.NodeName + " knows no leader"
			}
			if i == 0 {
				leader0 = leader
			} else if leader != leader0 {
				return fmt.Sprintf("%s says the leader is %s, %s says %s", nodes[0].Config.NodeName, leader0, n.Config.NodeName, leader)
			}
			if strings.Join(peers, ",") != strings.Join(want, ",") {
				return fmt.Sprintf("%s has peers %v, want %v", n.Config.NodeName, peers, want)
			}
		}
		// The leader is the one node whose CheckRead passes.
		if servertest.Leader(t, nodes).RaftAddr() != leader0 {
			return "the ready leader is not the one the status reports"
		}
		return ""
	})
}

// followers are the nodes other than the leader.
func followers(nodes []*servertest.TestServer, leader *servertest.TestServer) []*servertest.TestServer {
	var out []*servertest.TestServer
	for _, n := range nodes {
		if n != leader {
			out = append(out, n)
		}
	}
	return out
}

// waitNamed waits until the leader's Raft configuration names every node:
// a server records its name in the replicated state shortly after it is
// in the cluster.
func waitNamed(t testing.TB, nodes []*servertest.TestServer) {
	t.Helper()
	waitFor(t, 10*time.Second, "every server's name to be recorded", func() string {
		c := configOf(t, servertest.Leader(t, nodes), "")
		if len(c.Servers) != len(nodes) {
			return fmt.Sprintf("configuration %+v", c)
		}
		for _, s := range c.Servers {
			if s.Node == "" {
				return fmt.Sprintf("server %s has no node name yet", s.ID)
			}
		}
		return ""
	})
}
