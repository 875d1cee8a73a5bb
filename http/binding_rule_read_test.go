package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRead walks GET /v1/acl/binding-rule/:id: the rule with every field,
// the read headers, not-found and malformed IDs, namespaces.
func TestRead(t *testing.T) {
	ts := start(t)
	r := create(t, ts, `{"Description":"k8s services","AuthMethod":"minikube","Selector":"serviceaccount.namespace==default","BindType":"service","BindName":"k8s-${serviceaccount.name}"}`)
	empty := create(t, ts, minimalBody)
	inA := create(t, ts, `{"AuthMethod":"minikube","BindType":"role","BindName":"Admins","Namespace":"team-a"}`)
	index := inA.ModifyIndex // the table's index

	t.Run("found: 200, every field, read headers", func(t *testing.T) {
		resp := ts.Do(t, "GET", ruleURL(r.ID), "")
		expectJSON(t, resp, r.full())
		expectMeta(t, resp, index)
	})
	t.Run("Description and Selector present when empty", func(t *testing.T) {
		resp := ts.Do(t, "GET", ruleURL(empty.ID), "")
		expectJSON(t, resp, empty.full())
		if !strings.Contains(resp.Body, `"Description":"","AuthMethod":"minikube","Selector":""`) {
			t.Errorf("empty Description/Selector missing from %s", resp.Body)
		}
	})
	t.Run("uppercase UUID finds the rule", func(t *testing.T) {
		resp := ts.Do(t, "GET", ruleURL(strings.ToUpper(r.ID)), "")
		expectJSON(t, resp, r.full())
		expectMeta(t, resp, index)
	})
	t.Run("?pretty indents 4 spaces with a trailing newline", func(t *testing.T) {
		resp := ts.Do(t, "GET", ruleURL(r.ID, "?pretty"), "")
		want := "{\n" +
			`    "ID": "` + r.ID + "\",\n" +
			`    "Description": "k8s services",` + "\n" +
			`    "AuthMethod": "minikube",` + "\n" +
			`    "Selector": "serviceaccount.namespace==default",` + "\n" +
			`    "BindType": "service",` + "\n" +
			`    "BindName": "k8s-${serviceaccount.name}",` + "\n" +
			`    "Namespace": "default",` + "\n" +
			`    "CreateIndex": ` + u(r.CreateIndex) + ",\n" +
			`    "ModifyIndex": ` + u(r.ModifyIndex) + "\n" +
			"}\n"
		expectJSON(t, resp, want)
	})
	t.Run("?pretty=1 also indents", func(t *testing.T) {
		resp := ts.Do(t, "GET", ruleURL(r.ID, "?pretty=1"), "")
		if resp.Status != 200 || !strings.HasPrefix(resp.Body, "{\n    \"ID\": ") || !strings.HasSuffix(resp.Body, "}\n") {
			t.Errorf("got %s", resp)
		}
	})

	const (
		notFound = "Requested binding rule does not exist: ACL not found"
		badID    = `Invalid binding rule ID %q: a 36-character UUID is required`
	)
	tests := []struct {
		name    string
		path    string
		headers []string
		status  int
		msg     string
		body    string // on 200
	}{
		// Namespaces: read looks in the resolved namespace only.
		{name: "rule of team-a via ns", path: ruleURL(inA.ID, "?ns=team-a"), status: 200, body: inA.full()},
		{name: "rule of team-a via header", path: ruleURL(inA.ID), headers: []string{"X-Service-Namespace", "team-a"}, status: 200, body: inA.full()},
		{name: "ns beats header", path: ruleURL(inA.ID, "?ns=team-a"), headers: []string{"X-Service-Namespace", "default"}, status: 200, body: inA.full()},
		{name: "rule of team-a not in default", path: ruleURL(inA.ID), status: 404, msg: notFound},
		{name: "rule of default not in team-a", path: ruleURL(r.ID, "?ns=team-a"), status: 404, msg: notFound},
		{name: "rule of default not in team-a (header)", path: ruleURL(r.ID), headers: []string{"X-Service-Namespace", "team-a"}, status: 404, msg: notFound},
		{name: "ns=* is for list only", path: ruleURL(r.ID, "?ns=*"), status: 400, msg: `Invalid namespace "*": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
		{name: "invalid namespace header", path: ruleURL(r.ID), headers: []string{"X-Service-Namespace", "team a"}, status: 400, msg: `Invalid namespace "team a": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
		// Not found.
		{name: "unknown ID", path: ruleURL(otherID), status: 404, msg: notFound},
		// The ID must be a 36-character UUID.
		{name: "no ID", path: rulePath + "/", status: 400, msg: "Missing binding rule ID"},
		{name: "short", path: ruleURL("abc"), status: 400, msg: fmt.Sprintf(badID, "abc")},
		{name: "35 characters", path: ruleURL(otherID[:35]), status: 400, msg: fmt.Sprintf(badID, otherID[:35])},
		{name: "37 characters", path: ruleURL(otherID + "0"), status: 400, msg: fmt.Sprintf(badID, otherID+"0")},
		{name: "not hex", path: ruleURL("zzzzzzzz-0e1f-4a2b-8c3d-4e5f6a7b8c9d"), status: 400, msg: fmt.Sprintf(badID, "zzzzzzzz-0e1f-4a2b-8c3d-4e5f6a7b8c9d")},
		{name: "hyphens misplaced", path: ruleURL("6a7b8c9d0-e1f-4a2b-8c3d-4e5f6a7b8c9d"), status: 400, msg: fmt.Sprintf(badID, "6a7b8c9d0-e1f-4a2b-8c3d-4e5f6a7b8c9d")},
		{name: "32 hex, no hyphens", path: ruleURL(strings.ReplaceAll(otherID, "-", "")), status: 400, msg: fmt.Sprintf(badID, strings.ReplaceAll(otherID, "-", ""))},
		{name: "extra path segment", path: ruleURL(r.ID + "/x"), status: 400, msg: fmt.Sprintf(badID, r.ID+"/x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.Do(t, "GET", tc.path, "", tc.headers...)
			if tc.status == 200 {
				expectJSON(t, resp, tc.body)
				expectMeta(t, resp, index)
				return
			}
			expectError(t, resp, tc.status, tc.msg)
			if tc.status == 404 {
				// A missing rule is still a read: it reports the table's index.
				expectMeta(t, resp, index)
			}
		})
	}
}

// TestDelete walks DELETE /v1/acl/binding-rule/:id.
func TestDelete(t *testing.T) {
	ts := start(t)
	const missing = "Cannot find binding rule to delete"

	t.Run("deleted: 200 true, then gone, index moves on", func(t *testing.T) {
		r := create(t, ts, minimalBody)
		expectJSON(t, ts.Do(t, "DELETE", ruleURL(r.ID), ""), "true")
		expectError(t, ts.Do(t, "GET", ruleURL(r.ID), ""), 404, "Requested binding rule does not exist: ACL not found")
		if st := stateOf(t, ts); st.index <= r.ModifyIndex || strings.Contains(st.body, r.ID) {
			t.Errorf("after delete: list index %d (rule at %d), body %s", st.index, r.ModifyIndex, st.body)
		}
		// A second delete finds nothing.
		before := stateOf(t, ts)
		expectError(t, ts.Do(t, "DELETE", ruleURL(r.ID), ""), 404, missing)
		expectUnchanged(t, ts, before)
	})
	t.Run("uppercase UUID deletes the rule", func(t *testing.T) {
		r := create(t, ts, minimalBody)
		expectJSON(t, ts.Do(t, "DELETE", ruleURL(strings.ToUpper(r.ID)), ""), "true")
		expectError(t, ts.Do(t, "GET", ruleURL(r.ID), ""), 404, "Requested binding rule does not exist: ACL not found")
	})
	t.Run("rule of team-a via ns", func(t *testing.T) {
		r := create(t, ts, minimalBody, "X-Service-Namespace", "team-a")
		expectJSON(t, ts.Do(t, "DELETE", ruleURL(r.ID, "?ns=team-a"), ""), "true")
	})
	t.Run("rule of team-a via header", func(t *testing.T) {
		r := create(t, ts, minimalBody, "X-Service-Namespace", "team-a")
		expectJSON(t, ts.Do(t, "DELETE", ruleURL(r.ID), "", "X-Service-Namespace", "team-a"), "true")
	})

	tests := []struct {
		name    string
		path    string // {{ID}} is a rule of default
		headers []string
		status  int
		msg     string
	}{
		{name: "unknown ID", path: ruleURL(otherID), status: 404, msg: missing},
		{name: "rule of default not in team-a (ns)", path: ruleURL("{{ID}}", "?ns=team-a"), status: 404, msg: missing},
		{name: "rule of default not in team-a (header)", path: ruleURL("{{ID}}"), headers: []string{"X-Service-Namespace", "team-a"}, status: 404, msg: missing},
		{name: "no ID", path: rulePath + "/", status: 400, msg: "Missing binding rule ID"},
		{name: "not a UUID", path: ruleURL("abc"), status: 400, msg: `Invalid binding rule ID "abc": a 36-character UUID is required`},
		{name: "ns=*", path: ruleURL("{{ID}}", "?ns=*"), status: 400, msg: `Invalid namespace "*": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := create(t, ts, minimalBody)
			before := stateOf(t, ts)
			expectError(t, ts.Do(t, "DELETE", fill(tc.path, r.ID), "", tc.headers...), tc.status, tc.msg)
			expectUnchanged(t, ts, before)
			expectRead(t, ts, r)
		})
	}
}

// TestReadDateHeader: responses carry a Date of the current second (the
// handler sets it from a per-second cache instead of net/http).
func TestReadDateHeader(t *testing.T) {
	ts := start(t)
	r := create(t, ts, minimalBody)
	before := time.Now().Truncate(time.Second)
	resp := ts.Do(t, "GET", ruleURL(r.ID), "")
	after := time.Now()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil || date.Before(before) || date.After(after) {
		t.Fatalf("Date %q (%v): want a time between %v and %v", resp.Header.Get("Date"), err, before, after)
	}
	if n := len(resp.Header.Values("Date")); n != 1 {
		t.Errorf("%d Date headers, want 1", n)
	}
}
