package acl

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, docs ...string) []*Rules {
	t.Helper()
	var out []*Rules
	for _, d := range docs {
		r, err := Parse(d)
		if err != nil {
			t.Fatalf("Parse(%q): %v", d, err)
		}
		out = append(out, r)
	}
	return out
}

// perms is what an authorizer says about acl and operator.
type perms struct{ aclRead, aclWrite, opRead, opWrite bool }

func permsOf(a *Authorizer) perms {
	return perms{a.ACLRead(), a.ACLWrite(), a.OperatorRead(), a.OperatorWrite()}
}

func TestAuthorizerACLAndOperatorLevels(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		want perms
	}{
		{"no policies", nil, perms{}},
		{"empty rules", []string{""}, perms{}},
		{"acl read", []string{`acl = "read"`}, perms{aclRead: true}},
		{"acl write implies read", []string{`acl = "write"`}, perms{aclRead: true, aclWrite: true}},
		{"acl deny", []string{`acl = "deny"`}, perms{}},
		{"operator read", []string{`operator = "read"`}, perms{opRead: true}},
		{"operator write implies read", []string{`operator = "write"`}, perms{opRead: true, opWrite: true}},
		{"operator deny", []string{`operator = "deny"`}, perms{}},
		{"read + write = write", []string{`acl = "read"`, `acl = "write"`}, perms{aclRead: true, aclWrite: true}},
		{"write + read = write", []string{`acl = "write"`, `acl = "read"`}, perms{aclRead: true, aclWrite: true}},
		{"deny wins over write", []string{`acl = "write"`, `acl = "deny"`}, perms{}},
		{"deny wins whatever the order", []string{`acl = "deny"`, `acl = "write"`, `acl = "read"`}, perms{}},
		{"operator deny wins", []string{`operator = "write"`, `operator = "deny"`, `operator = "read"`}, perms{}},
		{"unset does not lower", []string{`acl = "write"`, `operator = "read"`}, perms{aclRead: true, aclWrite: true, opRead: true}},
		{"acl and operator merge independently", []string{`acl = "deny"` + "\n" + `operator = "write"`, `acl = "write"`},
			perms{opRead: true, opWrite: true}},
		{"namespace rules grant no acl or operator", []string{`namespace "*" { policy = "write" }`}, perms{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAuthorizer(mustParse(t, tc.docs...))
			if got := permsOf(a); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if a.IsManagement() {
				t.Fatal("a rule-built authorizer is management")
			}
		})
	}
}

func TestMergeLevel(t *testing.T) {
	levels := []string{"", PolicyRead, PolicyWrite, PolicyDeny}
	for i, a := range levels {
		for j, b := range levels {
			want := levels[max(i, j)]
			if got := mergeLevel(a, b); got != want {
				t.Errorf("mergeLevel(%q, %q) = %q, want %q", a, b, got, want)
			}
		}
	}
}

func TestManageAllAndDenyAll(t *testing.T) {
	m := ManageAll()
	if !m.IsManagement() || permsOf(m) != (perms{true, true, true, true}) {
		t.Fatalf("ManageAll: management %v perms %+v", m.IsManagement(), permsOf(m))
	}
	for _, ns := range []string{"default", "", "anything", "*"} {
		if !m.AllowsNamespace(ns) {
			t.Errorf("ManageAll does not allow namespace %q", ns)
		}
		for c := range validCapabilities {
			if !m.NamespaceCapability(ns, c) {
				t.Errorf("ManageAll denies %s in %q", c, ns)
			}
		}
	}

	d := DenyAll()
	if d.IsManagement() || permsOf(d) != (perms{}) {
		t.Fatalf("DenyAll: management %v perms %+v", d.IsManagement(), permsOf(d))
	}
	for _, ns := range []string{"default", "", "*"} {
		if d.AllowsNamespace(ns) {
			t.Errorf("DenyAll allows namespace %q", ns)
		}
		for c := range validCapabilities {
			if d.NamespaceCapability(ns, c) {
				t.Errorf("DenyAll allows %s in %q", c, ns)
			}
		}
	}
}

func TestNamespaceCapabilitiesPerNomad(t *testing.T) {
	readCaps := []string{CapListJobs, CapParseJob, CapReadJob, CapCSIListVolume, CapCSIReadVolume,
		CapReadJobScaling, CapListScalingPolicies, CapReadScalingPolicy}
	writeOnly := []string{CapScaleJob, CapSubmitJob, CapDispatchJob, CapReadLogs, CapReadFS,
		CapAllocExec, CapAllocLifecycle, CapCSIMountVolume, CapCSIWriteVolume, CapSubmitRecommendation}
	never := []string{CapAllocNodeExec, CapCSIRegisterPlugin} // not in any level; capabilities only
	scaleCaps := []string{CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob}

	type want map[string]bool
	set := func(lists ...[]string) want {
		w := want{}
		for _, l := range lists {
			for _, c := range l {
				w[c] = true
			}
		}
		return w
	}
	tests := []struct {
		name string
		docs []string
		want want // capabilities granted in "default"; every other one is denied
	}{
		{"read", []string{`namespace "default" { policy = "read" }`}, set(readCaps)},
		{"write is read plus submit and the rest", []string{`namespace "default" { policy = "write" }`}, set(readCaps, writeOnly)},
		{"scale", []string{`namespace "default" { policy = "scale" }`}, set(scaleCaps)},
		{"deny", []string{`namespace "default" { policy = "deny" }`}, set()},
		{"capabilities only", []string{`namespace "default" { capabilities = ["submit-job", "alloc-node-exec"] }`},
			set([]string{CapSubmitJob, CapAllocNodeExec})},
		{"policy plus capabilities", []string{`namespace "default" { policy = "read" capabilities = ["csi-register-plugin"] }`},
			set(readCaps, []string{CapCSIRegisterPlugin})},
		{"policies add up", []string{`namespace "default" { policy = "read" }`, `namespace "default" { capabilities = ["submit-job"] }`},
			set(readCaps, []string{CapSubmitJob})},
		{"blocks in one document add up", []string{`namespace "default" { policy = "read" }` + "\n" + `namespace "default" { policy = "scale" }`},
			set(readCaps, scaleCaps)},
		{"deny capability denies everything", []string{`namespace "default" { policy = "write" capabilities = ["deny"] }`}, set()},
		{"deny policy in another policy wins", []string{`namespace "default" { policy = "write" }`, `namespace "default" { policy = "deny" }`}, set()},
		{"deny first, write later", []string{`namespace "default" { policy = "deny" }`, `namespace "default" { policy = "write" }`}, set()},
		{"other namespace only", []string{`namespace "other" { policy = "write" }`}, set()},
	}
	all := append(append(append(append([]string{}, readCaps...), writeOnly...), never...), CapDeny)
	if len(all) != len(validCapabilities) {
		t.Fatalf("test lists %d capabilities, the package %d", len(all), len(validCapabilities))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAuthorizer(mustParse(t, tc.docs...))
			for _, c := range all {
				if got := a.NamespaceCapability("default", c); got != tc.want[c] {
					t.Errorf("%s in default: %v, want %v", c, got, tc.want[c])
				}
			}
			if got, want := a.AllowsNamespace("default"), len(tc.want) > 0; got != want {
				t.Errorf("AllowsNamespace(default) = %v, want %v", got, want)
			}
		})
	}
}

func TestNamespaceExactBeatsGlob(t *testing.T) {
	a := NewAuthorizer(mustParse(t,
		`namespace "prod-*" { policy = "deny" }`,
		`namespace "prod-api" { policy = "read" }`,
		`namespace "*" { policy = "write" }`,
	))
	if !a.NamespaceCapability("prod-api", CapReadJob) || a.NamespaceCapability("prod-api", CapSubmitJob) {
		t.Fatal("exact rule prod-api (read) did not decide for prod-api")
	}
	if a.NamespaceCapability("prod-web", CapReadJob) || a.AllowsNamespace("prod-web") {
		t.Fatal("prod-web: the prod-* deny glob should apply")
	}
	if !a.NamespaceCapability("dev", CapSubmitJob) {
		t.Fatal("dev: the * write glob should apply")
	}
	// An exact rule that is a deny beats an allowing glob.
	b := NewAuthorizer(mustParse(t, `namespace "*" { policy = "write" }`, `namespace "secret" { policy = "deny" }`))
	if b.NamespaceCapability("secret", CapReadJob) || b.AllowsNamespace("secret") {
		t.Fatal("exact deny lost to a glob")
	}
	if !b.NamespaceCapability("secrets", CapReadJob) {
		t.Fatal("secrets should fall to the * glob")
	}
}

func TestNamespaceClosestGlobWins(t *testing.T) {
	tests := []struct {
		name  string
		globs map[string]string // glob -> policy
		ns    string
		want  string // which policy decides: "read", "write", "deny" or "" (none)
	}{
		{"prod-* beats *", map[string]string{"*": "write", "prod-*": "read"}, "prod-api", "read"},
		{"* when nothing closer", map[string]string{"*": "write", "prod-*": "read"}, "dev", "write"},
		{"longer literal wins", map[string]string{"prod-*": "write", "prod-api-*": "read"}, "prod-api-1", "read"},
		{"suffix glob", map[string]string{"*": "read", "*-prod": "deny"}, "api-prod", "deny"},
		{"glob in the middle", map[string]string{"*": "deny", "a*z": "read"}, "abcz", "read"},
		{"two stars count as wildcards", map[string]string{"*": "deny", "p*d*": "read"}, "prod", "read"},
		{"no glob matches", map[string]string{"prod-*": "read"}, "dev", ""},
		{"tie broken by glob order, deterministically", map[string]string{"a*": "read", "*b": "write"}, "ab", "write"}, // "*b" < "a*"
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var docs []string
			for g, p := range tc.globs {
				docs = append(docs, `namespace "`+g+`" { policy = "`+p+`" }`)
			}
			for i := 0; i < 5; i++ { // map order must not matter
				a := NewAuthorizer(mustParse(t, docs...))
				got := ""
				switch {
				case a.NamespaceCapability(tc.ns, CapSubmitJob):
					got = "write"
				case a.NamespaceCapability(tc.ns, CapReadJob):
					got = "read"
				case a.namespaceCaps(tc.ns) != nil:
					got = "deny"
				}
				if got != tc.want {
					t.Fatalf("namespace %q decided by %q, want %q", tc.ns, got, tc.want)
				}
			}
		})
	}
}

func TestAllowsNamespace(t *testing.T) {
	a := NewAuthorizer(mustParse(t,
		`namespace "team-*" { capabilities = ["list-jobs"] }`,
		`namespace "team-secret" { policy = "deny" }`,
		`namespace "scaler" { policy = "scale" }`,
	))
	for ns, want := range map[string]bool{
		"team-a":      true,
		"team-secret": false,
		"scaler":      true,
		"default":     false,
		"":            false,
		"team-":       true,
	} {
		if got := a.AllowsNamespace(ns); got != want {
			t.Errorf("AllowsNamespace(%q) = %v, want %v", ns, got, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"**", "", true},
		{"**", "x", true},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*a", "a", true},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*a", "a", false}, // prefix and suffix may not overlap
		{"a*a", "aa", true},
		{"a*a", "aba", true},
		{"ab*ba", "aba", false},
		{"ab*ba", "abba", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcbc", true},
		{"a*b*c", "abcb", false},
		{"*b*", "abc", true},
		{"*b*", "ac", false},
		{"a**b", "ab", true},
		{"prod-*", "prod-", true},
		{"prod-*", "prod", false},
		{"prod-*", "PROD-api", false}, // case-sensitive
		{"*-*-*", "a-b-c", true},
		{"*-*-*", "a-b", false},
		// No star at all: only the same string matches.
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"exact", "", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tc := range tests {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestGlobMatchAgainstReference(t *testing.T) {
	// A straightforward backtracking matcher to compare with on many inputs.
	var ref func(p, s string) bool
	ref = func(p, s string) bool {
		if p == "" {
			return s == ""
		}
		if p[0] == '*' {
			for i := 0; i <= len(s); i++ {
				if ref(p[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		return s != "" && s[0] == p[0] && ref(p[1:], s[1:])
	}
	alphabet := []string{"", "a", "b", "*"}
	var words func(n int) []string
	words = func(n int) []string {
		if n == 0 {
			return []string{""}
		}
		var out []string
		for _, w := range words(n - 1) {
			for _, c := range alphabet {
				out = append(out, w+c)
			}
		}
		return out
	}
	seen := map[[2]string]bool{}
	for _, p := range words(4) {
		for _, s := range words(4) {
			if strings.Contains(s, "*") || seen[[2]string{p, s}] {
				continue
			}
			seen[[2]string{p, s}] = true
			if got, want := globMatch(p, s), ref(p, s); got != want {
				t.Errorf("globMatch(%q, %q) = %v, reference says %v", p, s, got, want)
			}
		}
	}
}
