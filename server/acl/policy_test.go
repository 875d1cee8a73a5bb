package acl

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseEmpty(t *testing.T) {
	for _, in := range []string{"", " ", "\n\t \n"} {
		r, err := Parse(in)
		if err != nil || r == nil || !reflect.DeepEqual(r, &Rules{}) {
			t.Fatalf("Parse(%q) = %+v, %v; want empty rules", in, r, err)
		}
	}
}

// TestParseHCLAndJSON parses each document written in HCL and in the
// equivalent JSON: both must give the same rules.
func TestParseHCLAndJSON(t *testing.T) {
	tests := []struct {
		name string
		hcl  string
		json string
		want *Rules
	}{
		{
			name: "acl write and a namespace read",
			hcl:  "acl = \"write\"\nnamespace \"default\" {\n  policy = \"read\"\n}\n",
			json: `{"acl":"write","namespace":{"default":{"policy":"read"}}}`,
			want: &Rules{ACL: PolicyWrite, Namespaces: []*NamespaceRule{{Name: "default", Policy: PolicyRead}}},
		},
		{
			name: "acl read",
			hcl:  `acl = "read"`,
			json: `{"acl":"read"}`,
			want: &Rules{ACL: PolicyRead},
		},
		{
			name: "acl deny",
			hcl:  `acl = "deny"`,
			json: `{"acl":"deny"}`,
			want: &Rules{ACL: PolicyDeny},
		},
		{
			name: "operator levels",
			hcl:  "operator = \"read\"\nacl = \"deny\"",
			json: `{"operator":"read","acl":"deny"}`,
			want: &Rules{ACL: PolicyDeny, Operator: PolicyRead},
		},
		{
			name: "operator write and deny",
			hcl:  `operator = "write"`,
			json: `{"operator":"write"}`,
			want: &Rules{Operator: PolicyWrite},
		},
		{
			name: "capabilities only",
			hcl:  `namespace "team1" { capabilities = ["read-job", "submit-job"] }`,
			json: `{"namespace":{"team1":{"capabilities":["read-job","submit-job"]}}}`,
			want: &Rules{Namespaces: []*NamespaceRule{{Name: "team1", Capabilities: []string{CapReadJob, CapSubmitJob}}}},
		},
		{
			name: "policy and capabilities, globs, several blocks",
			hcl: `
namespace "prod-*" {
  policy       = "deny"
}
namespace "*" {
  policy       = "scale"
  capabilities = ["list-jobs"]
}
namespace "dev" {
  policy = "write"
}`,
			json: `{"namespace":{"prod-*":{"policy":"deny"},"*":{"policy":"scale","capabilities":["list-jobs"]},"dev":{"policy":"write"}}}`,
			want: &Rules{Namespaces: []*NamespaceRule{
				{Name: "prod-*", Policy: PolicyDeny},
				{Name: "*", Policy: PolicyScale, Capabilities: []string{CapListJobs}},
				{Name: "dev", Policy: PolicyWrite},
			}},
		},
		{
			name: "every rule at once, quoted keys",
			hcl:  "\"acl\" = \"read\"\n\"operator\" = \"deny\"\nnamespace \"a\" { policy = \"read\" }\nnamespace \"b\" { capabilities = [\"deny\"] }",
			json: `{"acl":"read","operator":"deny","namespace":[{"a":{"policy":"read"}},{"b":{"capabilities":["deny"]}}]}`,
			want: &Rules{ACL: PolicyRead, Operator: PolicyDeny, Namespaces: []*NamespaceRule{
				{Name: "a", Policy: PolicyRead},
				{Name: "b", Capabilities: []string{CapDeny}},
			}},
		},
	}
	for _, tc := range tests {
		for _, form := range []struct{ kind, src string }{{"hcl", tc.hcl}, {"json", tc.json}} {
			t.Run(tc.name+"/"+form.kind, func(t *testing.T) {
				got, err := Parse(form.src)
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Parse(%q)\n got %s\nwant %s", form.src, dump(got), dump(tc.want))
				}
			})
		}
	}
}

func TestParseEveryCapability(t *testing.T) {
	var quoted []string
	for c := range validCapabilities {
		quoted = append(quoted, `"`+c+`"`)
	}
	r, err := Parse(`namespace "x" { capabilities = [` + strings.Join(quoted, ", ") + `] }`)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Namespaces[0].Capabilities); n != 21 || n != len(validCapabilities) {
		t.Fatalf("%d capabilities parsed, want 21", n)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // exact text, or a prefix when it ends in "…"
	}{
		{"acl list (HCL)", `acl = "list"`, `Invalid acl policy: "list"`},
		{"acl list (JSON)", `{"acl":"list"}`, `Invalid acl policy: "list"`},
		{"acl scale is a namespace level only", `acl = "scale"`, `Invalid acl policy: "scale"`},
		{"acl upper case", `acl = "WRITE"`, `Invalid acl policy: "WRITE"`},
		{"acl number", `acl = 1`, `Invalid acl policy: "1"`},
		{"operator list (HCL)", `operator = "list"`, `Invalid operator policy: "list"`},
		{"operator list (JSON)", `{"operator":"list"}`, `Invalid operator policy: "list"`},
		{"operator scale", `operator = "scale"`, `Invalid operator policy: "scale"`},
		{"namespace policy list (HCL)", `namespace "d" { policy = "list" }`, `Invalid namespace policy: "list"`},
		{"namespace policy list (JSON)", `{"namespace":{"d":{"policy":"list"}}}`, `Invalid namespace policy: "list"`},
		{"namespace capability (HCL)", `namespace "d" { policy = "read" capabilities = ["read-job", "nope"] }`, `Invalid namespace capability: "nope"`},
		{"namespace capability (JSON)", `{"namespace":{"d":{"capabilities":["Read-Job"]}}}`, `Invalid namespace capability: "Read-Job"`},
		{"namespace without policy or capabilities", `namespace "x" {}`, `Invalid namespace rule "x": it needs a policy or capabilities`},
		{"namespace with an empty capability list", `namespace "x" { capabilities = [] }`, `Invalid namespace rule "x": it needs a policy or capabilities`},
		{"namespace without policy (JSON)", `{"namespace":{"x":{}}}`, `Invalid namespace rule "x": it needs a policy or capabilities`},
		{"namespace with an empty name", `namespace "" { policy = "read" }`, `Invalid namespace rule: a namespace block needs a name or glob`},
		{"unknown top-level rule (HCL)", `key "foo" { policy = "read" }`, `Failed to parse ACL rules: unknown rule "key" (known: acl, operator, node, namespace)`},
		{"unknown top-level rule (JSON)", `{"acl":"read","agent":{"x":{"policy":"read"}}}`, `Failed to parse ACL rules: unknown rule "agent" (known: acl, operator, node, namespace)`},
		{"unknown top-level quoted", `"foo" = "bar"`, `Failed to parse ACL rules: unknown rule "foo" (known: acl, operator, node, namespace)`},
		{"syntax error: unterminated string", `acl = "read`, `Failed to parse ACL rules: …`},
		{"syntax error: missing value", `acl "read"`, `Failed to parse ACL rules: …`},
		{"syntax error: unbalanced block", `namespace "d" { policy = "read"`, `Failed to parse ACL rules: …`},
		{"syntax error: a list at the top", `[1]`, `Failed to parse ACL rules: …`},
		{"acl as a list", `acl = ["read"]`, `Failed to parse ACL rules: …`},
		{"acl as a block", `acl { x = 1 }`, `Failed to parse ACL rules: …`},
		{"namespace as a string", `namespace = "x"`, `Failed to parse ACL rules: …`},
		{"capabilities as a string (JSON)", `{"namespace":{"d":{"capabilities":"read-job"}}}`, `Failed to parse ACL rules: …`},
		{"policy as a list", `namespace "d" { policy = ["read"] }`, `Failed to parse ACL rules: …`},
		// hcl v1 panics on this one (found by FuzzParse): it must be an error.
		{"input that panics hcl", `{"namespace":[{}""]}`, `Failed to parse ACL rules: malformed rules`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tc.in, dump(r))
			}
			if r != nil {
				t.Fatalf("Parse(%q) returned rules %s with its error", tc.in, dump(r))
			}
			if prefix, ok := strings.CutSuffix(tc.want, "…"); ok {
				if !strings.HasPrefix(err.Error(), prefix) || len(err.Error()) == len(prefix) {
					t.Fatalf("Parse(%q) error %q, want %q and a reason", tc.in, err, prefix)
				}
				return
			}
			if err.Error() != tc.want {
				t.Fatalf("Parse(%q) error %q, want %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestParseFirstErrorWins(t *testing.T) {
	// acl is checked before operator, operator before the namespaces.
	_, err := Parse("acl = \"list\"\noperator = \"list\"\nnamespace \"d\" { policy = \"list\" }")
	if err == nil || err.Error() != `Invalid acl policy: "list"` {
		t.Fatalf("err %v", err)
	}
	_, err = Parse("operator = \"list\"\nnamespace \"d\" { policy = \"list\" }")
	if err == nil || err.Error() != `Invalid operator policy: "list"` {
		t.Fatalf("err %v", err)
	}
}

func TestExpandNamespacePolicy(t *testing.T) {
	read := []string{CapListJobs, CapParseJob, CapReadJob, CapCSIListVolume, CapCSIReadVolume,
		CapReadJobScaling, CapListScalingPolicies, CapReadScalingPolicy}
	write := append(append([]string{}, read...), CapScaleJob, CapSubmitJob, CapDispatchJob, CapReadLogs, CapReadFS,
		CapAllocExec, CapAllocLifecycle, CapCSIMountVolume, CapCSIWriteVolume, CapSubmitRecommendation)
	tests := map[string][]string{
		PolicyDeny:  {CapDeny},
		PolicyRead:  read,
		PolicyWrite: write,
		PolicyScale: {CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob},
		"":          nil,
		"list":      nil,
	}
	for level, want := range tests {
		if got := expandNamespacePolicy(level); !reflect.DeepEqual(got, want) {
			t.Errorf("expandNamespacePolicy(%q) = %v, want %v", level, got, want)
		}
		for _, c := range want {
			if !validCapabilities[c] {
				t.Errorf("level %q expands to unknown capability %q", level, c)
			}
		}
	}
	// Expanding write twice must not share (and so corrupt) the read slice.
	a := expandNamespacePolicy(PolicyWrite)
	b := expandNamespacePolicy(PolicyRead)
	a[0] = "changed"
	if b[0] != CapListJobs {
		t.Fatal("expansions share storage")
	}
}

func TestNamespaceRuleCapabilities(t *testing.T) {
	n := &NamespaceRule{Name: "x", Policy: PolicyScale, Capabilities: []string{CapSubmitJob, CapAllocExec}}
	got := n.capabilities()
	want := []string{CapAllocExec, CapListScalingPolicies, CapReadJobScaling, CapReadScalingPolicy, CapScaleJob, CapSubmitJob}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("capabilities %v, want %v", got, want)
	}
	// The rule's own list is left alone.
	if !reflect.DeepEqual(n.Capabilities, []string{CapSubmitJob, CapAllocExec}) {
		t.Fatalf("capabilities() changed the rule: %v", n.Capabilities)
	}
}

func dump(r *Rules) string {
	if r == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("{acl=" + r.ACL + " operator=" + r.Operator)
	for _, n := range r.Namespaces {
		if n == nil {
			b.WriteString(" <nil ns>")
			continue
		}
		b.WriteString(" ns(" + n.Name + " policy=" + n.Policy + " caps=[" + strings.Join(n.Capabilities, ",") + "])")
		if n.Capabilities == nil {
			b.WriteString("(nil)")
		}
	}
	b.WriteString("}")
	return b.String()
}

func TestNodeRule(t *testing.T) {
	for _, tc := range []struct {
		rules       string
		read, write bool
	}{
		{`node = "read"`, true, false},
		{`node = "write"`, true, true},
		{`node = "deny"`, false, false},
		{`acl = "write"`, false, false},
	} {
		r, err := Parse(tc.rules)
		if err != nil {
			t.Fatalf("%s: %v", tc.rules, err)
		}
		a := NewAuthorizer([]*Rules{r})
		if a.NodeRead() != tc.read || a.NodeWrite() != tc.write {
			t.Errorf("%s: NodeRead=%v NodeWrite=%v, want %v %v", tc.rules, a.NodeRead(), a.NodeWrite(), tc.read, tc.write)
		}
	}
	if _, err := Parse(`node = "list"`); err == nil || err.Error() != `Invalid node policy: "list"` {
		t.Errorf("bad node level: %v", err)
	}
	// deny wins over write when merged.
	w, _ := Parse(`node = "write"`)
	d, _ := Parse(`node = "deny"`)
	if NewAuthorizer([]*Rules{w, d}).NodeRead() {
		t.Error("deny must win over write")
	}
}
