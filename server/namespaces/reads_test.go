package namespaces_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/namespaces"
)

// TestReadNamespaceChecksItsCaller: a namespace is seen with any
// capability in it, decided without HTTP; a zero Caller fails closed.
func TestReadNamespaceChecksItsCaller(t *testing.T) {
	rules := func(hcl string) acl.Caller {
		r, err := acl.Parse(hcl)
		if err != nil {
			t.Fatalf("rules %q: %v", hcl, err)
		}
		return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
	}
	cases := []struct {
		name     string
		caller   acl.Caller
		web, api bool
	}{
		{"read-job in web", rules(`namespace "web" { capabilities = ["read-job"] }`), true, false},
		{"list-jobs in web", rules(`namespace "web" { capabilities = ["list-jobs"] }`), true, false},
		{"read policy in every namespace", rules(`namespace "*" { policy = "read" }`), true, true},
		{"deny in web", rules(`namespace "web" { policy = "deny" }`), false, false},
		{"node read only", rules(`node = "read"`), false, false},
		{"zero Caller", acl.Caller{}, false, false},
		{"management", acl.Internal(), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for name, want := range map[string]bool{"web": tc.web, "api": tc.api} {
				err := namespaces.ReadNamespace(tc.caller, name)
				if want && err != nil {
					t.Fatalf("%s refused: %v", name, err)
				}
				if !want && !acl.IsPermissionDenied(err) {
					t.Fatalf("%s: want the Caller's refusal, got %v", name, err)
				}
			}
		})
	}
}
