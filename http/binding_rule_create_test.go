package http_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestCreate walks the Binding rule field table for PUT /v1/acl/binding-rule:
// the defaults, the output-only fields, and what the service assigns.
func TestCreate(t *testing.T) {
	ts := start(t)

	tests := []struct {
		name    string
		path    string
		body    string
		headers []string
		// want is the stored rule; ID and indexes come from the response.
		want rule
	}{
		{
			name: "defaults: Description and Selector empty, Namespace default",
			body: minimalBody,
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "every field",
			body: `{"Description":"k8s services","AuthMethod":"minikube","Selector":"serviceaccount.namespace==default","BindType":"service","BindName":"k8s-${serviceaccount.name}","Namespace":"team-a"}`,
			want: rule{Description: "k8s services", AuthMethod: "minikube", Selector: "serviceaccount.namespace==default", BindType: "service", BindName: "k8s-${serviceaccount.name}", Namespace: "team-a"},
		},
		{
			name: "PUT /v1/acl/binding-rule/ (trailing slash, empty id) also creates",
			path: rulePath + "/",
			body: minimalBody,
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "field names match case-insensitively",
			body: `{"description":"d","authmethod":"minikube","SELECTOR":"a==b","bindType":"node","BINDNAME":"n1"}`,
			want: rule{Description: "d", AuthMethod: "minikube", Selector: "a==b", BindType: "node", BindName: "n1", Namespace: "default"},
		},
		{
			name: "client CreateIndex and ModifyIndex are accepted and ignored",
			body: `{"AuthMethod":"minikube","BindType":"service","BindName":"web","CreateIndex":999999,"ModifyIndex":888888}`,
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "an empty body ID is no ID",
			body: `{"ID":"","AuthMethod":"minikube","BindType":"service","BindName":"web"}`,
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "BindVars null is no BindVars",
			body: `{"AuthMethod":"minikube","BindType":"service","BindName":"web","BindVars":null}`,
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "whitespace after the object",
			body: minimalBody + "\n \t\n",
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "the auth method need not exist",
			body: `{"AuthMethod":"not-created-yet","BindType":"service","BindName":"web"}`,
			want: rule{AuthMethod: "not-created-yet", BindType: "service", BindName: "web", Namespace: "default"},
		},
		// BindType: one of service, node, role.
		{
			name: "BindType node",
			body: `{"AuthMethod":"minikube","BindType":"node","BindName":"node-1"}`,
			want: rule{AuthMethod: "minikube", BindType: "node", BindName: "node-1", Namespace: "default"},
		},
		{
			name: "BindType role: uppercase allowed",
			body: `{"AuthMethod":"minikube","BindType":"role","BindName":"Web_Admins-1"}`,
			want: rule{AuthMethod: "minikube", BindType: "role", BindName: "Web_Admins-1", Namespace: "default"},
		},
		// BindName: plain or a prefix-${field.path} template.
		{
			name: "BindName template",
			body: `{"AuthMethod":"jwt","BindType":"service","BindName":"prefix-${value.name}"}`,
			want: rule{AuthMethod: "jwt", BindType: "service", BindName: "prefix-${value.name}", Namespace: "default"},
		},
		{
			name: "BindName with two interpolations",
			body: `{"AuthMethod":"jwt","BindType":"node","BindName":"${value.team}_${value.name}"}`,
			want: rule{AuthMethod: "jwt", BindType: "node", BindName: "${value.team}_${value.name}", Namespace: "default"},
		},
		{
			name: "role BindName template with uppercase literal",
			body: `{"AuthMethod":"jwt","BindType":"role","BindName":"Admins-${value.team}"}`,
			want: rule{AuthMethod: "jwt", BindType: "role", BindName: "Admins-${value.team}", Namespace: "default"},
		},
		{
			name: "service BindName of 256 characters",
			body: `{"AuthMethod":"minikube","BindType":"service","BindName":"` + strings.Repeat("s", 256) + `"}`,
			want: rule{AuthMethod: "minikube", BindType: "service", BindName: strings.Repeat("s", 256), Namespace: "default"},
		},
		{
			name: "role BindName of 256 characters",
			body: `{"AuthMethod":"minikube","BindType":"role","BindName":"` + strings.Repeat("R", 256) + `"}`,
			want: rule{AuthMethod: "minikube", BindType: "role", BindName: strings.Repeat("R", 256), Namespace: "default"},
		},
		// Selector: go-bexpr's full grammar (design §3).
		{
			name: "Selector equality, inequality and and",
			body: `{"AuthMethod":"jwt","Selector":"value.team == dev and value.env != prod","BindType":"service","BindName":"web"}`,
			want: rule{AuthMethod: "jwt", Selector: "value.team == dev and value.env != prod", BindType: "service", BindName: "web", Namespace: "default"},
		},
		{
			name: "Selector or, not, parentheses, in, contains, matches, is empty",
			body: `{"AuthMethod":"jwt","Selector":"(value.a == \"x\" or not (list.groups contains admins)) and \"b\" in list.c and value.d matches \"^d.*\" and value.e is empty","BindType":"service","BindName":"web"}`,
			want: rule{AuthMethod: "jwt", Selector: `(value.a == "x" or not (list.groups contains admins)) and "b" in list.c and value.d matches "^d.*" and value.e is empty`, BindType: "service", BindName: "web", Namespace: "default"},
		},
	}
	var last uint64
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = rulePath
			}
			got := createAt(t, ts, path, tc.body, tc.headers...)
			if got.CreateIndex <= last {
				t.Errorf("CreateIndex %d not above the previous write's %d", got.CreateIndex, last)
			}
			last = got.CreateIndex
			want := tc.want
			want.ID, want.CreateIndex, want.ModifyIndex = got.ID, got.CreateIndex, got.ModifyIndex
			if got != want {
				t.Errorf("created:\n got %+v\nwant %+v", got, want)
			}
			// Writes answer after apply: the rule is readable at once, and the
			// table's index is the create's.
			expectRead(t, ts, want)
			if st := stateOf(t, ts); st.index != got.CreateIndex {
				t.Errorf("list index %d after create at %d", st.index, got.CreateIndex)
			}
		})
	}
}

// TestCreateNamespace walks namespace resolution (spec "Namespace
// resolution"; design §3): body Namespace, then the ns query parameter, then
// the X-Service-Namespace header, then default.
func TestCreateNamespace(t *testing.T) {
	ts := start(t)
	long := strings.Repeat("n", 64)

	tests := []struct {
		name   string
		bodyNS string // "" leaves Namespace out of the body
		query  string
		header string
		want   string
	}{
		{name: "nothing names one: default", want: "default"},
		{name: "body Namespace", bodyNS: "team-a", want: "team-a"},
		{name: "ns query parameter", query: "?ns=team-b", want: "team-b"},
		{name: "X-Service-Namespace header", header: "team-c", want: "team-c"},
		{name: "body beats ns and header", bodyNS: "team-a", query: "?ns=team-b", header: "team-c", want: "team-a"},
		{name: "ns beats header", query: "?ns=team-b", header: "team-c", want: "team-b"},
		{name: "empty ns falls through to the header", query: "?ns=", header: "team-c", want: "team-c"},
		{name: "explicit default", bodyNS: "default", query: "?ns=team-b", want: "default"},
		{name: "letters, digits, - and _", bodyNS: "Team_9-x", want: "Team_9-x"},
		{name: "64 characters", query: "?ns=" + long, want: long},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := minimalBody
			if tc.bodyNS != "" {
				body = `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":` + js(tc.bodyNS) + `}`
			}
			var headers []string
			if tc.header != "" {
				headers = []string{"X-Service-Namespace", tc.header}
			}
			got := createAt(t, ts, rulePath+tc.query, body, headers...)
			if got.Namespace != tc.want {
				t.Errorf("Namespace: got %q, want %q", got.Namespace, tc.want)
			}
			expectRead(t, ts, got)
			if tc.want != "default" {
				// A rule in another namespace is not found in default.
				expectError(t, ts.Do(t, "GET", ruleURL(got.ID), ""), 404, "Requested binding rule does not exist: ACL not found")
			}
		})
	}
}

// TestCreateRejected walks every way a create is refused: status, exact
// text, and that nothing was written.
func TestCreateRejected(t *testing.T) {
	ts := start(t)
	create(t, ts, minimalBody) // the state is not empty

	const (
		tmplErr = `Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": error interpreting template: `
		nameErr = `Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType %q: invalid bind name: %q`
		selErr  = `invalid Binding Rule: Selector is invalid: `
		nsErr   = `Invalid namespace %q: a namespace name is 1 to 64 letters, digits, '-' or '_'`
	)
	body := func(fields string) string { return "{" + fields + "}" }
	base := `"AuthMethod":"minikube","BindType":"service","BindName":"web"`

	tests := []struct {
		name    string
		path    string
		body    string
		headers []string
		status  int
		msg     string
	}{
		// ID: assigned by the service.
		{name: "body ID", body: body(`"ID":"` + otherID + `",` + base), status: 400, msg: "BindingRule ID in URL and payload do not match"},
		{name: "body ID on the trailing-slash create", path: rulePath + "/", body: body(`"ID":"x",` + base), status: 400, msg: "BindingRule ID in URL and payload do not match"},
		{name: "body ID is checked before the other fields", body: `{"ID":"x"}`, status: 400, msg: "BindingRule ID in URL and payload do not match"},
		// Required fields.
		{name: "AuthMethod missing", body: `{"BindType":"service","BindName":"web"}`, status: 400, msg: "Invalid Binding Rule: no AuthMethod is set"},
		{name: "AuthMethod empty", body: `{"AuthMethod":"","BindType":"service","BindName":"web"}`, status: 400, msg: "Invalid Binding Rule: no AuthMethod is set"},
		{name: "BindType missing", body: `{"AuthMethod":"minikube","BindName":"web"}`, status: 400, msg: "Invalid Binding Rule: no BindType is set"},
		{name: "BindName missing", body: `{"AuthMethod":"minikube","BindType":"service"}`, status: 400, msg: "Invalid Binding Rule: no BindName is set"},
		{name: "empty object", body: `{}`, status: 400, msg: "Invalid Binding Rule: no AuthMethod is set"},
		{name: "null", body: `null`, status: 400, msg: "Invalid Binding Rule: no AuthMethod is set"},
		// BindType.
		{name: "BindType policy", body: `{"AuthMethod":"minikube","BindType":"policy","BindName":"web"}`, status: 400, msg: `Invalid Binding Rule: unknown BindType "policy"`},
		{name: "BindType templated-policy", body: `{"AuthMethod":"minikube","BindType":"templated-policy","BindName":"builtin/service"}`, status: 400, msg: `Invalid Binding Rule: unknown BindType "templated-policy"`},
		{name: "BindType is case-sensitive", body: `{"AuthMethod":"minikube","BindType":"Service","BindName":"web"}`, status: 400, msg: `Invalid Binding Rule: unknown BindType "Service"`},
		// BindName.
		{name: "service BindName Web", body: `{"AuthMethod":"minikube","BindType":"service","BindName":"Web"}`, status: 400, msg: fmt.Sprintf(nameErr, "service", "Web")},
		{name: "node BindName Web", body: `{"AuthMethod":"minikube","BindType":"node","BindName":"Web"}`, status: 400, msg: fmt.Sprintf(nameErr, "node", "Web")},
		{name: "service BindName -abc:", body: `{"AuthMethod":"minikube","BindType":"service","BindName":"-abc:"}`, status: 400, msg: fmt.Sprintf(nameErr, "service", "-abc:")},
		{name: "service BindName ends in -", body: `{"AuthMethod":"minikube","BindType":"service","BindName":"web-"}`, status: 400, msg: fmt.Sprintf(nameErr, "service", "web-")},
		{name: "service BindName of 257 characters", body: `{"AuthMethod":"minikube","BindType":"service","BindName":"` + strings.Repeat("s", 257) + `"}`, status: 400, msg: fmt.Sprintf(nameErr, "service", strings.Repeat("s", 257))},
		{name: "role BindName of 257 characters", body: `{"AuthMethod":"minikube","BindType":"role","BindName":"` + strings.Repeat("R", 257) + `"}`, status: 400, msg: fmt.Sprintf(nameErr, "role", strings.Repeat("R", 257))},
		{name: "role BindName with a dot", body: `{"AuthMethod":"minikube","BindType":"role","BindName":"a.b"}`, status: 400, msg: fmt.Sprintf(nameErr, "role", "a.b")},
		{name: "template renders uppercase", body: `{"AuthMethod":"jwt","BindType":"service","BindName":"Web-${value.name}"}`, status: 400, msg: fmt.Sprintf(nameErr, "service", "Web-fake")},
		{name: "{{ }} is not a template", body: `{"AuthMethod":"k8s","BindType":"service","BindName":"k8s-{{ serviceaccount.name }}"}`, status: 400, msg: fmt.Sprintf(nameErr, "service", "k8s-{{ serviceaccount.name }}")},
		{name: "template ${}", body: `{"AuthMethod":"k8s","BindType":"service","BindName":"${}"}`, status: 400, msg: tmplErr + `parse error at 1:3: expected expression but found "}"`},
		{name: "template ${", body: `{"AuthMethod":"k8s","BindType":"service","BindName":"${"}`, status: 400, msg: tmplErr + `parse error at 1:3: expected expression but found end of string`},
		{name: "template not closed", body: `{"AuthMethod":"k8s","BindType":"service","BindName":"method-${serviceaccount.name"}`, status: 400, msg: tmplErr + `parse error at 1:29: expected "}" but found end of string`},
		{name: "template calls a function", body: `{"AuthMethod":"k8s","BindType":"service","BindName":"${upper(serviceaccount.name)}"}`, status: 400, msg: tmplErr + `1:3: unknown function called: upper`},
		// Selector.
		{name: "Selector without operator", body: body(base + `,"Selector":"serviceaccount.name"`), status: 400, msg: selErr + `1:20 (19): no match found, expected: "!=", ".", "==", "[", [ \t\r\n] or [a-zA-Z0-9_/]`},
		{name: "Selector with unterminated string", body: body(base + `,"Selector":"serviceaccount.name == \"abc"`), status: 400, msg: selErr + `1:28 (27): rule "string": Unterminated string literal`},
		{name: "Selector with unmatched parenthesis", body: body(base + `,"Selector":"(a==b"`), status: 400, msg: selErr + `1:6 (5): rule "grouping": Unmatched parentheses`},
		{name: "Selector with a bad matches regex", body: body(base + `,"Selector":"value.name matches \"[\""`), status: 400, msg: selErr + "Failed to compile regular expression \"[\": error parsing regexp: missing closing ]: `[`"},
		{name: "Selector with a bad not matches regex inside not and or", body: body(base + `,"Selector":"a == b or not (value.name not matches \"(\")"`), status: 400, msg: selErr + "Failed to compile regular expression \"(\": error parsing regexp: missing closing ): `(`"},
		{name: "Selector checked before BindType", body: `{"AuthMethod":"minikube","Selector":"(a==b"}`, status: 400, msg: selErr + `1:6 (5): rule "grouping": Unmatched parentheses`},
		// BindVars (templated-policy only, which we do not offer).
		{name: "BindVars", body: body(base + `,"BindVars":{"Name":"x"}`), status: 400, msg: "invalid Binding Rule: BindVars cannot be set when bind type is not templated-policy."},
		{name: "empty BindVars", body: body(base + `,"BindVars":{}`), status: 400, msg: "invalid Binding Rule: BindVars cannot be set when bind type is not templated-policy."},
		// Namespace names: ^[a-zA-Z0-9-_]{1,64}$.
		{name: "body Namespace with a space", body: body(base + `,"Namespace":"team a"`), status: 400, msg: fmt.Sprintf(nsErr, "team a")},
		{name: "body Namespace *", body: body(base + `,"Namespace":"*"`), status: 400, msg: fmt.Sprintf(nsErr, "*")},
		{name: "body Namespace of 65 characters", body: body(base + `,"Namespace":"` + strings.Repeat("n", 65) + `"`), status: 400, msg: fmt.Sprintf(nsErr, strings.Repeat("n", 65))},
		{name: "ns query with a dot", path: rulePath + "?ns=team.a", body: body(base), status: 400, msg: fmt.Sprintf(nsErr, "team.a")},
		{name: "ns=* on create", path: rulePath + "?ns=*", body: body(base), status: 400, msg: fmt.Sprintf(nsErr, "*")},
		{name: "header with a slash", body: body(base), headers: []string{"X-Service-Namespace", "a/b"}, status: 400, msg: fmt.Sprintf(nsErr, "a/b")},
		{name: "body Namespace wins even over a bad ns", path: rulePath + "?ns=bad!", body: body(base + `,"Namespace":"bad?"`), status: 400, msg: fmt.Sprintf(nsErr, "bad?")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, ts)
			path := tc.path
			if path == "" {
				path = rulePath
			}
			expectError(t, ts.Do(t, "PUT", path, tc.body, tc.headers...), tc.status, tc.msg)
			expectUnchanged(t, ts, before)
		})
	}
}
