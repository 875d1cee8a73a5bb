package search_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/search"
)

// TestMaySearchPerContext: each context's rule, as Nomad's
// sufficientSearchPerms, decided on the Caller alone; "*" defers the
// namespaced contexts to the per-object filter; a zero Caller fails closed.
func TestMaySearchPerContext(t *testing.T) {
	rules := func(hcl string) acl.Caller {
		r, err := acl.Parse(hcl)
		if err != nil {
			t.Fatalf("rules %q: %v", hcl, err)
		}
		return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
	}
	reader := rules(`namespace "default" { policy = "read" }`)
	lister := rules(`namespace "default" { capabilities = ["list-jobs"] }`)
	nodeReader := rules(`node = "read"`)
	cases := []struct {
		name    string
		caller  acl.Caller
		ns      string
		allowed []string // of search.Contexts
	}{
		{"namespace reader", reader, "default", []string{search.Allocs, search.Jobs, search.Evals, search.Deployments, search.Volumes, search.ScalingPolicies, search.Variables, search.Namespaces}},
		{"namespace reader elsewhere", reader, "prod", nil},
		{"every namespace", reader, "*", []string{search.Allocs, search.Jobs, search.Evals, search.Deployments, search.Volumes, search.ScalingPolicies, search.Variables, search.Namespaces}},
		{"list-jobs only", lister, "default", []string{search.Volumes, search.Namespaces}},
		{"node reader", nodeReader, "default", []string{search.Nodes, search.NodePools}},
		{"management", acl.Internal(), "default", search.Contexts},
		{"zero Caller", acl.Caller{}, "default", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]bool{}
			for _, c := range tc.allowed {
				want[c] = true
			}
			for _, c := range search.Contexts {
				if got := search.MaySearch(tc.caller, tc.ns, c); got != want[c] {
					t.Errorf("%s in %q: %v, want %v", c, tc.ns, got, want[c])
				}
			}
			if search.MaySearch(tc.caller, tc.ns, "bogus") {
				t.Error("an unknown context is searchable")
			}
		})
	}
}
