package server_test

// Issue 31: random and adversarial bodies (deep, wide, large, unicode,
// numbers at the edges, garbage) at every write endpoint of a 3-server
// cluster; then every server restarts from its log, and again from a
// snapshot, and a saved archive is restored. No request may fail with a
// server error, no server may stop, and the servers must end with the same
// state.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/limits"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// persistentCluster is n servers with their own data directories and fixed
// addresses, so that each can be stopped and started again as itself.
type persistentCluster struct {
	nodes []*servertest.TestServer
	opts  [][]servertest.Option
	mgmt  string
}

func startPersistentCluster(t *testing.T, n int, mgmt string) *persistentCluster {
	t.Helper()
	c := &persistentCluster{nodes: make([]*servertest.TestServer, n), opts: make([][]servertest.Option, n)}
	httpAddrs := make([]string, n)
	for i := range httpAddrs {
		httpAddrs[i] = servertest.FreeAddr(t)
	}
	for i := range c.nodes {
		c.opts[i] = []servertest.Option{servertest.Persistent(filepath.Join(t.TempDir(), "data")), servertest.ACL(mgmt),
			servertest.HTTPAddr(httpAddrs[i]), servertest.BindAddr(servertest.FreeAddr(t)), servertest.Join(n, httpAddrs...),
			servertest.RaftTimeout(300 * time.Millisecond), func(cfg *server.Config) { cfg.NodeName = fmt.Sprintf("node%d", i+1) }}
		c.nodes[i] = servertest.StartNoWait(t, c.opts[i]...)
	}
	c.mgmt = mgmt
	c.waitReady(t)
	return c
}

// waitReady waits until every server knows the same leader and every
// server, and answers an authenticated read (forwarded to the leader).
func (c *persistentCluster) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, 30*time.Second, "the cluster to be ready", func() string {
		leader := ""
		for _, n := range c.nodes {
			peers, err := n.Peers()
			if l := n.Leader(); l == "" || (leader != "" && l != leader) || err != nil || len(peers) != len(c.nodes) {
				return fmt.Sprintf("%s: leader %q, peers %v %v", n.URL, l, peers, err)
			}
			leader = n.Leader()
			r, err := tryCall(client, n, "GET", "/v1/acl/policies", "", "X-Service-Token", c.mgmt)
			if err != nil || r.Status != 200 {
				return fmt.Sprintf("%s: read: %v %v", n.URL, r, err)
			}
		}
		return ""
	})
}

// restart stops server i and starts it again from its data directory.
func (c *persistentCluster) restart(t *testing.T, i int) {
	t.Helper()
	if err := c.nodes[i].Shutdown(); err != nil {
		t.Fatalf("shutdown of node%d: %v", i+1, err)
	}
	c.nodes[i] = servertest.StartNoWait(t, c.opts[i]...)
	c.waitReady(t)
}

// stateDigest is a digest of every row of every table (rows as JSON, which
// orders map keys), and the tables' indexes.
func stateDigest(t *testing.T, s *state.Store) string {
	t.Helper()
	snap := s.Snapshot()
	defer snap.Close()
	h := sha256.New()
	for _, table := range state.Tables() {
		fmt.Fprintf(h, "%s@%d:", table, s.TableIndex(table))
		err := snap.Each(table, func(row any) error {
			b, err := json.Marshal(row)
			h.Write(b)
			return err
		})
		if err != nil {
			t.Fatalf("reading %s: %v", table, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// waitSameState waits until every server has applied the same state and
// returns its digest.
func (c *persistentCluster) waitSameState(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		digests := make([]string, len(c.nodes))
		same := true
		for i, n := range c.nodes {
			digests[i] = stateDigest(t, n.State())
			same = same && digests[i] == digests[0]
		}
		if same {
			return digests[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the servers' states differ: %v", digests)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeRoute is a write endpoint: a path template and a method.
type writeRoute struct{ path, method string }

// writeRoutes enumerates the API's routes and asks a server (OPTIONS) which
// take a PUT or a POST.
func writeRoutes(t *testing.T, ts *servertest.TestServer) []writeRoute {
	t.Helper()
	var out []writeRoute
	for _, tmpl := range ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: acl.NewService(svc.Deps{State: ts.Server.State, Raft: ts.Server}, ts.Config.Datacenter)}).Routes() {
		if strings.HasPrefix(tmpl, "/ui") || !strings.HasPrefix(tmpl, "/v1/") {
			continue
		}
		r := call(t, ts, "OPTIONS", fillPath(rand.New(rand.NewPCG(1, 1)), tmpl), "")
		for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
			if m == http.MethodPut || m == http.MethodPost {
				out = append(out, writeRoute{tmpl, m})
			}
		}
	}
	return out
}

// fillPath puts values in a path template's variables: existing objects
// mostly, anything sometimes.
func fillPath(r *rand.Rand, tmpl string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		end := strings.IndexByte(tmpl[open:], '}')
		b.WriteString(tmpl[:open])
		name, _, _ := strings.Cut(tmpl[open+1:open+end], ":")
		b.WriteString(pick(r, pathValues[name]...))
		tmpl = tmpl[open+end+1:]
	}
}

var pathValues = map[string][]string{
	"job":      {"web", "web", "other", "%F0%9F%9A%80"},
	"name":     {"default", "ns1", "pool1", "m", "p", "x%00y"},
	"id":       {"9c8d7e6f-0000-4000-8000-000000000001", "not-a-uuid", "p"},
	"node_id":  {"9c8d7e6f-0000-4000-8000-000000000002", "x"},
	"alloc_id": {"9c8d7e6f-0000-4000-8000-000000000003", "x"},
}

func pick[T any](r *rand.Rand, from ...T) T { return from[r.IntN(len(from))] }

// The valid bodies the mutations start from, by path template prefix.
var bodyTemplates = []struct{ prefix, body string }{
	{"/v1/jobs", `{"Job":{"ID":"NAME","TaskGroups":[{"Name":"web","Count":1,"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h"},"Meta":{"k":"v"}}]}]}}`},
	{"/v1/job/{job}/plan", `{"Job":{"ID":"web","TaskGroups":[{"Name":"web","Count":2,"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h"}}]}]}}`},
	{"/v1/job/{job}/scale", `{"Target":{"Group":"web"},"Error":true,"Message":"m","Meta":{"k":"v"}}`},
	{"/v1/job/{job}/revert", `{"JobID":"web","JobVersion":0}`},
	{"/v1/job/{job}/stable", `{"JobID":"web","JobVersion":0,"Stable":true}`},
	{"/v1/job/{job}", `{"Job":{"ID":"web","TaskGroups":[{"Name":"web","Count":1,"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"2h"}}]}]}}`},
	{"/v1/acl/policy", `{"Name":"NAME","Description":"d","Rules":"namespace \"default\" { policy = \"read\" }"}`},
	{"/v1/acl/token", `{"Description":"NAME","Policies":[{"Name":"p"}],"Local":false}`},
	{"/v1/acl/role", `{"Name":"NAME","Policies":[{"Name":"p"}]}`},
	{"/v1/acl/auth-method", `{"Name":"NAME","Type":"jwt","Config":{"BoundIssuer":"i","JWTValidationPubKeys":[PUBKEY],"ClaimMappings":{"a":"b"}}}`},
	{"/v1/acl/binding-rule", `{"AuthMethod":"m","BindType":"service","BindName":"NAME","Selector":"value.a == \"b\""}`},
	{"/v1/acl/login", `{"AuthMethod":"m","BearerToken":"x.y.z","Meta":{"k":"v"}}`},
	{"/v1/namespace", `{"Name":"NAME","Description":"d","Meta":{"k":"v"}}`},
	{"/v1/node/pool", `{"Name":"NAME","Description":"d","Meta":{"k":"v"}}`},
	{"/v1/node/{node_id}/drain", `{"DrainSpec":{"Deadline":1000000000},"Meta":{"k":"v"}}`},
	{"/v1/node/{node_id}/eligibility", `{"Eligibility":"eligible"}`},
	{"/v1/deployment/allocation-health/", `{"DeploymentID":"9c8d7e6f-0000-4000-8000-000000000001","HealthyAllocationIDs":["a"]}`},
	{"/v1/deployment/pause/", `{"DeploymentID":"9c8d7e6f-0000-4000-8000-000000000001","Pause":true}`},
	{"/v1/deployment/promote/", `{"DeploymentID":"9c8d7e6f-0000-4000-8000-000000000001","All":true}`},
	{"/v1/deployment/", `{"DeploymentID":"9c8d7e6f-0000-4000-8000-000000000001"}`},
	{"/v1/client/register", `{"ID":"9c8d7e6f-0000-4000-8000-000000000002","Name":"n","SecretID":"9c8d7e6f-0000-4000-8000-000000000009","Datacenter":"dc1","Attributes":{"a":"b"},"Meta":{"k":"v"}}`},
	{"/v1/search", `{"Prefix":"w","Context":"jobs"}`},
}

func templateFor(path string) string {
	for _, tb := range bodyTemplates {
		if strings.HasPrefix(path, tb.prefix) {
			return tb.body
		}
	}
	return `{}`
}

// testPubKey is a JSON string of a PEM public key, for JWT auth methods.
var testPubKey = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	return string(b)
}()

// edgeNumbers are JSON numbers at the edges of what decodes: int64 and
// float64 bounds, past them, tiny, huge.
var edgeNumbers = []string{"0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
	"18446744073709551616", "1.7976931348623157e308", "1e309", "-1e309", "5e-324", "1e-400", "0.1",
	strings.Repeat("9", 400), "-" + strings.Repeat("1", 40) + ".5e-3", "4294967296", "2147483648"}

// edgeStrings: unicode, control characters, escapes, long.
var edgeStrings = []string{"", "web", "ns1", "p", "m", "ключ ✓ 🚀", "\u0000", "\ufffd", "a\"b\\c", "${value.a}", "\u202e",
	strings.Repeat("x", 300), strings.Repeat("é", 5000)}

// randomValue is a random JSON value nesting at most depth levels.
func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(10); {
	case k < 2 || depth <= 0:
		return pick(r, any(nil), any(true), any(false), any(json.Number(pick(r, edgeNumbers...))))
	case k < 5:
		return pick(r, edgeStrings...)
	case k < 7:
		out := make([]any, r.IntN(4))
		for i := range out {
			out[i] = randomValue(r, depth-1)
		}
		return out
	default:
		out := map[string]any{}
		for range r.IntN(4) {
			out[pick(r, edgeStrings...)] = randomValue(r, depth-1)
		}
		return out
	}
}

// nested is v inside levels objects ({"a":{"a":...v}}).
func nested(levels int, v any) any {
	for range levels {
		v = map[string]any{"a": v}
	}
	return v
}

// mutate replaces or adds one member somewhere in v with repl.
func mutate(r *rand.Rand, v any, repl any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) == 0 || r.IntN(3) == 0 {
			x[pick(r, "Meta", "Config", "Name", "Job", "Extra", pick(r, edgeStrings...))] = repl
			return x
		}
		k := pick(r, keys...)
		x[k] = mutate(r, x[k], repl)
		return x
	case []any:
		if len(x) == 0 {
			return []any{repl}
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i], repl)
		return x
	default:
		return repl
	}
}

// adversarialBody is a body for path: a valid one, one with a member
// replaced by something random, deep, wide or large, or not JSON at all.
func adversarialBody(t *testing.T, r *rand.Rand, path string) string {
	base := strings.ReplaceAll(templateFor(path), "NAME", "f"+strconv.Itoa(r.IntN(40)))
	base = strings.ReplaceAll(base, "PUBKEY", testPubKey)
	var v any
	if err := json.Unmarshal([]byte(base), &v); err != nil {
		t.Fatalf("template of %s: %v", path, err)
	}
	var repl any
	switch k := r.IntN(20); {
	case k < 3:
		return base
	case k < 9:
		repl = randomValue(r, 5)
	case k < 13:
		repl = nested(pick(r, limits.MaxDepth-8, limits.MaxDepth-3, limits.MaxDepth-2, limits.MaxDepth-1, limits.MaxDepth,
			limits.MaxDepth+1, 1021, 1100, 5000), randomValue(r, 1))
	case k < 15:
		n := pick(r, limits.MaxElements, limits.MaxElements+1, 100)
		list := make([]any, n)
		for i := range list {
			list[i] = i
		}
		repl = list
	case k < 16:
		repl = strings.Repeat(pick(r, "x", "é", "\\"), pick(r, 64<<10, 300<<10, limits.MaxBodyBytes))
	case k < 18:
		b, _ := json.Marshal(randomValue(r, 3))
		// Cut anywhere, or with something after the value.
		return pick(r, string(b[:r.IntN(len(b)+1)]), string(b)+pick(r, "x", "{}", " \n"), "\xff\xfe{", "")
	default:
		return string(must2(json.Marshal(randomValue(r, 6))))
	}
	if r.IntN(2) == 0 && intoFreeForm(v, map[string]any{pick(r, edgeStrings...): repl}) {
		// Free-form fields take any value: these bodies get written.
	} else {
		v = mutate(r, v, repl)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding a body: %v", err)
	}
	return string(b)
}

func must2(b []byte, _ error) []byte { return b }

// freeFormFields are the members that take any JSON value.
var freeFormFields = map[string]bool{"Meta": true, "Config": true}

// intoFreeForm merges repl's members into the first free-form member of v
// that holds an object, and says whether there was one.
func intoFreeForm(v any, repl map[string]any) bool {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if m, ok := x[k].(map[string]any); ok && freeFormFields[k] {
				for rk, rv := range repl {
					m[rk] = rv
				}
				return true
			}
			if intoFreeForm(x[k], repl) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if intoFreeForm(e, repl) {
				return true
			}
		}
	}
	return false
}

// serverFailure says whether an answer is a server error: anything 5xx but
// 501 (a route this agent does not serve) and 503 without a leader (an
// election on a busy machine).
func serverFailure(resp *servertest.Response) bool {
	switch {
	case resp.Status < 500, resp.Status == http.StatusNotImplemented:
		return false
	case resp.Status == http.StatusServiceUnavailable && resp.Body == noLeader:
		return false
	}
	return true
}

// fuzzWrites sends rounds adversarial writes spread over every write route
// and every server, and returns how many of each status it got.
func fuzzWrites(t *testing.T, c *persistentCluster, r *rand.Rand, routes []writeRoute, mgmt string, rounds int) map[int]int {
	t.Helper()
	statuses := map[int]int{}
	for i := range rounds {
		rt := routes[i%len(routes)]
		if i >= len(routes) {
			rt = pick(r, routes...)
		}
		path := fillPath(r, rt.path)
		body := adversarialBody(t, r, rt.path)
		headers := []string{"X-Service-Token", mgmt}
		if rt.path == "/v1/client/allocations" && r.IntN(2) == 0 {
			// The client protocol in msgpack.
			var v any
			if json.Unmarshal([]byte(body), &v) == nil {
				var buf []byte
				if err := codec.NewEncoderBytes(&buf, api.NewMsgpackHandle()).Encode(v); err == nil {
					body = string(buf)
					headers = append(headers, "Content-Type", api.MsgpackContentType)
				}
			}
		}
		ts := pick(r, c.nodes...)
		resp, err := tryCall(client, ts, rt.method, path, body, headers...)
		if err != nil {
			t.Fatalf("%s %s (%d bytes): %v", rt.method, path, len(body), err)
		}
		if serverFailure(resp) {
			t.Errorf("%s %s %.300s: %d %.300s", rt.method, path, body, resp.Status, resp.Body)
		}
		statuses[resp.Status]++
		if os.Getenv("POISON_FUZZ_DEBUG") != "" {
			t.Logf("%s %s -> %d %.150s", rt.method, path, resp.Status, resp.Body)
		}
	}
	return statuses
}

// TestAdversarialWritesCluster: see the top of the file. POISON_FUZZ_ROUNDS
// sets how many writes each phase sends (default 150: the run stays within
// seconds); POISON_FUZZ_SEED replays a run.
func TestAdversarialWritesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	rounds := 150
	if n, err := strconv.Atoi(os.Getenv("POISON_FUZZ_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("POISON_FUZZ_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (POISON_FUZZ_SEED), %d writes a phase", seed, rounds)
	r := rand.New(rand.NewPCG(seed, seed))

	const mgmt = "0b5f9e2a-8c1d-4e3f-9a7b-6c5d4e3f2a1b"
	c := startPersistentCluster(t, 3, mgmt)
	leader := servertest.Leader(t, c.nodes)
	waitFor(t, 10*time.Second, "the management token", func() string {
		if r := call(t, leader, "GET", "/v1/acl/token/self", "", "X-Service-Token", mgmt); r.Status != 200 {
			return r.String()
		}
		return ""
	})
	routes := writeRoutes(t, leader)
	if len(routes) < 40 {
		t.Fatalf("found %d write routes: %v", len(routes), routes)
	}
	// Objects the bodies refer to.
	for _, w := range []struct{ method, path, body string }{
		{"PUT", "/v1/jobs", strings.ReplaceAll(bodyTemplates[0].body, "NAME", "web")},
		{"PUT", "/v1/acl/policy", `{"Name":"p"}`},
		{"PUT", "/v1/acl/auth-method", `{"Name":"m","Type":"jwt","Config":{"JWTValidationPubKeys":[` + testPubKey + `]}}`},
		{"PUT", "/v1/namespace/ns1", `{"Name":"ns1"}`},
	} {
		resp := call(t, leader, w.method, w.path, w.body, "X-Service-Token", mgmt)
		if resp.Status != 200 {
			t.Logf("seeding %s %s: %s", w.method, w.path, resp)
		}
	}

	statuses := fuzzWrites(t, c, r, routes, mgmt, rounds)
	t.Logf("%d write routes; statuses: %v", len(routes), statuses)
	if statuses[200] == 0 || statuses[400] == 0 {
		t.Fatalf("statuses %v: want both writes taken and refused", statuses)
	}
	before := c.waitSameState(t)
	// Every server from its log.
	for i := range c.nodes {
		c.restart(t, i)
	}
	if got := c.waitSameState(t); got != before {
		t.Fatalf("after restarting from the logs: state %s, want %s", got, before)
	}

	// Every server takes a snapshot (a stale save is this server's own),
	// more writes, then every server from its snapshot and the log after.
	var archive string
	for _, n := range c.nodes {
		resp := call(t, n, "GET", "/v1/snapshot?stale", "", "X-Service-Token", mgmt)
		if resp.Status != 200 {
			t.Fatalf("snapshot of %s: %s", n.URL, resp)
		}
		archive = resp.Body
	}
	saved := c.waitSameState(t)
	t.Logf("statuses after the snapshots: %v", fuzzWrites(t, c, r, routes, mgmt, rounds))
	before = c.waitSameState(t)
	for i := range c.nodes {
		c.restart(t, i)
	}
	if got := c.waitSameState(t); got != before {
		t.Fatalf("after restarting from the snapshots: state %s, want %s", got, before)
	}

	// The saved archive restores onto every server.
	leader = servertest.Leader(t, c.nodes)
	if resp := call(t, leader, "PUT", "/v1/snapshot", archive, "X-Service-Token", mgmt); resp.Status != 200 {
		t.Fatalf("restoring the archive: %s", resp)
	}
	if got := c.waitSameState(t); got == before && saved != before {
		t.Fatalf("after the restore the state is still %s (the archive's: %s)", got, saved)
	}
}
