package main

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// TestSystemGCCLI: `system gc` runs a collection with a management token
// and reports what it deleted (nothing on a fresh server); without one the
// server's 403 is the error.
func TestSystemGCCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	out := cliAt(ts.URL, mgmtSecret, "system", "gc").ok(t)
	mustContain(t, out, "Garbage collected: 0 evaluations, 0 allocations, 0 deployments, 0 jobs, 0 nodes")
	cliAt(ts.URL, "", "system", "gc").fails(t, "Error: 403 Permission denied")
	runCLI("system").fails(t, "Usage: ctlplane system gc")
	runCLI("system", "gc", "-address="+ts.URL, "extra").fails(t, "Error: unexpected arguments")
}
