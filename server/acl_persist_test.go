package server_test

// ACL state is Raft state: it survives a restart on the same data
// directory (from a Raft snapshot plus the log after it) and travels in a
// snapshot archive to another server, whose own initial management token
// is recreated by the restore.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

const (
	apAnonymousID  = "00000000-0000-0000-0000-000000000002"
	apAnonymousFmt = "Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token."
	apTokenDenyFmt = "Permission denied: token with AccessorID '%s' lacks permission '%s'"
	apResetFmt     = "Permission denied: ACL bootstrap no longer allowed (reset index: %d)"
)

// apToken is the part of a token the tests look at.
type apToken struct {
	AccessorID  string
	SecretID    string
	Description string
	Namespace   string
	CreateIndex uint64
	ModifyIndex uint64
}

// apDo sends a request as secret ("" sends no token).
func apDo(t testing.TB, ts *servertest.TestServer, secret, method, path, body string) *servertest.Response {
	t.Helper()
	if secret == "" {
		return call(t, ts, method, path, body)
	}
	return call(t, ts, method, path, body, "X-Service-Token", secret)
}

// apMust sends a request as secret that must be answered with 200.
func apMust(t testing.TB, ts *servertest.TestServer, secret, method, path, body string) *servertest.Response {
	t.Helper()
	r := apDo(t, ts, secret, method, path, body)
	if r.Status != 200 {
		t.Fatalf("%s %s%s %s as %q: %s, want 200", method, ts.URL, path, body, secret, r)
	}
	return r
}

// apExpect checks an answer's status and exact body.
func apExpect(t testing.TB, r *servertest.Response, status int, body string) {
	t.Helper()
	if r.Status != status || r.Body != body {
		t.Errorf("got %s, want %d %q", r, status, body)
	}
}

// apStart starts a server with ACLs on and waits until the built-in ACL
// objects exist (the leader creates them just after its election) and the
// management secret resolves.
func apStart(t *testing.T, mgmt string, opts ...servertest.Option) *servertest.TestServer {
	t.Helper()
	ts := servertest.Start(t, append(opts, servertest.ACL(mgmt))...)
	waitFor(t, 10*time.Second, "the ACL system to be ready", func() string {
		if r := apDo(t, ts, "", "GET", "/v1/acl/token/self", ""); r.Status != 200 {
			return "anonymous token/self: " + r.String()
		}
		if mgmt != "" {
			if r := apDo(t, ts, mgmt, "GET", "/v1/acl/token/self", ""); r.Status != 200 {
				return "management token/self: " + r.String()
			}
		}
		return ""
	})
	return ts
}

func apCreateToken(t testing.TB, ts *servertest.TestServer, secret, body string) apToken {
	t.Helper()
	var tok apToken
	apMust(t, ts, secret, "PUT", "/v1/acl/token", body).JSON(t, &tok)
	return tok
}

func apID(t testing.TB, r *servertest.Response) string {
	t.Helper()
	var obj struct{ ID string }
	r.JSON(t, &obj)
	return obj.ID
}

// apObjects is every ACL object as the management token reads it: the
// lists and each object on its own.
func apObjects(t testing.TB, ts *servertest.TestServer, mgmt string, paths []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range append([]string{"/v1/acl/policies", "/v1/acl/roles", "/v1/acl/tokens"}, paths...) {
		out[p] = apMust(t, ts, mgmt, "GET", p, "").Body
	}
	return out
}

// apSameObjects compares two apObjects results (only the paths got has).
func apSameObjects(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatalf("%s: nothing to compare", what)
	}
	for p, g := range got {
		if w := want[p]; g != w {
			t.Errorf("%s: %s differs:\n got %s\nwant %s", what, p, g, w)
		}
	}
}

// apWorld is a set of ACL objects and the permissions they grant.
type apWorld struct {
	reader, writer apToken // acl:read (+ operator:read via a role); acl:write
	paths          []string
	resetIndex     uint64
}

// build creates policies, a role, tokens (one with a TTL, one in namespace
// team1) and a binding rule, and records what the checks need.
func (w *apWorld) build(t *testing.T, ts *servertest.TestServer, mgmt string, snapshotMidway bool) {
	t.Helper()
	readers := apID(t, apMust(t, ts, mgmt, "PUT", "/v1/acl/policy", `{"Name":"readers","Description":"read ACLs","Rules":"acl = \"read\""}`))
	ops := apID(t, apMust(t, ts, mgmt, "PUT", "/v1/acl/policy", `{"Name":"ops","Rules":"operator = \"read\"\nnamespace \"prod-*\" { policy = \"read\" }"}`))
	writers := apID(t, apMust(t, ts, mgmt, "PUT", "/v1/acl/policy", `{"Name":"writers","Rules":"acl = \"write\""}`))
	role := apID(t, apMust(t, ts, mgmt, "PUT", "/v1/acl/role", `{"Name":"operators","Description":"ops","Policies":[{"Name":"ops"}],"ServiceIdentities":[{"ServiceName":"web"}]}`))
	if snapshotMidway {
		// A Raft snapshot now: a restart restores it, then replays the rest.
		apMust(t, ts, mgmt, "GET", "/v1/snapshot", "")
	}
	w.reader = apCreateToken(t, ts, mgmt, `{"Description":"reader","Policies":[{"Name":"readers"}],"Roles":[{"Name":"operators"}],"ExpirationTTL":"1h"}`)
	w.writer = apCreateToken(t, ts, mgmt, `{"Description":"writer","Policies":[{"Name":"writers"}],"Namespace":"team1"}`)
	var r rule
	apMust(t, ts, w.writer.SecretID, "PUT", rulePath, `{"AuthMethod":"m","BindType":"service","BindName":"web"}`).JSON(t, &r)
	if r.Namespace != "team1" {
		t.Errorf("rule created by the team1 token is in %q", r.Namespace)
	}
	w.paths = []string{
		"/v1/acl/policy/" + readers, "/v1/acl/policy/" + ops, "/v1/acl/policy/" + writers,
		"/v1/acl/policy/name/readers", "/v1/acl/role/" + role, "/v1/acl/role/name/operators",
		"/v1/acl/token/" + w.reader.AccessorID, "/v1/acl/token/" + w.writer.AccessorID,
		"/v1/acl/token/" + apAnonymousID, rulesPath + "?ns=*",
	}
	var self apToken
	apMust(t, ts, mgmt, "GET", "/v1/acl/token/self", "").JSON(t, &self)
	w.resetIndex = self.CreateIndex
}

// check verifies that every token still grants exactly what it did.
func (w *apWorld) check(t *testing.T, ts *servertest.TestServer) {
	t.Helper()
	apMust(t, ts, w.reader.SecretID, "GET", "/v1/acl/policies", "")
	apMust(t, ts, w.reader.SecretID, "GET", "/v1/operator/raft/configuration", "")
	apExpect(t, apDo(t, ts, w.reader.SecretID, "PUT", "/v1/acl/policy", `{"Name":"nope"}`), 403, fmt.Sprintf(apTokenDenyFmt, w.reader.AccessorID, "acl:write"))
	apExpect(t, apDo(t, ts, w.reader.SecretID, "DELETE", "/v1/operator/raft/peer?id=x", ""), 403, fmt.Sprintf(apTokenDenyFmt, w.reader.AccessorID, "operator:write"))
	apExpect(t, apDo(t, ts, w.writer.SecretID, "GET", "/v1/operator/raft/configuration", ""), 403, fmt.Sprintf(apTokenDenyFmt, w.writer.AccessorID, "operator:read"))
	// The writer's namespace still resolves its rules to team1.
	var listed []rule
	apMust(t, ts, w.writer.SecretID, "GET", rulesPath, "").JSON(t, &listed)
	if len(listed) != 1 || listed[0].Namespace != "team1" {
		t.Errorf("the team1 token lists %+v, want its one team1 rule", listed)
	}
	apExpect(t, apDo(t, ts, "", "GET", rulesPath, ""), 403, fmt.Sprintf(apAnonymousFmt, "acl:read"))
	apExpect(t, apDo(t, ts, "", "PUT", "/v1/acl/bootstrap", ""), 403, fmt.Sprintf(apResetFmt, w.resetIndex))
}

func TestACLStateSurvivesRestart(t *testing.T) {
	dir, bind := t.TempDir(), servertest.FreeAddr(t)
	opts := []servertest.Option{servertest.Persistent(dir), servertest.BindAddr(bind)}

	ts := apStart(t, "root", opts...)
	var w apWorld
	w.build(t, ts, "root", true)
	w.check(t, ts)
	before := apObjects(t, ts, "root", w.paths)
	if err := ts.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	ts = apStart(t, "root", opts...)
	apSameObjects(t, "after a restart", apObjects(t, ts, "root", w.paths), before)
	w.check(t, ts)
	// The restarted server takes writes with the same tokens.
	apMust(t, ts, w.writer.SecretID, "PUT", "/v1/acl/policy", `{"Name":"after-restart"}`)
	after := apObjects(t, ts, "root", w.paths)
	if err := ts.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	// A later start with another initial management token adds that one;
	// the first still works and the bootstrap stays closed at its index.
	ts = apStart(t, "root2", opts...)
	apMust(t, ts, "root", "GET", "/v1/acl/token/self", "")
	var tokens []apToken
	apMust(t, ts, "root2", "GET", "/v1/acl/tokens", "").JSON(t, &tokens)
	if len(tokens) != 5 { // anonymous, root, reader, writer, root2
		t.Errorf("tokens after a start with a second initial token: %+v", tokens)
	}
	got := apObjects(t, ts, "root", w.paths)
	delete(got, "/v1/acl/tokens")
	apSameObjects(t, "after a start with a second initial token", got, after)
	w.check(t, ts)
}

func TestACLSnapshotRestoreOntoAnotherServer(t *testing.T) {
	a := apStart(t, "root-a")
	var w apWorld
	w.build(t, a, "root-a", false)
	want := apObjects(t, a, "root-a", w.paths)
	archive := apMust(t, a, "root-a", "GET", "/v1/snapshot", "").Body

	b := apStart(t, "root-b")
	apMust(t, b, "root-b", "PUT", "/v1/acl/policy", `{"Name":"b-only"}`)
	var rootB apToken
	apMust(t, b, "root-b", "GET", "/v1/acl/token/self", "").JSON(t, &rootB)

	// Restore needs a management token of the target server.
	apExpect(t, apDo(t, b, "root-a", "PUT", "/v1/snapshot", archive), 403, "ACL not found")
	apExpect(t, apDo(t, b, "", "PUT", "/v1/snapshot", archive), 403, fmt.Sprintf(apAnonymousFmt, "management"))
	apExpect(t, apMust(t, b, "root-b", "PUT", "/v1/snapshot", archive), 200, "true")

	// The target's own initial management token is recreated by the
	// restore; the source's management token and every restored token work.
	var self apToken
	apMust(t, b, "root-b", "GET", "/v1/acl/token/self", "").JSON(t, &self)
	if self.Description != "Initial Management Token" || self.SecretID != "root-b" {
		t.Errorf("root-b after the restore: %+v", self)
	}
	apMust(t, b, "root-b", "GET", "/v1/snapshot", "")
	apMust(t, b, "root-a", "GET", "/v1/snapshot", "")
	w.check(t, b)

	got := apObjects(t, b, "root-b", w.paths)
	// The token list is the source's plus root-b's token.
	var tokens []apToken
	if err := json.Unmarshal([]byte(got["/v1/acl/tokens"]), &tokens); err != nil {
		t.Fatal(err)
	}
	var rest []apToken
	for _, tok := range tokens {
		if tok.SecretID != "root-b" {
			rest = append(rest, tok)
		}
	}
	buf, _ := json.Marshal(rest)
	var wantTokens []apToken
	if err := json.Unmarshal([]byte(want["/v1/acl/tokens"]), &wantTokens); err != nil {
		t.Fatal(err)
	}
	wantBuf, _ := json.Marshal(wantTokens)
	if string(buf) != string(wantBuf) || len(tokens) != len(wantTokens)+1 {
		t.Errorf("tokens after the restore:\n got %s\nwant %s plus root-b's", got["/v1/acl/tokens"], want["/v1/acl/tokens"])
	}
	delete(got, "/v1/acl/tokens")
	apSameObjects(t, "after the restore", got, want)
	apExpect(t, apDo(t, b, "root-b", "GET", "/v1/acl/policy/name/b-only", ""), 404, "Requested policy does not exist: ACL not found")
}

// TestACLRestoreReplacesCachedPermissions: a token's permissions after a
// restore are the restored state's, even when the token, policy and role
// indexes in the archive happen to equal the ones the target had (two
// servers with the same history line up index for index).
func TestACLRestoreReplacesCachedPermissions(t *testing.T) {
	a := apStart(t, "root-a")
	b := apStart(t, "root-b")

	// nextIndex writes a binding rule and returns the index it got.
	nextIndex := func(ts *servertest.TestServer, secret string) uint64 {
		var r rule
		apMust(t, ts, secret, "PUT", rulePath, `{"AuthMethod":"filler","BindType":"service","BindName":"x"}`).JSON(t, &r)
		return r.CreateIndex
	}
	modifyIndex := func(r *servertest.Response) uint64 {
		var obj struct{ ModifyIndex uint64 }
		r.JSON(t, &obj)
		return obj.ModifyIndex
	}
	aligned := false
	for attempt := 0; attempt < 20 && !aligned; attempt++ {
		ia, ib := nextIndex(a, "root-a"), nextIndex(b, "root-b")
		for ia < ib {
			ia = nextIndex(a, "root-a")
		}
		for ib < ia {
			ib = nextIndex(b, "root-b")
		}
		// The same writes at the same indexes: on a, the anonymous token
		// may read ACLs; on b, it may write them.
		n := strconv.Itoa(attempt)
		pa := modifyIndex(apMust(t, a, "root-a", "PUT", "/v1/acl/policy", `{"Name":"anon-`+n+`","Rules":"acl = \"read\""}`))
		pb := modifyIndex(apMust(t, b, "root-b", "PUT", "/v1/acl/policy", `{"Name":"anon-`+n+`","Rules":"acl = \"write\""}`))
		ka := modifyIndex(apMust(t, a, "root-a", "PUT", "/v1/acl/token/"+apAnonymousID, `{"Description":"Anonymous Token","Policies":[{"Name":"anon-`+n+`"}]}`))
		kb := modifyIndex(apMust(t, b, "root-b", "PUT", "/v1/acl/token/"+apAnonymousID, `{"Description":"Anonymous Token","Policies":[{"Name":"anon-`+n+`"}]}`))
		aligned = ia == ib && pa == pb && ka == kb
	}
	if !aligned {
		t.Skip("could not line up the two servers' indexes")
	}
	archive := apMust(t, a, "root-a", "GET", "/v1/snapshot", "").Body

	// b resolves (and may cache) its anonymous token's permissions.
	apMust(t, b, "", "PUT", rulePath, `{"AuthMethod":"anon","BindType":"service","BindName":"web"}`)
	apMust(t, b, "root-b", "PUT", "/v1/snapshot", archive)

	// Now the anonymous token is a's: read, not write.
	apMust(t, b, "", "GET", rulesPath+"?ns=*", "")
	r := apDo(t, b, "", "PUT", rulePath, `{"AuthMethod":"anon","BindType":"service","BindName":"web"}`)
	apExpect(t, r, 403, fmt.Sprintf(apAnonymousFmt, "acl:write"))
	if r.Status == 200 && strings.Contains(r.Body, `"ID"`) {
		t.Error("the anonymous token kept the write permission it had before the restore")
	}
}

// TestACLRestoreOfAnArchiveWithoutACLs: an archive from a server that ran
// with ACLs off (and so has no management token) restored onto one with
// ACLs on: the target's management token is recreated and works, the
// anonymous token is refused, the data is there.
func TestACLRestoreOfAnArchiveWithoutACLs(t *testing.T) {
	a := servertest.Start(t)
	must(t, a, "PUT", rulePath, `{"AuthMethod":"m","BindType":"service","BindName":"web"}`)
	archive := must(t, a, "GET", "/v1/snapshot", "").Body

	b := apStart(t, "root-b")
	apMust(t, b, "root-b", "PUT", "/v1/snapshot", archive)
	apMust(t, b, "root-b", "GET", "/v1/acl/token/self", "")
	apExpect(t, apDo(t, b, "", "GET", rulesPath, ""), 403, fmt.Sprintf(apAnonymousFmt, "acl:read"))
	// The archive was never bootstrapped; the recreated initial management
	// token closes bootstrapping again.
	var self apToken
	apMust(t, b, "root-b", "GET", "/v1/acl/token/self", "").JSON(t, &self)
	apExpect(t, apDo(t, b, "", "PUT", "/v1/acl/bootstrap", ""), 403, fmt.Sprintf(apResetFmt, self.CreateIndex))
	var rules []rule
	apMust(t, b, "root-b", "GET", rulesPath, "").JSON(t, &rules)
	if len(rules) != 1 || rules[0].BindName != "web" {
		t.Errorf("rules after the restore: %+v", rules)
	}
	var gm struct{ Name string }
	apMust(t, b, "root-b", "GET", "/v1/acl/policy/00000000-0000-0000-0000-000000000001", "").JSON(t, &gm)
	if gm.Name != "global-management" {
		t.Errorf("built-in policy after the restore: %+v", gm)
	}
}
