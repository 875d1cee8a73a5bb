package jobs_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/state"
)

func callerWith(t *testing.T, hcl string) acl.Caller {
	t.Helper()
	switch hcl {
	case "":
		return acl.Caller{} // no authorizer: fails closed
	case "management":
		return acl.Internal()
	}
	r, err := acl.Parse(hcl)
	if err != nil {
		t.Fatalf("rules %q: %v", hcl, err)
	}
	return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
}

// TestJobReadsCheckTheirCaller: the jobs family decides its reads itself.
// One namespace without the capability is refused with the Caller's
// refusal; over "*" nothing is refused and only the readable namespaces
// are visible.
func TestJobReadsCheckTheirCaller(t *testing.T) {
	const (
		readWeb    = `namespace "web" { capabilities = ["read-job"] }`
		listWeb    = `namespace "web" { capabilities = ["list-jobs"] }`
		scalingWeb = `namespace "web" { capabilities = ["read-job-scaling"] }`
		submitWeb  = `namespace "web" { capabilities = ["submit-job"] }`
	)
	type rule func(acl.Caller, string) error
	in := func(f func(acl.Caller, string) (func(string) bool, error)) rule {
		return func(c acl.Caller, ns string) error { _, err := f(c, ns); return err }
	}
	cases := []struct {
		name    string
		rule    rule
		rules   string
		ns      string
		allowed bool
	}{
		{"read-job reads", jobs.ReadJob, readWeb, "web", true},
		{"read-job is per namespace", jobs.ReadJob, readWeb, "api", false},
		{"list-jobs does not read a job", jobs.ReadJob, listWeb, "web", false},
		{"submit-job does not read a job", jobs.ReadJob, submitWeb, "web", false},
		{"zero Caller reads nothing", jobs.ReadJob, "", "web", false},
		{"management reads", jobs.ReadJob, "management", "web", true},
		{"list-jobs lists", in(jobs.ListJobs), listWeb, "web", true},
		{"read-job lists", in(jobs.ListJobs), readWeb, "web", true},
		{"submit-job does not list", in(jobs.ListJobs), submitWeb, "web", false},
		{"every namespace is never refused", in(jobs.ListJobs), "", state.AllNamespaces, true},
		{"read-job-scaling reads scaling", jobs.ReadJobScaling, scalingWeb, "web", true},
		{"read-job reads scaling", jobs.ReadJobScaling, readWeb, "web", true},
		{"list-jobs does not read scaling", jobs.ReadJobScaling, listWeb, "web", false},
		{"read-job reads a job's objects", in(jobs.ReadJobsIn), readWeb, "web", true},
		{"list-jobs does not read a job's objects", in(jobs.ReadJobsIn), listWeb, "web", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule(callerWith(t, tc.rules), tc.ns)
			if tc.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.allowed && !acl.IsPermissionDenied(err) {
				t.Fatalf("want the Caller's refusal, got %v", err)
			}
		})
	}

	// Over every namespace, visible keeps what each rule allows.
	visibleCases := []struct {
		name  string
		rule  func(acl.Caller, string) (func(string) bool, error)
		rules string
		web   bool
	}{
		{"list with list-jobs", jobs.ListJobs, listWeb, true},
		{"list with read-job", jobs.ListJobs, readWeb, true},
		{"objects with list-jobs", jobs.ReadJobsIn, listWeb, false},
		{"objects with read-job", jobs.ReadJobsIn, readWeb, true},
	}
	for _, tc := range visibleCases {
		t.Run("visible "+tc.name, func(t *testing.T) {
			visible, err := tc.rule(callerWith(t, tc.rules), state.AllNamespaces)
			if err != nil {
				t.Fatalf("every namespace refused: %v", err)
			}
			if got := visible("web"); got != tc.web {
				t.Fatalf("web visible = %v, want %v", got, tc.web)
			}
			if visible("api") {
				t.Fatal("api is visible without any capability there")
			}
		})
	}
}
