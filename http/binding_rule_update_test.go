package http_test

import (
	"strings"
	"testing"
)

// fill replaces {{ID}} by the rule's ID and {{UPPER}} by its uppercase form.
func fill(s, id string) string {
	return strings.NewReplacer("{{ID}}", id, "{{UPPER}}", strings.ToUpper(id)).Replace(s)
}

const seedBody = `{"Description":"k8s services","AuthMethod":"minikube","Selector":"serviceaccount.namespace==default","BindType":"service","BindName":"k8s-${serviceaccount.name}"}`

// TestUpdate walks the Update table: a full replace of Description,
// Selector, BindType and BindName; AuthMethod inherited when omitted;
// CreateIndex unchanged and ModifyIndex increased.
func TestUpdate(t *testing.T) {
	ts := start(t)

	tests := []struct {
		name    string
		seed    string // create body; seedBody when empty
		path    string // {{ID}} / {{UPPER}} filled in
		body    string
		headers []string
		// want derives the expected rule from the seeded one (indexes are
		// checked separately).
		want func(seed rule) rule
	}{
		{
			name: "full replace: omitted Description and Selector become empty, AuthMethod inherited",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: `{"BindType":"node","BindName":"db"}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindType, s.BindName = "", "", "node", "db"
				return s
			},
		},
		{
			name: "every field replaced",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: `{"Description":"new","AuthMethod":"minikube","Selector":"serviceaccount.name!=x","BindType":"role","BindName":"Admins"}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindType, s.BindName = "new", "serviceaccount.name!=x", "role", "Admins"
				return s
			},
		},
		{
			name: "same body again still writes",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: seedBody,
			want: func(s rule) rule { return s },
		},
		{
			name: "body ID equal to the path",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: `{"ID":"{{ID}}","BindType":"service","BindName":"web"}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindName = "", "", "web"
				return s
			},
		},
		{
			name: "empty body ID",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: `{"ID":"","BindType":"service","BindName":"web"}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindName = "", "", "web"
				return s
			},
		},
		{
			name: "uppercase path ID finds the rule; body ID equals the path exactly; stored ID stays lowercase",
			path: "/v1/acl/binding-rule/{{UPPER}}",
			body: `{"ID":"{{UPPER}}","BindType":"service","BindName":"web"}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindName = "", "", "web"
				return s
			},
		},
		{
			name: "client CreateIndex and ModifyIndex are ignored",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: `{"BindType":"service","BindName":"web","CreateIndex":1,"ModifyIndex":1}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindName = "", "", "web"
				return s
			},
		},
		{
			name: "field names match case-insensitively",
			path: "/v1/acl/binding-rule/{{ID}}",
			body: `{"bindtype":"service","BINDNAME":"web","description":"d"}`,
			want: func(s rule) rule {
				s.Description, s.Selector, s.BindName = "d", "", "web"
				return s
			},
		},
		// Namespace: the rule is looked up in the resolved namespace.
		{
			name: "rule in team-a, named by the ns query",
			seed: `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":"team-a"}`,
			path: "/v1/acl/binding-rule/{{ID}}?ns=team-a",
			body: `{"BindType":"service","BindName":"api"}`,
			want: func(s rule) rule { s.BindName = "api"; return s },
		},
		{
			name:    "rule in team-a, named by the header",
			seed:    `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":"team-a"}`,
			path:    "/v1/acl/binding-rule/{{ID}}",
			body:    `{"BindType":"service","BindName":"api"}`,
			headers: []string{"X-Service-Namespace", "team-a"},
			want:    func(s rule) rule { s.BindName = "api"; return s },
		},
		{
			name:    "rule in team-a, named by the body over ns and header",
			seed:    `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":"team-a"}`,
			path:    "/v1/acl/binding-rule/{{ID}}?ns=team-b",
			body:    `{"BindType":"service","BindName":"api","Namespace":"team-a"}`,
			headers: []string{"X-Service-Namespace", "team-c"},
			want:    func(s rule) rule { s.BindName = "api"; return s },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seed := tc.seed
			if seed == "" {
				seed = seedBody
			}
			before := create(t, ts, seed)
			resp := ts.Do(t, "PUT", fill(tc.path, before.ID), fill(tc.body, before.ID), tc.headers...)
			if resp.Status != 200 {
				t.Fatalf("update: %s", resp)
			}
			var got rule
			resp.JSON(t, &got)
			want := tc.want(before)
			want.ModifyIndex = got.ModifyIndex
			expectJSON(t, resp, want.full())
			if got.CreateIndex != before.CreateIndex {
				t.Errorf("CreateIndex changed: %d -> %d", before.CreateIndex, got.CreateIndex)
			}
			if got.ModifyIndex <= before.ModifyIndex {
				t.Errorf("ModifyIndex did not increase: %d -> %d", before.ModifyIndex, got.ModifyIndex)
			}
			expectRead(t, ts, want)
			if st := stateOf(t, ts); st.index != got.ModifyIndex {
				t.Errorf("list index %d after update at %d", st.index, got.ModifyIndex)
			}
		})
	}
}

// TestUpdateRejected: every refused update leaves the rule and the table
// index as they were.
func TestUpdateRejected(t *testing.T) {
	ts := start(t)

	const (
		immutable = "the AuthMethod field of an Binding Rule is immutable"
		mismatch  = "BindingRule ID in URL and payload do not match"
	)
	tests := []struct {
		name    string
		seed    string
		path    string
		body    string
		headers []string
		status  int
		msg     string // {{ID}} filled in
	}{
		{name: "different AuthMethod", path: "/v1/acl/binding-rule/{{ID}}", body: `{"AuthMethod":"other","BindType":"service","BindName":"web"}`, status: 400, msg: immutable},
		{name: "AuthMethod differing only in case", path: "/v1/acl/binding-rule/{{ID}}", body: `{"AuthMethod":"Minikube","BindType":"service","BindName":"web"}`, status: 400, msg: immutable},
		{name: "body ID of another rule", path: "/v1/acl/binding-rule/{{ID}}", body: `{"ID":"` + otherID + `","BindType":"service","BindName":"web"}`, status: 400, msg: mismatch},
		{name: "body ID uppercase of a lowercase path", path: "/v1/acl/binding-rule/{{ID}}", body: `{"ID":"{{UPPER}}","BindType":"service","BindName":"web"}`, status: 400, msg: mismatch},
		{name: "body ID lowercase of an uppercase path", path: "/v1/acl/binding-rule/{{UPPER}}", body: `{"ID":"{{ID}}","BindType":"service","BindName":"web"}`, status: 400, msg: mismatch},
		{name: "unknown ID", path: "/v1/acl/binding-rule/" + otherID, body: `{"AuthMethod":"minikube","BindType":"service","BindName":"web"}`, status: 404, msg: "cannot find binding rule " + otherID},
		{name: "unknown ID without AuthMethod", path: "/v1/acl/binding-rule/" + otherID, body: `{"BindType":"service","BindName":"web"}`, status: 404, msg: "cannot find binding rule " + otherID},
		{name: "rule in team-a is not found in default", seed: `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":"team-a"}`, path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"api"}`, status: 404, msg: "cannot find binding rule {{ID}}"},
		{name: "rule in default is not found in team-a (ns)", path: "/v1/acl/binding-rule/{{ID}}?ns=team-a", body: `{"BindType":"service","BindName":"api"}`, status: 404, msg: "cannot find binding rule {{ID}}"},
		{name: "rule in default is not found in team-a (header)", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"api"}`, headers: []string{"X-Service-Namespace", "team-a"}, status: 404, msg: "cannot find binding rule {{ID}}"},
		{name: "rule in default is not found in team-a (body)", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"api","Namespace":"team-a"}`, status: 404, msg: "cannot find binding rule {{ID}}"},
		{name: "BindType missing", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindName":"web"}`, status: 400, msg: "Invalid Binding Rule: no BindType is set"},
		{name: "BindName missing", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service"}`, status: 400, msg: "Invalid Binding Rule: no BindName is set"},
		{name: "unknown BindType", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"policy","BindName":"web"}`, status: 400, msg: `Invalid Binding Rule: unknown BindType "policy"`},
		{name: "invalid BindName", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"Web"}`, status: 400, msg: `Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": invalid bind name: "Web"`},
		{name: "invalid Selector", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"web","Selector":"(a==b"}`, status: 400, msg: `invalid Binding Rule: Selector is invalid: 1:6 (5): rule "grouping": Unmatched parentheses`},
		{name: "BindVars", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"web","BindVars":{"Name":"x"}}`, status: 400, msg: "invalid Binding Rule: BindVars cannot be set when bind type is not templated-policy."},
		{name: "invalid namespace", path: "/v1/acl/binding-rule/{{ID}}?ns=a.b", body: `{"BindType":"service","BindName":"web"}`, status: 400, msg: `Invalid namespace "a.b": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
		{name: "empty body", path: "/v1/acl/binding-rule/{{ID}}", status: 400, msg: "BindingRule decoding failed: EOF"},
		{name: "unknown field", path: "/v1/acl/binding-rule/{{ID}}", body: `{"BindType":"service","BindName":"web","Foo":1}`, status: 400, msg: `BindingRule decoding failed: json: unknown field "Foo"`},
		{name: "path ID not a UUID", path: "/v1/acl/binding-rule/not-a-uuid", body: `{"BindType":"service","BindName":"web"}`, status: 400, msg: `Invalid binding rule ID "not-a-uuid": a 36-character UUID is required`},
		{name: "path ID one character short", path: "/v1/acl/binding-rule/" + otherID[:35], body: `{"BindType":"service","BindName":"web"}`, status: 400, msg: `Invalid binding rule ID "` + otherID[:35] + `": a 36-character UUID is required`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seed := tc.seed
			if seed == "" {
				seed = seedBody
			}
			r := create(t, ts, seed)
			before := stateOf(t, ts)
			resp := ts.Do(t, "PUT", fill(tc.path, r.ID), fill(tc.body, r.ID), tc.headers...)
			expectError(t, resp, tc.status, fill(tc.msg, r.ID))
			expectUnchanged(t, ts, before)
			expectRead(t, ts, r)
		})
	}
}
