package http_test

// Node pool writes need operator:write (ctlplane's ACL model has no
// node_pool rules; Nomad 1.6 checks AllowNodePoolOperation with the write
// capability to upsert, delete to delete, and answers its
// ErrPermissionDenied, 403 "Permission denied"), a rule that only the
// permission matrix held (issue 32, part 7).

import (
	"strconv"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// TestRuleNodePoolWritesNeedOperatorWrite: with a token whose only rule is
// operator:read every node pool write route answers 403 "Permission
// denied" and changes nothing; with operator:write the same requests
// create, replace and delete the pool, each answering the write's index.
func TestRuleNodePoolWritesNeedOperatorWrite(t *testing.T) {
	const mgmt = "3f6c1a2b-8d4e-4f70-9a1b-2c3d4e5f6a7b"
	ts := servertest.Start(t, servertest.ACL(mgmt))
	tokens := map[string]string{
		"read":  "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d",
		"write": "7b8c9d0e-1f2a-4b3c-9d4e-5f6a7b8c9d0e",
	}
	for level, secret := range tokens {
		if resp := doNomad(t, ts, mgmt, "PUT", "/v1/acl/policy", `{"Name":"operator-`+level+`","Rules":"operator = \"`+level+`\""}`); resp.Status != 200 {
			t.Fatalf("policy operator-%s: %s", level, resp)
		}
		if resp := doNomad(t, ts, mgmt, "PUT", "/v1/acl/token", `{"SecretID":"`+secret+`","Policies":[{"Name":"operator-`+level+`"}]}`); resp.Status != 200 {
			t.Fatalf("token operator-%s: %s", level, resp)
		}
	}
	// poolDescription reads the pool with the management token ("" and
	// false when it does not exist).
	poolDescription := func(t *testing.T, name string) (string, uint64, bool) {
		t.Helper()
		resp := doNomad(t, ts, mgmt, "GET", "/v1/node/pool/"+name, "")
		if resp.Status == 404 {
			return "", 0, false
		}
		var p struct {
			Description string
			ModifyIndex uint64
		}
		if resp.Status != 200 {
			t.Fatalf("reading pool %s: %s", name, resp)
		}
		resp.JSON(t, &p)
		return p.Description, p.ModifyIndex, true
	}
	writes := []struct {
		method, path, body string
		// exists and description: the pool once the write succeeded.
		exists      bool
		description string
	}{
		{"PUT", "/v1/node/pools", `{"Name":"ops","Description":"one"}`, true, "one"},
		{"POST", "/v1/node/pools", `{"Name":"ops","Description":"two"}`, true, "two"},
		{"PUT", "/v1/node/pool/ops", `{"Name":"ops","Description":"three"}`, true, "three"},
		{"POST", "/v1/node/pool/ops", `{"Name":"ops","Description":"four"}`, true, "four"},
		{"DELETE", "/v1/node/pool/ops", "", false, ""},
	}
	for _, w := range writes {
		t.Run(w.method+" "+w.path, func(t *testing.T) {
			beforeDesc, beforeIdx, beforeExists := poolDescription(t, "ops")
			if w.method == "DELETE" && !beforeExists {
				t.Fatal("nothing to delete: the writes before did not create the pool")
			}
			denied := doNomad(t, ts, tokens["read"], w.method, w.path, w.body)
			if denied.Status != 403 || denied.Body != "Permission denied" {
				t.Errorf("operator:read: %d %q, want 403 %q", denied.Status, denied.Body, "Permission denied")
			}
			if desc, idx, exists := poolDescription(t, "ops"); desc != beforeDesc || idx != beforeIdx || exists != beforeExists {
				t.Fatalf("operator:read changed the pool: %q@%d exists %v, was %q@%d exists %v", desc, idx, exists, beforeDesc, beforeIdx, beforeExists)
			}

			ok := doNomad(t, ts, tokens["write"], w.method, w.path, w.body)
			idx, err := strconv.ParseUint(ok.Header.Get("X-Nomad-Index"), 10, 64)
			if ok.Status != 200 || err != nil || idx <= beforeIdx {
				t.Fatalf("operator:write: %s (index %q, pool was at %d)", ok, ok.Header.Get("X-Nomad-Index"), beforeIdx)
			}
			desc, modified, exists := poolDescription(t, "ops")
			if exists != w.exists || desc != w.description || (exists && modified != idx) {
				t.Errorf("after operator:write: %q@%d exists %v, want %q@%d exists %v", desc, modified, exists, w.description, idx, w.exists)
			}
		})
	}
}
