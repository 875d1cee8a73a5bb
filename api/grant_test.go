package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// A grant verifies for exactly the call it names: every field, the
// secret and the expiry count, and no two calls share a grant by moving
// bytes from one field to the next.
func TestGrantNamesOneCall(t *testing.T) {
	const secret = "3f0c7a8e-1111-4222-8333-944455556666"
	now := time.Now()
	g := api.Grant{Op: api.GrantFSCat, AllocID: "a", Path: "/app/x"}
	grant := api.SignGrant(secret, g, now.Add(time.Minute))
	if !strings.HasPrefix(grant, "v2.") {
		t.Fatalf("grant %q", grant)
	}
	if err := api.VerifyGrant(secret, grant, g, now); err != nil {
		t.Fatalf("own call: %v", err)
	}
	others := []api.Grant{
		{Op: api.GrantFSList, AllocID: "a", Path: "/app/x"},
		{Op: api.GrantFSCat, AllocID: "b", Path: "/app/x"},
		{Op: api.GrantFSCat, AllocID: "a", Path: "/app/y"},
		{Op: api.GrantFSCat, AllocID: "a/app/x"},
		{Op: api.GrantFSCat, AllocID: "a", Path: "/app/x", Task: "t"},
		{Op: api.GrantFSCat, AllocID: "a", Path: "/app/x", AllTasks: true},
		{Op: api.GrantFSCat, NodeID: "a", Path: "/app/x"},
	}
	for _, o := range others {
		if err := api.VerifyGrant(secret, grant, o, now); err == nil || !strings.Contains(err.Error(), "the grant is not for this") {
			t.Errorf("verified for %+v: %v", o, err)
		}
	}
	if err := api.VerifyGrant(secret, grant, g, now.Add(2*time.Minute)); err == nil || err.Error() != "the grant has expired" {
		t.Errorf("after expiry: %v", err)
	}
	if err := api.VerifyGrant("another-secret", grant, g, now); err == nil {
		t.Error("verified under another secret")
	}
	if err := api.VerifyGrant(secret, "v1."+strings.TrimPrefix(grant, "v2."), g, now); err == nil || err.Error() != "malformed grant" {
		t.Errorf("v1 grant: %v", err)
	}
	if err := api.VerifyGrant("", grant, g, now); err == nil || err.Error() != "this node has no secret yet" {
		t.Errorf("no secret: %v", err)
	}
	// The logs helpers are the same grant.
	lg := api.SignLogsGrant(secret, "a", "web", "stdout", now.Add(time.Minute))
	if err := api.VerifyGrant(secret, lg, api.Grant{Op: api.GrantLogs, AllocID: "a", Task: "web", Stream: "stdout"}, now); err != nil {
		t.Errorf("logs grant as a grant: %v", err)
	}
	if err := api.VerifyLogsGrant(secret, lg, "a", "web", "stderr", now); err == nil {
		t.Error("a stdout grant verified for stderr")
	}
}
