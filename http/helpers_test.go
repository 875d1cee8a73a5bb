package http_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// Paths of the binding-rule API (design §2: everything under /v1).
const (
	rulesPath = "/v1/acl/binding-rules"
	rulePath  = "/v1/acl/binding-rule"
)

// Content types (design §2): JSON on success, plain text on error.
const (
	jsonType = "application/json"
	textType = "text/plain; charset=utf-8"
)

// uuidV4 is a server-assigned rule ID: a random (version 4, RFC 4122
// variant) UUID in lowercase (design §3).
var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

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

// full is the exact body of a create, read or update response: every field,
// Selector and Description even when empty (design §3).
func (r rule) full() string {
	return fmt.Sprintf(`{"ID":%s,"Description":%s,"AuthMethod":%s,"Selector":%s,"BindType":%s,"BindName":%s,"Namespace":%s,"CreateIndex":%d,"ModifyIndex":%d}`,
		js(r.ID), js(r.Description), js(r.AuthMethod), js(r.Selector), js(r.BindType), js(r.BindName), js(r.Namespace), r.CreateIndex, r.ModifyIndex)
}

// listed is the exact JSON of the rule as a list entry: no Selector key
// when it is empty (spec, "Observed in list output"; design §3).
func (r rule) listed() string {
	sel := ""
	if r.Selector != "" {
		sel = `"Selector":` + js(r.Selector) + ","
	}
	return fmt.Sprintf(`{"ID":%s,"Description":%s,"AuthMethod":%s,%s"BindType":%s,"BindName":%s,"Namespace":%s,"CreateIndex":%d,"ModifyIndex":%d}`,
		js(r.ID), js(r.Description), js(r.AuthMethod), sel, js(r.BindType), js(r.BindName), js(r.Namespace), r.CreateIndex, r.ModifyIndex)
}

// listBody is the exact body of a list answering rules, in that order.
func listBody(rules ...rule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.listed()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func js(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ruleURL is the path of one rule, with an optional query ("?ns=x").
func ruleURL(id string, query ...string) string {
	return rulePath + "/" + id + strings.Join(query, "")
}

// expectJSON checks a 200 JSON answer with exactly that body.
func expectJSON(t testing.TB, resp *servertest.Response, body string) {
	t.Helper()
	if resp.Status != 200 {
		t.Fatalf("status: got %s, want 200 %q", resp, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != jsonType {
		t.Errorf("Content-Type: got %q, want %q", ct, jsonType)
	}
	if resp.Body != body {
		t.Errorf("body:\n got %s\nwant %s", resp.Body, body)
	}
}

// expectError checks an error answer: the status, a plain-text content
// type, and exactly that message (no trailing newline).
func expectError(t testing.TB, resp *servertest.Response, status int, msg string) {
	t.Helper()
	if resp.Status != status || resp.Body != msg {
		t.Errorf("got %s, want %d %q", resp, status, msg)
	}
	if ct := resp.Header.Get("Content-Type"); ct != textType {
		t.Errorf("Content-Type: got %q, want %q", ct, textType)
	}
}

// expectHeader checks one response header's exact value ("" = absent).
func expectHeader(t testing.TB, resp *servertest.Response, name, want string) {
	t.Helper()
	vals := resp.Header.Values(name)
	switch {
	case want == "" && len(vals) != 0:
		t.Errorf("header %s: got %q, want it absent", name, vals)
	case want != "" && (len(vals) != 1 || vals[0] != want):
		t.Errorf("header %s: got %q, want %q", name, vals, want)
	}
}

// expectMeta checks the read headers of design §2 on a single leader:
// index, known leader true, last contact 0, under our names and the
// X-Consul- duplicates the official client reads.
func expectMeta(t testing.TB, resp *servertest.Response, index uint64) {
	t.Helper()
	for _, prefix := range []string{"X-Service-", "X-Consul-"} {
		expectHeader(t, resp, prefix+"Index", strconv.FormatUint(index, 10))
		expectHeader(t, resp, prefix+"KnownLeader", "true")
		expectHeader(t, resp, prefix+"LastContact", "0")
	}
}

// indexOf returns the X-Service-Index of a response.
func indexOf(t testing.TB, resp *servertest.Response) uint64 {
	t.Helper()
	v := resp.Header.Get("X-Service-Index")
	idx, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("X-Service-Index %q of %s: %v", v, resp, err)
	}
	return idx
}

// snapshotState is the list of every namespace and its index: what a
// rejected request must leave untouched.
type snapshotState struct {
	index uint64
	body  string
}

func stateOf(t testing.TB, ts *servertest.TestServer) snapshotState {
	t.Helper()
	resp := ts.Do(t, "GET", rulesPath+"?ns=*", "")
	if resp.Status != 200 {
		t.Fatalf("list: %s", resp)
	}
	return snapshotState{index: indexOf(t, resp), body: resp.Body}
}

// expectUnchanged checks that nothing was written since before was taken.
func expectUnchanged(t testing.TB, ts *servertest.TestServer, before snapshotState) {
	t.Helper()
	if after := stateOf(t, ts); after != before {
		t.Errorf("state changed by a rejected request:\nbefore %d %s\n after %d %s", before.index, before.body, after.index, after.body)
	}
}

// create creates a rule through the API and checks the create contract:
// 200 JSON, a lowercase v4 UUID, CreateIndex == ModifyIndex > 0, and a body
// that is exactly the full rule.
func create(t testing.TB, ts *servertest.TestServer, body string, headers ...string) rule {
	t.Helper()
	return createAt(t, ts, rulePath, body, headers...)
}

func createAt(t testing.TB, ts *servertest.TestServer, path, body string, headers ...string) rule {
	t.Helper()
	resp := ts.Do(t, "PUT", path, body, headers...)
	if resp.Status != 200 {
		t.Fatalf("create %s: %s", body, resp)
	}
	var got rule
	resp.JSON(t, &got)
	if !uuidV4.MatchString(got.ID) {
		t.Errorf("ID %q is not a lowercase v4 UUID", got.ID)
	}
	if got.CreateIndex == 0 || got.CreateIndex != got.ModifyIndex {
		t.Errorf("indexes after create: CreateIndex %d, ModifyIndex %d; want equal and > 0", got.CreateIndex, got.ModifyIndex)
	}
	expectJSON(t, resp, got.full())
	return got
}

// read fetches a rule and checks it is exactly want.
func expectRead(t testing.TB, ts *servertest.TestServer, want rule) {
	t.Helper()
	resp := ts.Do(t, "GET", ruleURL(want.ID, "?ns="+want.Namespace), "")
	expectJSON(t, resp, want.full())
}

// start starts a fresh single-node server for one test.
func start(t *testing.T) *servertest.TestServer {
	t.Helper()
	return servertest.Start(t)
}

// Bodies used throughout.
const (
	minimalBody = `{"AuthMethod":"minikube","BindType":"service","BindName":"web"}`
)

// otherID is a well-formed UUID no test ever creates.
const otherID = "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"

func u(n uint64) string { return strconv.FormatUint(n, 10) }
