package deployments_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/state"
)

// TestDeploymentReadsCheckTheirCaller: deployments are read with read-job
// in their namespace, decided by the deployments package without HTTP.
func TestDeploymentReadsCheckTheirCaller(t *testing.T) {
	rules := func(hcl string) acl.Caller {
		r, err := acl.Parse(hcl)
		if err != nil {
			t.Fatalf("rules %q: %v", hcl, err)
		}
		return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
	}
	cases := []struct {
		name   string
		caller acl.Caller
		web    bool // may read the deployments of "web"
		api    bool // ... and of "api", where the rules grant nothing
	}{
		{"read-job", rules(`namespace "web" { capabilities = ["read-job"] }`), true, false},
		{"list-jobs only", rules(`namespace "web" { capabilities = ["list-jobs"] }`), false, false},
		{"submit-job only", rules(`namespace "web" { capabilities = ["submit-job"] }`), false, false},
		{"zero Caller", acl.Caller{}, false, false},
		{"management", acl.Internal(), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := deployments.ReadDeployment(tc.caller, "web")
			if tc.web != (err == nil) || (err != nil && !acl.IsPermissionDenied(err)) {
				t.Fatalf("ReadDeployment(web) = %v, want allowed %v", err, tc.web)
			}
			if _, err := deployments.ReadDeploymentsIn(tc.caller, "web"); tc.web != (err == nil) {
				t.Fatalf("ReadDeploymentsIn(web) = %v, want allowed %v", err, tc.web)
			}
			visible, err := deployments.ReadDeploymentsIn(tc.caller, state.AllNamespaces)
			if err != nil {
				t.Fatalf("a list over every namespace is filtered, not refused: %v", err)
			}
			if visible("web") != tc.web {
				t.Fatalf("web visible = %v, want %v", visible("web"), tc.web)
			}
			if err := deployments.ReadDeployment(tc.caller, "api"); tc.api != (err == nil) {
				t.Fatalf("ReadDeployment(api) = %v, want allowed %v", err, tc.api)
			}
		})
	}
}
