package nodes_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/nodes"
)

// TestReadNodesChecksItsCaller: the rule is node:read, decided without HTTP;
// a zero Caller fails closed.
func TestReadNodesChecksItsCaller(t *testing.T) {
	rules := func(hcl string) acl.Caller {
		r, err := acl.Parse(hcl)
		if err != nil {
			t.Fatalf("rules %q: %v", hcl, err)
		}
		return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
	}
	cases := []struct {
		name    string
		caller  acl.Caller
		allowed bool
	}{
		{"node read", rules(`node = "read"`), true},
		{"node write implies read", rules(`node = "write"`), true},
		{"node deny", rules(`node = "deny"`), false},
		{"operator write is not node read", rules(`operator = "write"`), false},
		{"read-job is not node read", rules(`namespace "*" { capabilities = ["read-job"] }`), false},
		{"zero Caller", acl.Caller{}, false},
		{"management", acl.Internal(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := nodes.ReadNodes(tc.caller)
			if tc.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.allowed && !acl.IsPermissionDenied(err) {
				t.Fatalf("want the Caller's refusal, got %v", err)
			}
		})
	}
}
