package http_test

import (
	"strings"
	"testing"
)

// TestBadBody walks strict body decoding (design §2): each bad body is 400
// "BindingRule decoding failed: ...", on create and on update alike, and
// nothing is written.
func TestBadBody(t *testing.T) {
	ts := start(t)
	r := create(t, ts, minimalBody)
	const fail = "BindingRule decoding failed: "

	tests := []struct {
		name string
		body string
		msg  string
	}{
		{name: "empty body", body: "", msg: fail + "EOF"},
		{name: "whitespace only", body: " \n\t ", msg: fail + "EOF"},
		{name: "truncated", body: `{"AuthMethod":`, msg: fail + "unexpected EOF"},
		{name: "unquoted key", body: `{AuthMethod:"x"}`, msg: fail + "invalid character 'A' looking for beginning of object key string"},
		{name: "trailing comma", body: `{"AuthMethod":"x",}`, msg: fail + "invalid character '}' looking for beginning of object key string"},
		{name: "not JSON", body: `AuthMethod=x`, msg: fail + "invalid character 'A' looking for beginning of value"},
		{name: "unknown field Foo", body: `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Foo":"bar"}`, msg: fail + `json: unknown field "Foo"`},
		{name: "unknown field keeps its spelling", body: `{"foo":1}`, msg: fail + `json: unknown field "foo"`},
		{name: "unknown field Partition", body: `{"Partition":"p"}`, msg: fail + `json: unknown field "Partition"`},
		{name: "unknown field inside BindVars", body: `{"BindVars":{"Foo":1}}`, msg: fail + `json: unknown field "Foo"`},
		{name: "number for a string", body: `{"Description":5}`, msg: fail + "json: cannot unmarshal number into Go struct field bindingRuleRequest.Description of type string"},
		{name: "bool for a string", body: `{"BindType":true}`, msg: fail + "json: cannot unmarshal bool into Go struct field bindingRuleRequest.BindType of type string"},
		{name: "string for an index", body: `{"CreateIndex":"5"}`, msg: fail + "json: cannot unmarshal string into Go struct field bindingRuleRequest.CreateIndex of type uint64"},
		{name: "negative index", body: `{"ModifyIndex":-1}`, msg: fail + "json: cannot unmarshal number -1 into Go struct field bindingRuleRequest.ModifyIndex of type uint64"},
		{name: "array for the object", body: `[]`, msg: fail + "json: cannot unmarshal array into Go value of type http.bindingRuleRequest"},
		{name: "string for the object", body: `"rule"`, msg: fail + "json: cannot unmarshal string into Go value of type http.bindingRuleRequest"},
		{name: "trailing garbage", body: minimalBody + ` x`, msg: fail + "unexpected data after the JSON object"},
		{name: "a second object", body: minimalBody + minimalBody, msg: fail + "unexpected data after the JSON object"},
		{name: "a second value after whitespace", body: minimalBody + "\n1", msg: fail + "unexpected data after the JSON object"},
		{name: "a value after 5,000 spaces", body: minimalBody + strings.Repeat(" ", 5000) + "1", msg: fail + "unexpected data after the JSON object"},
	}
	for _, tc := range tests {
		for _, op := range []struct{ name, path string }{
			{"create", rulePath},
			{"create with trailing slash", rulePath + "/"},
			{"update", ruleURL(r.ID)},
		} {
			t.Run(tc.name+"/"+op.name, func(t *testing.T) {
				before := stateOf(t, ts)
				expectError(t, ts.Do(t, "PUT", op.path, tc.body), 400, tc.msg)
				expectUnchanged(t, ts, before)
			})
		}
	}
	expectRead(t, ts, r)
}

// TestBodyLimit: a body over 1 MiB is 413; exactly 1 MiB is read.
func TestBodyLimit(t *testing.T) {
	ts := start(t)
	const limit = 1 << 20
	pad := func(body string, size int) string { return body + strings.Repeat(" ", size-len(body)) }
	const tooLarge = "Request body too large: the limit is 1048576 bytes"

	t.Run("exactly 1 MiB", func(t *testing.T) {
		create(t, ts, pad(minimalBody, limit))
	})
	t.Run("1 MiB and one byte, in trailing whitespace", func(t *testing.T) {
		before := stateOf(t, ts)
		expectError(t, ts.Do(t, "PUT", rulePath, pad(minimalBody, limit+1)), 413, tooLarge)
		expectUnchanged(t, ts, before)
	})
	t.Run("a 2 MiB Description", func(t *testing.T) {
		before := stateOf(t, ts)
		body := `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Description":"` + strings.Repeat("d", 2*limit) + `"}`
		expectError(t, ts.Do(t, "PUT", rulePath, body), 413, tooLarge)
		expectUnchanged(t, ts, before)
	})
	t.Run("on update", func(t *testing.T) {
		r := create(t, ts, minimalBody)
		before := stateOf(t, ts)
		expectError(t, ts.Do(t, "PUT", ruleURL(r.ID), pad(`{"BindType":"node","BindName":"x"}`, limit+1)), 413, tooLarge)
		expectUnchanged(t, ts, before)
		expectRead(t, ts, r)
	})
}

// TestRouting walks methods and paths (design §2): 405 with Allow and
// "method <M> not allowed", OPTIONS 200 with Allow, and 404 for an unknown
// path.
func TestRouting(t *testing.T) {
	ts := start(t)
	r := create(t, ts, minimalBody)
	const (
		crud   = "OPTIONS,GET,PUT,DELETE"
		put    = "OPTIONS,PUT"
		list   = "OPTIONS,GET"
		badURL = "Invalid URL path: not a recognized HTTP API endpoint"
	)

	tests := []struct {
		method string
		path   string
		status int
		allow  string
		body   string
	}{
		// 405: the route's methods in Allow.
		{method: "POST", path: ruleURL(r.ID), status: 405, allow: crud, body: "method POST not allowed"},
		{method: "PATCH", path: ruleURL(r.ID), status: 405, allow: crud, body: "method PATCH not allowed"},
		{method: "HEAD", path: ruleURL(r.ID), status: 405, allow: crud, body: ""}, // no body on HEAD
		{method: "POST", path: ruleURL("not-a-uuid"), status: 405, allow: crud, body: "method POST not allowed"},
		{method: "POST", path: rulePath + "/", status: 405, allow: crud, body: "method POST not allowed"},
		{method: "POST", path: rulePath, status: 405, allow: put, body: "method POST not allowed"},
		{method: "GET", path: rulePath, status: 405, allow: put, body: "method GET not allowed"},
		{method: "DELETE", path: rulePath, status: 405, allow: put, body: "method DELETE not allowed"},
		{method: "PUT", path: rulesPath, status: 405, allow: list, body: "method PUT not allowed"},
		{method: "POST", path: rulesPath, status: 405, allow: list, body: "method POST not allowed"},
		{method: "DELETE", path: rulesPath, status: 405, allow: list, body: "method DELETE not allowed"},
		{method: "PUT", path: "/v1/status/leader", status: 405, allow: list, body: "method PUT not allowed"},
		{method: "POST", path: "/v1/status/peers", status: 405, allow: list, body: "method POST not allowed"},
		// OPTIONS: 200, empty body, Allow.
		{method: "OPTIONS", path: ruleURL(r.ID), status: 200, allow: crud},
		{method: "OPTIONS", path: rulePath + "/", status: 200, allow: crud},
		{method: "OPTIONS", path: rulePath, status: 200, allow: put},
		{method: "OPTIONS", path: rulesPath, status: 200, allow: list},
		{method: "OPTIONS", path: "/v1/status/leader", status: 200, allow: list},
		// Unknown paths.
		{method: "GET", path: rulesPath + "/x", status: 404, body: badURL},
		{method: "GET", path: rulesPath + "/", status: 404, body: badURL},
		{method: "GET", path: "/v1/acl/binding-rulez", status: 404, body: badURL},
		// Paths are not cleaned: no redirect that would turn a PUT into a GET.
		{method: "PUT", path: "/" + rulePath, status: 404, body: badURL},
		{method: "GET", path: "/v1//acl/binding-rules", status: 404, body: badURL},
		{method: "GET", path: rulePath + "/../binding-rules", status: 400, body: `Invalid binding rule ID "../binding-rules": a 36-character UUID is required`},
		{method: "PUT", path: "/v1/acl/binding-rules/x", status: 404, body: badURL},
		{method: "GET", path: "/v1/nope", status: 404, body: badURL},
		{method: "GET", path: "/v1", status: 404, body: badURL},
		{method: "GET", path: "/uix", status: 404, body: badURL}, // "/" and "/ui" redirect to the web UI (http/ui)
		{method: "GET", path: "/v2/acl/binding-rules", status: 404, body: badURL},
		{method: "POST", path: "/v1/nope", status: 404, body: badURL},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := stateOf(t, ts)
			resp := ts.Do(t, tc.method, tc.path, "")
			expectHeader(t, resp, "Allow", tc.allow)
			switch tc.status {
			case 200:
				if resp.Status != 200 || resp.Body != "" {
					t.Errorf("got %s, want 200 and no body", resp)
				}
			default:
				if tc.method == "HEAD" {
					if resp.Status != tc.status {
						t.Errorf("got %s, want %d", resp, tc.status)
					}
					break
				}
				expectError(t, resp, tc.status, tc.body)
			}
			expectUnchanged(t, ts, before)
		})
	}
	expectRead(t, ts, r)
}

// TestQueryParameters walks the read parameters of design §2 on both read
// endpoints: bad values are 400 with the exact texts.
func TestQueryParameters(t *testing.T) {
	ts := start(t)
	r := create(t, ts, minimalBody)
	const conflict = "Cannot specify ?stale with ?consistent, conflicting semantics."

	tests := []struct {
		query string
		msg   string
	}{
		{"?index=abc", "Invalid index"},
		{"?index=-1", "Invalid index"},
		{"?index=1.5", "Invalid index"},
		{"?index=18446744073709551616", "Invalid index"},
		{"?index=1&wait=10", "Invalid wait time"},
		{"?wait=10", "Invalid wait time"},
		{"?wait=abc", "Invalid wait time"},
		{"?wait=-1s", "Invalid wait time"},
		{"?stale&consistent", conflict},
		{"?stale=1&consistent=1", conflict},
		{"?consistent&stale&index=abc", conflict},
	}
	for _, path := range []string{rulesPath, ruleURL(r.ID)} {
		for _, tc := range tests {
			t.Run(path+tc.query, func(t *testing.T) {
				expectError(t, ts.Do(t, "GET", path+tc.query, ""), 400, tc.msg)
			})
		}
	}
}

// TestConsistencyModes: default, ?stale and ?consistent all answer on the
// single leader, with the same data and headers.
func TestConsistencyModes(t *testing.T) {
	ts := start(t)
	r := create(t, ts, minimalBody)
	for _, mode := range []string{"", "?stale", "?consistent", "?stale=", "?consistent=true"} {
		t.Run("read"+mode, func(t *testing.T) {
			resp := ts.Do(t, "GET", ruleURL(r.ID, mode), "")
			expectJSON(t, resp, r.full())
			expectMeta(t, resp, r.ModifyIndex)
		})
		t.Run("list"+mode, func(t *testing.T) {
			resp := ts.Do(t, "GET", rulesPath+mode, "")
			expectJSON(t, resp, listBody(r))
			expectMeta(t, resp, r.ModifyIndex)
		})
		t.Run("missing"+mode, func(t *testing.T) {
			resp := ts.Do(t, "GET", ruleURL(otherID, mode), "")
			expectError(t, resp, 404, "Requested binding rule does not exist: ACL not found")
		})
	}
}

// TestDevAgentIgnoresTokens: ACLs are off on a dev agent (design §7), so a
// token in any of the accepted headers changes nothing.
func TestDevAgentIgnoresTokens(t *testing.T) {
	ts := start(t)
	for _, h := range [][]string{
		{"X-Service-Token", "not-a-token"},
		{"Authorization", "Bearer not-a-token"},
		{"X-Consul-Token", "not-a-token"},
	} {
		t.Run(h[0], func(t *testing.T) {
			r := create(t, ts, minimalBody, h...)
			resp := ts.Do(t, "GET", ruleURL(r.ID), "", h...)
			expectJSON(t, resp, r.full())
			expectJSON(t, ts.Do(t, "DELETE", ruleURL(r.ID), "", h...), "true")
		})
	}
}
