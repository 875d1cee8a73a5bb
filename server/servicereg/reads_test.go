package servicereg_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/servicereg"
	"github.com/ctlplane/ctlplane/state"
)

// TestServiceReadsCheckTheirCaller: registrations are read with read-job
// in their namespace, decided without HTTP; a list over every namespace
// is filtered, not refused.
func TestServiceReadsCheckTheirCaller(t *testing.T) {
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
		web    bool
	}{
		{"read-job", rules(`namespace "web" { capabilities = ["read-job"] }`), true},
		{"list-jobs only", rules(`namespace "web" { capabilities = ["list-jobs"] }`), false},
		{"submit-job only", rules(`namespace "web" { capabilities = ["submit-job"] }`), false},
		{"zero Caller", acl.Caller{}, false},
		{"management", acl.Internal(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := servicereg.ReadServices(tc.caller, "web")
			if tc.web != (err == nil) || (err != nil && !acl.IsPermissionDenied(err)) {
				t.Fatalf("ReadServices(web) = %v, want allowed %v", err, tc.web)
			}
			if _, err := servicereg.ReadServicesIn(tc.caller, "web"); tc.web != (err == nil) {
				t.Fatalf("ReadServicesIn(web) = %v, want allowed %v", err, tc.web)
			}
			visible, err := servicereg.ReadServicesIn(tc.caller, state.AllNamespaces)
			if err != nil {
				t.Fatalf("every namespace refused: %v", err)
			}
			if visible("web") != tc.web {
				t.Fatalf("web visible = %v, want %v", visible("web"), tc.web)
			}
		})
	}
}
