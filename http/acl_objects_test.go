package http_test

// Policies, tokens, roles and bootstrap over HTTP (design §7): the exact
// JSON keys and their omitempty behaviour, validation texts, the built-in
// objects, expiry, hidden secrets, and permissions that follow the objects
// they come from at once.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

const (
	globalManagementID = "00000000-0000-0000-0000-000000000001"
	policyPath         = "/v1/acl/policy"
	tokenPath          = "/v1/acl/token"
	rolePath           = "/v1/acl/role"
)

// jsonKeys returns the top-level keys of a JSON object, in order.
func jsonKeys(t testing.TB, body string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q", body)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("decoding %q: %v", body, err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("decoding %q: %v", body, err)
		}
	}
	return keys
}

// expectKeys checks the exact keys of a JSON object, in order.
func expectKeys(t testing.TB, body string, want ...string) {
	t.Helper()
	if got := jsonKeys(t, body); !reflect.DeepEqual(got, want) {
		t.Errorf("keys of %s:\n got %v\nwant %v", body, got, want)
	}
}

// jsonArray splits a JSON array into its elements' raw JSON.
func jsonArray(t testing.TB, body string) []string {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("not a JSON array: %q: %v", body, err)
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = string(r)
	}
	return out
}

// aclServer starts a dev server with ACLs on and root as the management token.
func aclServer(t *testing.T, opts ...servertest.Option) *acxServer {
	t.Helper()
	return acxStart(t, "root", append([]servertest.Option{servertest.ACL("root")}, opts...)...)
}

// expectRefused checks an error answer and that the state did not change.
func (s *acxServer) expectRefused(t testing.TB, secret, method, path, body string, status int, msg string) {
	t.Helper()
	before := s.fingerprint()
	expectError(t, s.as(t, secret, method, path, body), status, msg)
	if after := s.fingerprint(); after != before {
		t.Errorf("%s %s %s changed the state:\nbefore %s\n after %s", method, path, body, before, after)
	}
}

func TestACLPolicyCRUD(t *testing.T) {
	s := aclServer(t)

	// Create: every key, Hash included; no Datacenters key when there are none.
	created := s.must(t, "PUT", policyPath, `{"Name":"ops","Description":"Ops","Rules":"operator = \"read\""}`)
	expectKeys(t, created.Body, "ID", "Name", "Description", "Rules", "Hash", "CreateIndex", "ModifyIndex")
	var p state.ACLPolicy
	created.JSON(t, &p)
	if !uuidV4.MatchString(p.ID) || p.Name != "ops" || p.Description != "Ops" || p.Rules != `operator = "read"` {
		t.Errorf("created policy %+v", p)
	}
	if len(p.Hash) != 32 || p.CreateIndex == 0 || p.CreateIndex != p.ModifyIndex {
		t.Errorf("created policy: Hash %x, CreateIndex %d, ModifyIndex %d", p.Hash, p.CreateIndex, p.ModifyIndex)
	}

	// Read by ID and by name (any case) answer the same object.
	expectJSON(t, s.must(t, "GET", policyPath+"/"+p.ID, ""), created.Body)
	expectJSON(t, s.must(t, "GET", policyPath+"/name/ops", ""), created.Body)
	expectJSON(t, s.must(t, "GET", policyPath+"/name/OPS", ""), created.Body)

	// List: by ID (the built-in first), without Rules.
	list := s.must(t, "GET", "/v1/acl/policies", "")
	entries := jsonArray(t, list.Body)
	if len(entries) != 2 {
		t.Fatalf("policy list %s: want the built-in policy and ops", list.Body)
	}
	for _, e := range entries {
		// Upstream's list stub always has Datacenters (null when none).
		expectKeys(t, e, "ID", "Name", "Description", "Datacenters", "Hash", "CreateIndex", "ModifyIndex")
	}
	var listed []state.ACLPolicy
	list.JSON(t, &listed)
	if listed[0].ID != globalManagementID || listed[1].ID != p.ID || !bytes.Equal(listed[1].Hash, p.Hash) {
		t.Errorf("policy list %s", list.Body)
	}
	expectHeader(t, list, "X-Service-Index", u(p.ModifyIndex))

	// Update: CreateIndex kept, ModifyIndex and Hash new; Datacenters shown once set.
	var upd state.ACLPolicy
	resp := s.must(t, "PUT", policyPath+"/"+p.ID, `{"Name":"ops","Description":"Ops team","Rules":"operator = \"write\"","Datacenters":["dc1"]}`)
	expectKeys(t, resp.Body, "ID", "Name", "Description", "Rules", "Datacenters", "Hash", "CreateIndex", "ModifyIndex")
	resp.JSON(t, &upd)
	if upd.ID != p.ID || upd.CreateIndex != p.CreateIndex || upd.ModifyIndex <= p.ModifyIndex || bytes.Equal(upd.Hash, p.Hash) {
		t.Errorf("update of %+v gave %+v", p, upd)
	}
	// The same content again: the same Hash. The ID may be sent back (any case).
	var again state.ACLPolicy
	s.must(t, "PUT", policyPath+"/"+p.ID, fmt.Sprintf(`{"ID":%s,"Name":"ops","Description":"Ops team","Rules":"operator = \"write\"","Datacenters":["dc1"]}`, js(strings.ToUpper(p.ID)))).JSON(t, &again)
	if !bytes.Equal(again.Hash, upd.Hash) {
		t.Errorf("same content, different Hash: %x then %x", upd.Hash, again.Hash)
	}

	s.expectRefused(t, "root", "PUT", policyPath+"/"+p.ID, fmt.Sprintf(`{"ID":%s,"Name":"ops"}`, js(otherID)), 400, "Policy ID in URL and payload do not match")
	s.expectRefused(t, "root", "PUT", policyPath+"/"+otherID, `{"Name":"ghost"}`, 404, "Cannot find policy "+otherID)
	s.expectRefused(t, "root", "GET", policyPath+"/not-a-uuid", "", 400, `Invalid policy ID "not-a-uuid": a 36-character UUID is required`)
	s.expectRefused(t, "root", "PUT", policyPath, `{"Name":"x","Foo":1}`, 400, `Policy decoding failed: json: unknown field "Foo"`)

	// Delete, then it is gone everywhere.
	expectJSON(t, s.must(t, "DELETE", policyPath+"/"+p.ID, ""), "true")
	expectError(t, s.as(t, "root", "GET", policyPath+"/"+p.ID, ""), 404, "Requested policy does not exist: ACL not found")
	expectError(t, s.as(t, "root", "GET", policyPath+"/name/ops", ""), 404, "Requested policy does not exist: ACL not found")
	s.expectRefused(t, "root", "DELETE", policyPath+"/"+p.ID, "", 404, "Cannot find policy to delete")
}

func TestACLPolicyValidation(t *testing.T) {
	s := aclServer(t)
	body := func(name, rules string) string {
		return fmt.Sprintf(`{"Name":%s,"Rules":%s}`, js(name), js(rules))
	}

	t.Run("rejected", func(t *testing.T) {
		tests := []struct{ name, body, msg string }{
			{"no name", `{"Rules":"acl = \"read\""}`, "Invalid Policy: no Name is set"},
			{"space in name", body("a b", ""), "Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed"},
			{"name of 129 characters", body(strings.Repeat("n", 129), ""), "Invalid Policy: Name is too long: 129 bytes; the limit is 128"},
			{"acl list", body("p", `acl = "list"`), `Invalid acl policy: "list"`},
			{"acl scale", body("p", `acl = "scale"`), `Invalid acl policy: "scale"`},
			{"operator list", body("p", `operator = "list"`), `Invalid operator policy: "list"`},
			{"acl list in JSON", body("p", `{"acl":"list"}`), `Invalid acl policy: "list"`},
			{"namespace policy list", body("p", `namespace "x" { policy = "list" }`), `Invalid namespace policy: "list"`},
			{"namespace capability", body("p", `namespace "x" { capabilities = ["fly"] }`), `Invalid namespace capability: "fly"`},
			{"empty namespace block", body("p", `namespace "x" {}`), `Invalid namespace rule "x": it needs a policy or capabilities`},
			{"unknown rule", body("p", `key "x" { policy = "read" }`), `Failed to parse ACL rules: unknown rule "key" (known: acl, operator, node, namespace)`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s.expectRefused(t, "root", "PUT", policyPath, tc.body, 400, tc.msg)
			})
		}
		// Syntax errors carry the HCL parser's text.
		for _, tc := range []struct{ rules, msg string }{
			{`acl = {`, "Failed to parse ACL rules: At 1:9: object expected closing RBRACE got: EOF"},
			{`acl = read`, "Failed to parse ACL rules: At 1:7: Unknown token: 1:7 IDENT read"},
			{`acl = "read`, "Failed to parse ACL rules: At 1:12: literal not terminated"},
		} {
			t.Run("syntax "+tc.rules, func(t *testing.T) {
				s.expectRefused(t, "root", "PUT", policyPath, body("p", tc.rules), 400, tc.msg)
			})
		}
	})

	t.Run("accepted", func(t *testing.T) {
		tests := []struct{ name, rules string }{
			{"namespace glob read", `namespace "prod-*" { policy = "read" }`},
			{"namespace glob deny", `namespace "*" { policy = "deny" }`},
			{"namespace capabilities", `namespace "default" { capabilities = ["submit-job", "read-job"] }`},
			{"namespace scale", `namespace "team1" { policy = "scale" }`},
			{"everything", "acl = \"read\"\noperator = \"deny\"\nnamespace \"prod-*\" {\n  policy = \"write\"\n}\nnamespace \"prod-db\" {\n  policy = \"deny\"\n}\n"},
			{"JSON", `{"acl":"write","namespace":{"prod-*":{"policy":"read"}}}`},
			{"no rules", ""},
		}
		for i, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var p state.ACLPolicy
				s.must(t, "PUT", policyPath, body(fmt.Sprintf("ok-%d", i), tc.rules)).JSON(t, &p)
				if p.Rules != tc.rules {
					t.Errorf("Rules stored as %q, want %q", p.Rules, tc.rules)
				}
			})
		}
		s.must(t, "PUT", policyPath, body(strings.Repeat("n", 128), ""))
	})

	t.Run("unique names", func(t *testing.T) {
		dup := s.policy(t, "dup", "")
		other := s.policy(t, "other", "")
		s.expectRefused(t, "root", "PUT", policyPath, body("dup", ""), 400, `Invalid Policy: A Policy with Name "dup" already exists`)
		s.expectRefused(t, "root", "PUT", policyPath, body("DUP", ""), 400, `Invalid Policy: A Policy with Name "DUP" already exists`)
		s.expectRefused(t, "root", "PUT", policyPath+"/"+other.ID, body("dup", ""), 400, `Invalid Policy: A Policy with Name "dup" already exists`)
		s.expectRefused(t, "root", "PUT", policyPath, body("global-management", ""), 400, `Invalid Policy: A Policy with Name "global-management" already exists`)
		// Keeping one's own name is no conflict.
		s.must(t, "PUT", policyPath+"/"+dup.ID, `{"Name":"dup","Description":"still dup"}`)
	})
}

func TestACLGlobalManagementPolicy(t *testing.T) {
	s := aclServer(t)
	path := policyPath + "/" + globalManagementID
	var gm state.ACLPolicy
	s.must(t, "GET", path, "").JSON(t, &gm)
	if gm.Name != "global-management" || gm.Rules == "" {
		t.Fatalf("built-in policy %+v", gm)
	}
	expectJSON(t, s.must(t, "GET", policyPath+"/name/global-management", ""), s.must(t, "GET", path, "").Body)

	withRules := func(rules string, extra string) string {
		return fmt.Sprintf(`{"Name":"global-management","Rules":%s%s}`, js(rules), extra)
	}
	s.expectRefused(t, "root", "PUT", path, withRules(`acl = "read"`, ""), 400, "Changing the Rules for the builtin global-management policy is not permitted")
	s.expectRefused(t, "root", "PUT", path, withRules("", ""), 400, "Changing the Rules for the builtin global-management policy is not permitted")
	s.expectRefused(t, "root", "PUT", path, withRules(gm.Rules, `,"Datacenters":["dc1"]`), 400, "Changing the Datacenters of the builtin global-management policy is not permitted")
	s.expectRefused(t, "root", "DELETE", path, "", 400, "Delete operation not permitted on the builtin global-management policy")
	s.expectRefused(t, "root", "DELETE", policyPath+"/"+strings.ToUpper(globalManagementID), "", 400, "Delete operation not permitted on the builtin global-management policy")

	// Its description may change; its rules stay.
	var upd state.ACLPolicy
	s.must(t, "PUT", path, withRules(gm.Rules, `,"Description":"everything"`)).JSON(t, &upd)
	if upd.Rules != gm.Rules || upd.Description != "everything" || upd.CreateIndex != gm.CreateIndex {
		t.Errorf("after a description change: %+v", upd)
	}
	// And the management token still manages.
	s.must(t, "GET", "/v1/snapshot", "")
}

func TestACLTokenCreate(t *testing.T) {
	s := aclServer(t)
	read := s.policy(t, "reader", `acl = "read"`)
	ops := s.policy(t, "ops", `operator = "read"`)
	role := s.role(t, `{"Name":"auditors","Policies":[{"Name":"reader"}]}`)

	t.Run("plain", func(t *testing.T) {
		resp := s.must(t, "PUT", tokenPath, `{"Description":"plain"}`)
		// No Policies, Roles, identities, AuthMethod or expiry keys; Hash,
		// Local and Namespace always.
		expectKeys(t, resp.Body, "AccessorID", "SecretID", "Description", "Local", "CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
		var tok state.ACLToken
		resp.JSON(t, &tok)
		if !uuidV4.MatchString(tok.AccessorID) || !uuidV4.MatchString(tok.SecretID) || tok.Namespace != "default" || tok.Local {
			t.Errorf("token %+v", tok)
		}
		if len(tok.Hash) != 32 || tok.CreateIndex == 0 || tok.CreateIndex != tok.ModifyIndex || time.Since(tok.CreateTime) > time.Minute {
			t.Errorf("token %+v", tok)
		}
		expectJSON(t, s.must(t, "GET", tokenPath+"/"+tok.AccessorID, ""), resp.Body)
		expectJSON(t, s.mustAs(t, tok.SecretID, "GET", tokenPath+"/self", ""), resp.Body)
	})

	t.Run("links by name and by ID", func(t *testing.T) {
		body := fmt.Sprintf(`{"Description":"linked","Policies":[{"Name":"reader"},{"ID":%s},{"ID":%s}],"Roles":[{"Name":"auditors"}],
			"ServiceIdentities":[{"ServiceName":"web","Datacenters":["dc1"]}],"NodeIdentities":[{"NodeName":"n1","Datacenter":"dc1"}]}`,
			js(ops.ID), js(read.ID))
		resp := s.must(t, "PUT", tokenPath, body)
		expectKeys(t, resp.Body, "AccessorID", "SecretID", "Description", "Policies", "Roles", "ServiceIdentities", "NodeIdentities",
			"Local", "CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
		var tok state.ACLToken
		resp.JSON(t, &tok)
		wantPolicies := []state.ACLLink{{ID: read.ID, Name: "reader"}, {ID: ops.ID, Name: "ops"}}
		if !reflect.DeepEqual(tok.Policies, wantPolicies) {
			t.Errorf("Policies %+v, want %+v (names resolved, the duplicate dropped)", tok.Policies, wantPolicies)
		}
		if !reflect.DeepEqual(tok.Roles, []state.ACLLink{{ID: role.ID, Name: "auditors"}}) {
			t.Errorf("Roles %+v", tok.Roles)
		}
		// The links grant: acl:read (policy and role) and operator:read.
		s.mustAs(t, tok.SecretID, "GET", "/v1/acl/tokens", "")
		s.mustAs(t, tok.SecretID, "GET", "/v1/operator/raft/configuration", "")
		expectError(t, s.as(t, tok.SecretID, "PUT", policyPath, `{"Name":"nope"}`), 403, tokenDeny(tok.AccessorID, "acl:write"))
		// The list filters by policy and by role.
		for _, q := range []string{"?policy=" + ops.ID, "?role=" + role.ID} {
			var listed []state.ACLToken
			s.must(t, "GET", "/v1/acl/tokens"+q, "").JSON(t, &listed)
			if len(listed) != 1 || listed[0].AccessorID != tok.AccessorID {
				t.Errorf("tokens%s: %+v", q, listed)
			}
		}
	})

	t.Run("client-chosen IDs", func(t *testing.T) {
		acc, sec := uuid.NewString(), uuid.NewString()
		tok := s.token(t, fmt.Sprintf(`{"AccessorID":%s,"SecretID":%s}`, js(acc), js(sec)))
		if tok.AccessorID != acc || tok.SecretID != sec {
			t.Errorf("token %+v, want the IDs sent", tok)
		}
		s.mustAs(t, sec, "GET", tokenPath+"/self", "")
		s.expectRefused(t, "root", "PUT", tokenPath, fmt.Sprintf(`{"AccessorID":%s}`, js(acc)), 400, "Invalid Token: AccessorID is already in use")
		s.expectRefused(t, "root", "PUT", tokenPath, fmt.Sprintf(`{"SecretID":%s}`, js(sec)), 400, "Invalid Token: SecretID is already in use")
		s.expectRefused(t, "root", "PUT", tokenPath, `{"AccessorID":"abc"}`, 400, "Invalid Token: AccessorID is not a valid UUID")
		s.expectRefused(t, "root", "PUT", tokenPath, `{"SecretID":"abc"}`, 400, "Invalid Token: SecretID is not a valid UUID")
	})

	t.Run("rejected", func(t *testing.T) {
		tests := []struct{ name, body, msg string }{
			{"unknown policy name", `{"Policies":[{"Name":"nope"}]}`, `No such ACL policy with name "nope"`},
			{"unknown policy ID", fmt.Sprintf(`{"Policies":[{"ID":%s}]}`, js(otherID)), fmt.Sprintf(`No such ACL policy with ID %q`, otherID)},
			{"empty policy link", `{"Policies":[{}]}`, "policy link is missing both an ID and a Name"},
			{"unknown role name", `{"Roles":[{"Name":"nope"}]}`, `No such ACL role with name "nope"`},
			{"unknown role ID", fmt.Sprintf(`{"Roles":[{"ID":%s}]}`, js(otherID)), fmt.Sprintf(`No such ACL role with ID %q`, otherID)},
			{"AuthMethod", `{"AuthMethod":"jwt"}`, "AuthMethod field is disallowed outside of login"},
			{"bad service identity", `{"ServiceIdentities":[{"ServiceName":"Web"}]}`, `Service identity "Web" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`},
			{"node identity without datacenter", `{"NodeIdentities":[{"NodeName":"n1"}]}`, "Node identity is missing the datacenter field on this token"},
			{"unknown field", `{"Rules":"x"}`, `Token decoding failed: json: unknown field "Rules"`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s.expectRefused(t, "root", "PUT", tokenPath, tc.body, 400, tc.msg)
			})
		}
	})
}

func TestACLTokenExpiration(t *testing.T) {
	s := aclServer(t)

	t.Run("TTL", func(t *testing.T) {
		for _, ttl := range []string{`"1h"`, `3600000000000`} {
			resp := s.must(t, "PUT", tokenPath, `{"ExpirationTTL":`+ttl+`}`)
			expectKeys(t, resp.Body, "AccessorID", "SecretID", "Description", "Local", "ExpirationTime", "ExpirationTTL",
				"CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
			var tok state.ACLToken
			resp.JSON(t, &tok)
			if tok.ExpirationTTL != time.Hour || tok.ExpirationTime == nil || !tok.ExpirationTime.Equal(tok.CreateTime.Add(time.Hour)) {
				t.Errorf("TTL %s: ExpirationTTL %v, ExpirationTime %v, CreateTime %v", ttl, tok.ExpirationTTL, tok.ExpirationTime, tok.CreateTime)
			}
			if !strings.Contains(resp.Body, `"ExpirationTTL":3600000000000`) {
				t.Errorf("ExpirationTTL is not shown in nanoseconds: %s", resp.Body)
			}
			s.mustAs(t, tok.SecretID, "GET", tokenPath+"/self", "")
		}
	})

	t.Run("time", func(t *testing.T) {
		at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		resp := s.must(t, "PUT", tokenPath, fmt.Sprintf(`{"ExpirationTime":%s}`, js(at.Format(time.RFC3339))))
		expectKeys(t, resp.Body, "AccessorID", "SecretID", "Description", "Local", "ExpirationTime",
			"CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
		var tok state.ACLToken
		resp.JSON(t, &tok)
		if tok.ExpirationTime == nil || !tok.ExpirationTime.Equal(at) || tok.ExpirationTTL != 0 {
			t.Errorf("ExpirationTime %v (want %v), ExpirationTTL %v", tok.ExpirationTime, at, tok.ExpirationTTL)
		}
	})

	t.Run("rejected", func(t *testing.T) {
		soon := js(time.Now().Add(30 * time.Second).UTC().Format(time.RFC3339Nano))
		past := js(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		later := js(time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339))
		tests := []struct{ name, body, msg string }{
			{"both", `{"ExpirationTTL":"1h","ExpirationTime":` + later + `}`, "Expiration TTL and Expiration Time cannot both be set"},
			{"TTL too short", `{"ExpirationTTL":"30s"}`, "Token Expiration TTL '30s' should be between 1m0s and 24h0m0s"},
			{"TTL too long", `{"ExpirationTTL":"25h"}`, "Token Expiration TTL '25h0m0s' should be between 1m0s and 24h0m0s"},
			{"TTL negative", `{"ExpirationTTL":"-1h"}`, "Token Expiration TTL '-1h0m0s' should be > 0"},
			{"time in the past", `{"ExpirationTime":` + past + `}`, "ExpirationTime cannot be in the past"},
			{"time too soon", `{"ExpirationTime":` + soon + `}`, "ExpirationTime must be between 1m0s and 24h0m0s from now"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s.expectRefused(t, "root", "PUT", tokenPath, tc.body, 400, tc.msg)
			})
		}
		t.Run("not a duration", func(t *testing.T) {
			before := s.fingerprint()
			resp := s.as(t, "root", "PUT", tokenPath, `{"ExpirationTTL":"soon"}`)
			if resp.Status != 400 || !strings.HasPrefix(resp.Body, "Token decoding failed: ") || !strings.Contains(resp.Body, `"soon"`) {
				t.Errorf("got %s, want 400 Token decoding failed: ... \"soon\"", resp)
			}
			if s.fingerprint() != before {
				t.Error("a rejected token changed the state")
			}
		})
	})
}

// putToken stores a token as the FSM would, bypassing the HTTP checks (the
// API refuses an expiry in the past).
func putToken(t *testing.T, s *acxServer, tok state.ACLToken) state.ACLToken {
	t.Helper()
	tok.AccessorID, tok.SecretID = uuid.NewString(), uuid.NewString()
	tok.Namespace = state.DefaultNamespace
	tok.CreateTime = time.Now().UTC()
	out, err := fsm.Apply(s.Server, fsm.ACLTokenSet, &fsm.ACLTokenSetRequest{Token: tok, Create: true})
	if err != nil {
		t.Fatalf("storing token: %v", err)
	}
	return *out
}

func TestACLExpiredTokenIsRefused(t *testing.T) {
	// The leader reaps expired tokens every 200ms here, by the wall clock;
	// the API answers on a fake clock.
	base := aclServer(t, func(c *server.Config) { c.TokenReapInterval = 200 * time.Millisecond })
	clock := newFakeClock()
	ts, _ := onClock(t, base.TestServer, clock)
	s := &acxServer{TestServer: ts, mgmt: base.mgmt}
	writer := s.policy(t, "writer", `acl = "write"`)
	links := []state.ACLLink{{ID: writer.ID, Name: writer.Name}}

	past := time.Now().Add(-time.Minute)
	expired := putToken(t, s, state.ACLToken{Description: "expired", Policies: links, ExpirationTime: &past})
	for path, msg := range map[string]string{"/v1/acl/tokens": aclNotFound, tokenPath + "/self": selfNotFound, rulesPath: aclNotFound} {
		expectError(t, s.as(t, expired.SecretID, "GET", path, ""), 403, msg)
	}
	expectError(t, s.as(t, expired.SecretID, "PUT", rulePath, minimalBody), 403, aclNotFound)

	// A token with a one-hour TTL works until the clock reaches its expiry,
	// and is refused from then on.
	var expiring state.ACLToken
	s.must(t, "PUT", tokenPath, fmt.Sprintf(`{"Description":"expiring","Policies":[{"ID":%q}],"ExpirationTTL":"1h"}`, writer.ID)).JSON(t, &expiring)
	if !expiring.CreateTime.Equal(clock.Now().UTC()) || !expiring.ExpirationTime.Equal(expiring.CreateTime.Add(time.Hour)) {
		t.Fatalf("CreateTime %v, ExpirationTime %v: want the clock's %v and an hour later", expiring.CreateTime, expiring.ExpirationTime, clock.Now())
	}
	s.mustAs(t, expiring.SecretID, "PUT", rulePath, minimalBody)
	clock.Advance(time.Hour - time.Nanosecond)
	s.mustAs(t, expiring.SecretID, "GET", tokenPath+"/self", "")
	clock.Advance(time.Nanosecond)
	expectError(t, s.as(t, expiring.SecretID, "PUT", rulePath, minimalBody), 403, aclNotFound)
	expectError(t, s.as(t, expiring.SecretID, "GET", tokenPath+"/self", ""), 403, selfNotFound)

	// Expired tokens are not found by read or list even before they are
	// reaped (as upstream's TokenRead and TokenList).
	for _, tok := range []state.ACLToken{expired, expiring} {
		expectError(t, s.as(t, "root", "GET", tokenPath+"/"+tok.AccessorID, ""), 404, "Requested token does not exist: ACL not found")
	}
	var listed []state.ACLToken
	s.must(t, "GET", "/v1/acl/tokens?policy="+writer.ID, "").JSON(t, &listed)
	if len(listed) != 0 {
		t.Errorf("expired tokens listed: %+v", listed)
	}

	// The leader's reaper deletes the token that expired by the wall clock;
	// the one that expired by the fake clock is still stored.
	waitFor(t, "the leader to reap the expired token", func() bool {
		_, tok, _ := s.State().ACLTokenByAccessor(nil, expired.AccessorID)
		return tok == nil
	})
	if _, tok, _ := s.State().ACLTokenByAccessor(nil, expiring.AccessorID); tok == nil {
		t.Fatal("the wall-clock reaper deleted a token that expires in an hour")
	}
	// Reaping on the fake clock deletes it; unexpired tokens stay.
	if n, err := aclService(base.TestServer, clock.Now).ReapExpiredTokens(); n != 1 || err != nil {
		t.Fatalf("ReapExpiredTokens: %d, %v; want 1", n, err)
	}
	if _, tok, _ := s.State().ACLTokenByAccessor(nil, expiring.AccessorID); tok != nil {
		t.Errorf("not reaped: %+v", tok)
	}
	s.must(t, "GET", tokenPath+"/self", "")
	expectError(t, s.as(t, "", "GET", rulesPath, ""), 403, anonymousDeny("acl:read"))
}

func TestACLTokenUpdate(t *testing.T) {
	s := aclServer(t)
	s.policy(t, "p1", `acl = "read"`)
	p2 := s.policy(t, "p2", `acl = "write"`)
	orig := s.token(t, `{"Description":"orig","Policies":[{"Name":"p1"}],"ExpirationTTL":"1h"}`)
	path := tokenPath + "/" + orig.AccessorID

	var upd state.ACLToken
	resp := s.must(t, "PUT", path, `{"Description":"new","Policies":[{"Name":"p2"}]}`)
	resp.JSON(t, &upd)
	if upd.AccessorID != orig.AccessorID || upd.SecretID != orig.SecretID || upd.CreateIndex != orig.CreateIndex ||
		upd.ModifyIndex <= orig.ModifyIndex || !upd.CreateTime.Equal(orig.CreateTime) {
		t.Errorf("update of %+v gave %+v", orig, upd)
	}
	if upd.ExpirationTTL != orig.ExpirationTTL || upd.ExpirationTime == nil || !upd.ExpirationTime.Equal(*orig.ExpirationTime) {
		t.Errorf("update changed the expiry: %v %v, was %v %v", upd.ExpirationTime, upd.ExpirationTTL, orig.ExpirationTime, orig.ExpirationTTL)
	}
	if upd.Description != "new" || !reflect.DeepEqual(upd.Policies, []state.ACLLink{{ID: p2.ID, Name: "p2"}}) || bytes.Equal(upd.Hash, orig.Hash) {
		t.Errorf("update gave %+v", upd)
	}
	// The same secret now has the new policy's permissions.
	s.mustAs(t, orig.SecretID, "PUT", rulePath, minimalBody)
	expectJSON(t, s.must(t, "GET", path, ""), resp.Body)

	// The whole object sent back, as the official client does, is accepted.
	var full map[string]any
	resp.JSON(t, &full)
	full["Description"] = "round trip"
	buf, _ := json.Marshal(full)
	var rt state.ACLToken
	s.must(t, "PUT", path, string(buf)).JSON(t, &rt)
	if rt.Description != "round trip" || rt.SecretID != orig.SecretID || !reflect.DeepEqual(rt.Policies, upd.Policies) {
		t.Errorf("round trip gave %+v", rt)
	}

	later := js(orig.ExpirationTime.Add(time.Hour).Format(time.RFC3339Nano))
	tests := []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"SecretID", path, fmt.Sprintf(`{"SecretID":%s}`, js(uuid.NewString())), 400, "Changing a token's SecretID is not permitted"},
		{"ExpirationTTL", path, `{"ExpirationTTL":"2h"}`, 400, "Cannot change expiration time of " + orig.AccessorID},
		{"ExpirationTime", path, `{"ExpirationTime":` + later + `}`, 400, "Cannot change expiration time of " + orig.AccessorID},
		{"Local", path, `{"Local":true}`, 400, "Cannot toggle local mode of " + orig.AccessorID},
		{"AuthMethod", path, `{"AuthMethod":"jwt"}`, 400, "Cannot change AuthMethod of " + orig.AccessorID},
		{"AccessorID", path, fmt.Sprintf(`{"AccessorID":%s}`, js(otherID)), 400, "Token Accessor ID in URL and payload do not match"},
		{"unknown policy", path, `{"Policies":[{"Name":"nope"}]}`, 400, `No such ACL policy with name "nope"`},
		{"unknown token", tokenPath + "/" + otherID, `{"Description":"x"}`, 404, "Cannot find token " + otherID},
		{"malformed ID", tokenPath + "/xyz", `{}`, 400, `Invalid token ID "xyz": a 36-character UUID is required`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.expectRefused(t, "root", "PUT", tc.path, tc.body, tc.status, tc.msg)
		})
	}
	// An expired token is not found for an update either (until it is
	// reaped it is still stored, as upstream's TokenSet treats it).
	past := time.Now().Add(-time.Minute)
	expired := putToken(t, s, state.ACLToken{Description: "expired", ExpirationTime: &past})
	s.expectRefused(t, "root", "PUT", tokenPath+"/"+expired.AccessorID, `{"Description":"revived"}`, 404, "Cannot find token "+expired.AccessorID)

	// A token without expiry cannot get one either.
	plain := s.token(t, `{}`)
	s.expectRefused(t, "root", "PUT", tokenPath+"/"+plain.AccessorID, `{"ExpirationTTL":"1h"}`, 400, "Cannot change expiration time of "+plain.AccessorID)
}

func TestACLTokenSelfAndHiddenSecrets(t *testing.T) {
	s := aclServer(t)
	reader := s.tokenWithRules(t, "reader", `acl = "read"`, "")
	writer := s.tokenWithRules(t, "writer", `acl = "write"`, "")

	// token/self needs no permission and shows the caller its own secret.
	for _, tok := range []state.ACLToken{reader, writer} {
		var self state.ACLToken
		s.mustAs(t, tok.SecretID, "GET", tokenPath+"/self", "").JSON(t, &self)
		if self.AccessorID != tok.AccessorID || self.SecretID != tok.SecretID {
			t.Errorf("token/self of %s: %+v", tok.Description, self)
		}
	}
	var anon state.ACLToken
	s.mustAs(t, "", "GET", tokenPath+"/self", "").JSON(t, &anon)
	if anon.AccessorID != state.AnonymousTokenID || anon.Description != "Anonymous Token" || len(anon.Policies) != 0 {
		t.Errorf("token/self without a token: %+v", anon)
	}
	expectError(t, s.as(t, uuid.NewString(), "GET", tokenPath+"/self", ""), 403, selfNotFound)

	secrets := func(caller string) map[string]string {
		var list []state.ACLToken
		s.mustAs(t, caller, "GET", "/v1/acl/tokens", "").JSON(t, &list)
		out := map[string]string{}
		for _, tok := range list {
			out[tok.AccessorID] = tok.SecretID
		}
		return out
	}
	// acl:read sees every secret as <hidden>, its own too.
	hidden := secrets(reader.SecretID)
	if len(hidden) != 4 { // anonymous, root, reader, writer
		t.Errorf("reader lists %d tokens, want 4: %v", len(hidden), hidden)
	}
	for acc, sec := range hidden {
		if sec != "<hidden>" {
			t.Errorf("acl:read caller sees the secret of %s: %q", acc, sec)
		}
	}
	var one state.ACLToken
	s.mustAs(t, reader.SecretID, "GET", tokenPath+"/"+writer.AccessorID, "").JSON(t, &one)
	if one.SecretID != "<hidden>" || one.AccessorID != writer.AccessorID {
		t.Errorf("acl:read caller reads %+v", one)
	}
	// acl:write and management see them.
	for _, caller := range []string{writer.SecretID, "root"} {
		shown := secrets(caller)
		if shown[reader.AccessorID] != reader.SecretID || shown[writer.AccessorID] != writer.SecretID || shown[state.AnonymousTokenID] != "anonymous" {
			t.Errorf("acl:write caller sees %v", shown)
		}
		s.mustAs(t, caller, "GET", tokenPath+"/"+reader.AccessorID, "").JSON(t, &one)
		if one.SecretID != reader.SecretID {
			t.Errorf("acl:write caller reads SecretID %q", one.SecretID)
		}
	}
}

func TestACLTokenDelete(t *testing.T) {
	s := aclServer(t)
	writer := s.tokenWithRules(t, "writer", `acl = "write"`, "")
	var root state.ACLToken
	s.must(t, "GET", tokenPath+"/self", "").JSON(t, &root)

	s.expectRefused(t, "root", "DELETE", tokenPath+"/"+state.AnonymousTokenID, "", 400, "Delete operation not permitted on the anonymous token")
	s.expectRefused(t, writer.SecretID, "DELETE", tokenPath+"/"+writer.AccessorID, "", 400, "Deletion of the request's authorization token is not permitted")
	s.expectRefused(t, "root", "DELETE", tokenPath+"/"+root.AccessorID, "", 400, "Deletion of the request's authorization token is not permitted")
	s.expectRefused(t, "root", "DELETE", tokenPath+"/"+otherID, "", 404, "Cannot find token to delete")

	victim := s.token(t, `{"Description":"victim"}`)
	s.mustAs(t, victim.SecretID, "GET", tokenPath+"/self", "")
	expectJSON(t, s.mustAs(t, writer.SecretID, "DELETE", tokenPath+"/"+victim.AccessorID, ""), "true")
	expectError(t, s.as(t, victim.SecretID, "GET", tokenPath+"/self", ""), 403, selfNotFound)
	expectError(t, s.as(t, "root", "GET", tokenPath+"/"+victim.AccessorID, ""), 404, "Requested token does not exist: ACL not found")
	// Another management token may delete the first one.
	other := s.token(t, `{"Policies":[{"Name":"global-management"}]}`)
	expectJSON(t, s.mustAs(t, other.SecretID, "DELETE", tokenPath+"/"+root.AccessorID, ""), "true")
	expectError(t, s.as(t, "root", "GET", tokenPath+"/self", ""), 403, selfNotFound)
}

func TestACLBootstrap(t *testing.T) {
	t.Run("once", func(t *testing.T) {
		s := acxStart(t, "", servertest.ACL(""))
		// A dev agent gives no bootstrap hint.
		expectError(t, s.as(t, "", "GET", "/v1/acl/policies", ""), 403, anonymousDeny("acl:read"))

		resp := s.mustAs(t, "", "PUT", "/v1/acl/bootstrap", "")
		expectKeys(t, resp.Body, "AccessorID", "SecretID", "Description", "Policies", "Local", "CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
		var boot state.ACLToken
		resp.JSON(t, &boot)
		if boot.Description != "Bootstrap Token (Global Management)" || !uuidV4.MatchString(boot.SecretID) ||
			!reflect.DeepEqual(boot.Policies, []state.ACLLink{{ID: globalManagementID, Name: "global-management"}}) {
			t.Errorf("bootstrap token %+v", boot)
		}
		// It is a management token.
		s.mustAs(t, boot.SecretID, "GET", "/v1/snapshot", "")
		s.mustAs(t, boot.SecretID, "PUT", policyPath, `{"Name":"p"}`)
		expectJSON(t, s.mustAs(t, boot.SecretID, "GET", tokenPath+"/self", ""), resp.Body)

		reset := fmt.Sprintf(resetIndexFmt, boot.CreateIndex)
		s.expectRefused(t, "", "PUT", "/v1/acl/bootstrap", "", 403, reset)
		s.expectRefused(t, boot.SecretID, "PUT", "/v1/acl/bootstrap", "", 403, reset)
	})

	t.Run("concurrent", func(t *testing.T) {
		s := acxStart(t, "", servertest.ACL(""))
		const n = 8
		var wg sync.WaitGroup
		resps := make([]*servertest.Response, n)
		for i := range resps {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				resps[i] = s.Do(t, "PUT", "/v1/acl/bootstrap", "")
			}(i)
		}
		wg.Wait()
		won := 0
		for _, r := range resps {
			switch {
			case r.Status == 200:
				won++
			case r.Status == 403 && strings.HasPrefix(r.Body, "Permission denied: ACL bootstrap no longer allowed (reset index: "):
			default:
				t.Errorf("bootstrap answered %s", r)
			}
		}
		if won != 1 {
			t.Errorf("%d of %d concurrent bootstraps succeeded, want exactly 1", won, n)
		}
	})

	t.Run("after an initial management token", func(t *testing.T) {
		s := aclServer(t)
		var root state.ACLToken
		s.must(t, "GET", tokenPath+"/self", "").JSON(t, &root)
		if root.Description != "Initial Management Token" {
			t.Errorf("initial token %+v", root)
		}
		s.expectRefused(t, "", "PUT", "/v1/acl/bootstrap", "", 403, fmt.Sprintf(resetIndexFmt, root.CreateIndex))
	})

	t.Run("ACLs off", func(t *testing.T) {
		s := acxStart(t, "")
		s.expectRefused(t, "", "PUT", "/v1/acl/bootstrap", "", 401, aclDisabled)
		s.expectRefused(t, "", "GET", tokenPath+"/self", "", 401, aclDisabled)
	})
}

func TestACLRoleCRUD(t *testing.T) {
	s := aclServer(t)
	writer := s.policy(t, "writer", `acl = "write"`)

	resp := s.must(t, "PUT", rolePath, `{"Name":"writers","Description":"w","Policies":[{"Name":"writer"}]}`)
	expectKeys(t, resp.Body, "ID", "Name", "Description", "Policies", "Hash", "CreateIndex", "ModifyIndex")
	var role state.ACLRole
	resp.JSON(t, &role)
	if !uuidV4.MatchString(role.ID) || !reflect.DeepEqual(role.Policies, []state.ACLLink{{ID: writer.ID, Name: "writer"}}) ||
		len(role.Hash) != 32 || role.CreateIndex == 0 || role.CreateIndex != role.ModifyIndex {
		t.Errorf("role %+v", role)
	}
	expectJSON(t, s.must(t, "GET", rolePath+"/"+role.ID, ""), resp.Body)
	expectJSON(t, s.must(t, "GET", rolePath+"/name/writers", ""), resp.Body)

	empty := s.must(t, "PUT", rolePath, `{"Name":"empty"}`)
	expectKeys(t, empty.Body, "ID", "Name", "Description", "Hash", "CreateIndex", "ModifyIndex")
	withIDs := s.must(t, "PUT", rolePath, `{"Name":"ids","ServiceIdentities":[{"ServiceName":"web"}],"NodeIdentities":[{"NodeName":"n1","Datacenter":"dc1"}]}`)
	expectKeys(t, withIDs.Body, "ID", "Name", "Description", "ServiceIdentities", "NodeIdentities", "Hash", "CreateIndex", "ModifyIndex")

	var listed []state.ACLRole
	s.must(t, "GET", "/v1/acl/roles", "").JSON(t, &listed)
	if len(listed) != 3 {
		t.Errorf("roles: %+v", listed)
	}
	for i := 1; i < len(listed); i++ {
		if listed[i-1].ID >= listed[i].ID {
			t.Errorf("roles not listed by ID: %+v", listed)
		}
	}
	s.must(t, "GET", "/v1/acl/roles?policy="+writer.ID, "").JSON(t, &listed)
	if len(listed) != 1 || listed[0].ID != role.ID {
		t.Errorf("roles?policy=: %+v", listed)
	}

	tests := []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"duplicate name", "PUT", rolePath, `{"Name":"writers"}`, 400, `Invalid Role: A Role with Name "writers" already exists`},
		{"no name", "PUT", rolePath, `{}`, 400, "Invalid Role: no Name is set"},
		{"bad name", "PUT", rolePath, `{"Name":"a/b"}`, 400, "Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed"},
		{"unknown policy", "PUT", rolePath, `{"Name":"x","Policies":[{"Name":"nope"}]}`, 400, `No such ACL policy with name "nope"`},
		{"ID mismatch", "PUT", rolePath + "/" + role.ID, fmt.Sprintf(`{"ID":%s,"Name":"writers"}`, js(otherID)), 400, "Role ID in URL and payload do not match"},
		{"update unknown", "PUT", rolePath + "/" + otherID, `{"Name":"ghost"}`, 404, "Cannot find role " + otherID},
		{"read unknown", "GET", rolePath + "/" + otherID, "", 404, "Requested role does not exist: ACL not found"},
		{"delete unknown", "DELETE", rolePath + "/" + otherID, "", 404, "Cannot find role to delete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.expectRefused(t, "root", tc.method, tc.path, tc.body, tc.status, tc.msg)
		})
	}

	// A token linked to the role has the role's policies' permissions,
	// and they follow the role at once.
	tok := s.token(t, `{"Description":"via role","Roles":[{"Name":"writers"}]}`)
	s.mustAs(t, tok.SecretID, "PUT", rulePath, minimalBody)
	var upd state.ACLRole
	s.must(t, "PUT", rolePath+"/"+role.ID, `{"Name":"writers"}`).JSON(t, &upd)
	if upd.CreateIndex != role.CreateIndex || upd.ModifyIndex <= role.ModifyIndex || len(upd.Policies) != 0 {
		t.Errorf("role update: %+v", upd)
	}
	expectError(t, s.as(t, tok.SecretID, "PUT", rulePath, minimalBody), 403, tokenDeny(tok.AccessorID, "acl:write"))
	s.must(t, "PUT", rolePath+"/"+role.ID, `{"Name":"writers","Policies":[{"ID":"`+writer.ID+`"}]}`)
	s.mustAs(t, tok.SecretID, "PUT", rulePath, minimalBody)

	expectJSON(t, s.must(t, "DELETE", rolePath+"/"+role.ID, ""), "true")
	expectError(t, s.as(t, tok.SecretID, "PUT", rulePath, minimalBody), 403, tokenDeny(tok.AccessorID, "acl:write"))
	expectError(t, s.as(t, "root", "GET", rolePath+"/name/writers", ""), 404, "Requested role does not exist: ACL not found")
	// The token no longer lists the deleted role.
	tokResp := s.must(t, "GET", tokenPath+"/"+tok.AccessorID, "")
	expectKeys(t, tokResp.Body, "AccessorID", "SecretID", "Description", "Local", "CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
}

// TestACLPermissionsFollowPolicies: a change to a policy's rules, or its
// deletion, changes what its tokens may do on the very next request.
func TestACLPermissionsFollowPolicies(t *testing.T) {
	s := aclServer(t)
	p := s.policy(t, "p", `acl = "write"`)
	tok := s.token(t, `{"Policies":[{"Name":"p"}]}`)
	setRules := func(rules string) {
		s.must(t, "PUT", policyPath+"/"+p.ID, fmt.Sprintf(`{"Name":"p","Rules":%s}`, js(rules)))
	}

	s.mustAs(t, tok.SecretID, "PUT", rulePath, minimalBody)
	setRules(`acl = "read"`)
	expectError(t, s.as(t, tok.SecretID, "PUT", rulePath, minimalBody), 403, tokenDeny(tok.AccessorID, "acl:write"))
	s.mustAs(t, tok.SecretID, "GET", rulesPath, "")
	setRules(`acl = "deny"`)
	expectError(t, s.as(t, tok.SecretID, "GET", rulesPath, ""), 403, tokenDeny(tok.AccessorID, "acl:read"))
	setRules(`acl = "write"`)
	s.mustAs(t, tok.SecretID, "PUT", rulePath, minimalBody)

	// A deny in a second policy wins over the first's write.
	s.policy(t, "deny", `acl = "deny"`)
	s.must(t, "PUT", tokenPath+"/"+tok.AccessorID, `{"Policies":[{"Name":"p"},{"Name":"deny"}]}`)
	expectError(t, s.as(t, tok.SecretID, "GET", rulesPath, ""), 403, tokenDeny(tok.AccessorID, "acl:read"))
	s.must(t, "PUT", tokenPath+"/"+tok.AccessorID, `{"Policies":[{"Name":"p"}]}`)
	s.mustAs(t, tok.SecretID, "GET", rulesPath, "")

	// Deleted: the permission is gone at once, and so is the link.
	expectJSON(t, s.must(t, "DELETE", policyPath+"/"+p.ID, ""), "true")
	expectError(t, s.as(t, tok.SecretID, "GET", rulesPath, ""), 403, tokenDeny(tok.AccessorID, "acl:read"))
	expectKeys(t, s.must(t, "GET", tokenPath+"/"+tok.AccessorID, "").Body,
		"AccessorID", "SecretID", "Description", "Local", "CreateTime", "Hash", "Namespace", "CreateIndex", "ModifyIndex")
	// A new policy with the same name is a different policy: no permission comes back.
	s.policy(t, "p", `acl = "write"`)
	expectError(t, s.as(t, tok.SecretID, "GET", rulesPath, ""), 403, tokenDeny(tok.AccessorID, "acl:read"))

	// The anonymous token has the policies attached to it.
	s.policy(t, "anon", `acl = "read"`)
	s.must(t, "PUT", tokenPath+"/"+state.AnonymousTokenID, `{"Description":"Anonymous Token","Policies":[{"Name":"anon"}]}`)
	s.mustAs(t, "", "GET", rulesPath, "")
	expectError(t, s.as(t, "", "PUT", rulePath, minimalBody), 403, anonymousDeny("acl:write"))
}

// TestACLTokenNamespace: a token's namespace is step 3 of namespace
// resolution (design §3, §7): after the body, ns and the header, before
// default.
func TestACLTokenNamespace(t *testing.T) {
	s := aclServer(t)
	tok := s.tokenWithRules(t, "team1-writer", `acl = "write"`, `,"Namespace":"team1"`)
	if tok.Namespace != "team1" {
		t.Fatalf("token namespace %q", tok.Namespace)
	}
	as := func(method, path, body string, headers ...string) *servertest.Response {
		t.Helper()
		resp := s.Do(t, method, path, body, append([]string{"X-Service-Token", tok.SecretID}, headers...)...)
		if resp.Status != 200 {
			t.Fatalf("%s %s: %s", method, path, resp)
		}
		return resp
	}
	nsOf := func(resp *servertest.Response) string {
		var r rule
		resp.JSON(t, &r)
		return r.Namespace
	}
	inTeam1 := as("PUT", rulePath, minimalBody)
	if ns := nsOf(inTeam1); ns != "team1" {
		t.Errorf("rule created by a team1 token without a namespace landed in %q, want team1", ns)
	}
	if ns := nsOf(as("PUT", rulePath+"?ns=other", minimalBody)); ns != "other" {
		t.Errorf("?ns=other: landed in %q", ns)
	}
	if ns := nsOf(as("PUT", rulePath, minimalBody, "X-Service-Namespace", "hdr")); ns != "hdr" {
		t.Errorf("X-Service-Namespace: landed in %q", ns)
	}
	if ns := nsOf(as("PUT", rulePath+"?ns=other", `{"AuthMethod":"m","BindType":"service","BindName":"web","Namespace":"body"}`)); ns != "body" {
		t.Errorf("body Namespace: landed in %q", ns)
	}
	// The management token (namespace default) creates in default.
	var def rule
	s.must(t, "PUT", rulePath, minimalBody).JSON(t, &def)
	if def.Namespace != "default" {
		t.Errorf("management token's rule landed in %q", def.Namespace)
	}

	// Reads and lists look in team1 too.
	var listed []rule
	as("GET", rulesPath, "").JSON(t, &listed)
	if len(listed) != 1 || listed[0].Namespace != "team1" {
		t.Errorf("list by the team1 token: %+v", listed)
	}
	expectError(t, s.as(t, tok.SecretID, "GET", ruleURL(def.ID), ""), 404, "Requested binding rule does not exist: ACL not found")
	as("GET", ruleURL(def.ID, "?ns=default"), "")
	expectError(t, s.as(t, tok.SecretID, "DELETE", ruleURL(def.ID), ""), 404, "Cannot find binding rule to delete")

	// A token the team1 token creates without a namespace is in team1.
	var child state.ACLToken
	as("PUT", tokenPath, `{"Description":"child"}`).JSON(t, &child)
	if child.Namespace != "team1" {
		t.Errorf("token created by a team1 token is in %q", child.Namespace)
	}

	// An update keeps the token's namespace, whoever updates it, unless
	// the body names another.
	var upd state.ACLToken
	s.must(t, "PUT", tokenPath+"/"+child.AccessorID, `{"Description":"child, updated by root"}`).JSON(t, &upd)
	if upd.Namespace != "team1" {
		t.Errorf("token updated by the management token moved from team1 to %q", upd.Namespace)
	}
	s.must(t, "PUT", tokenPath+"/"+child.AccessorID, `{"Description":"moved","Namespace":"team2"}`).JSON(t, &upd)
	if upd.Namespace != "team2" {
		t.Errorf("token updated with Namespace team2 is in %q", upd.Namespace)
	}
}

// TestACLTokenSources: where the token is taken from (design §7):
// X-Service-Token, then Authorization: Bearer, then X-Consul-Token, then
// X-Nomad-Token; never the query string.
func TestACLTokenSources(t *testing.T) {
	s := aclServer(t)
	reader := s.tokenWithRules(t, "reader", `acl = "read"`, "")
	bogus := uuid.NewString()
	const path = "/v1/acl/tokens"
	allowed := acxWant{200, ""}
	notFound := acxWant{403, aclNotFound}
	anonymous := acxWant{403, anonymousDeny("acl:read")}

	tests := []struct {
		name    string
		path    string
		headers []string
		want    acxWant
	}{
		{"X-Service-Token", path, []string{"X-Service-Token", "root"}, allowed},
		{"X-Service-Token with spaces", path, []string{"X-Service-Token", "  root  "}, allowed},
		{"X-Service-Token beats a bad Bearer", path, []string{"X-Service-Token", "root", "Authorization", "Bearer " + bogus}, allowed},
		{"a bad X-Service-Token beats a good Bearer", path, []string{"X-Service-Token", bogus, "Authorization", "Bearer root"}, notFound},
		{"X-Service-Token beats X-Consul-Token", path, []string{"X-Service-Token", "root", "X-Consul-Token", bogus}, allowed},
		{"empty X-Service-Token falls through", path, []string{"X-Service-Token", "", "Authorization", "Bearer root"}, allowed},
		{"Bearer", path, []string{"Authorization", "Bearer root"}, allowed},
		{"bearer in lower case", path, []string{"Authorization", "bearer root"}, allowed},
		{"BEARER in upper case", path, []string{"Authorization", "BEARER root"}, allowed},
		{"Bearer beats a bad X-Consul-Token", path, []string{"Authorization", "Bearer root", "X-Consul-Token", bogus}, allowed},
		{"a bad Bearer beats a good X-Consul-Token", path, []string{"Authorization", "Bearer " + bogus, "X-Consul-Token", "root"}, notFound},
		{"Basic is not a token", path, []string{"Authorization", "Basic cm9vdDpyb290"}, anonymous},
		{"Basic falls through to X-Consul-Token", path, []string{"Authorization", "Basic cm9vdDpyb290", "X-Consul-Token", "root"}, allowed},
		{"empty Bearer falls through", path, []string{"Authorization", "Bearer ", "X-Consul-Token", "root"}, allowed},
		{"X-Consul-Token", path, []string{"X-Consul-Token", "root"}, allowed},
		{"X-Consul-Token beats a bad X-Nomad-Token", path, []string{"X-Consul-Token", "root", "X-Nomad-Token", bogus}, allowed},
		{"a bad X-Consul-Token beats a good X-Nomad-Token", path, []string{"X-Consul-Token", bogus, "X-Nomad-Token", "root"}, notFound},
		{"X-Nomad-Token", path, []string{"X-Nomad-Token", "root"}, allowed},
		{"?token= is ignored", path + "?token=root", nil, anonymous},
		{"?token= does not override a header", "/v1/acl/policy?token=root", []string{"X-Service-Token", reader.SecretID}, acxWant{403, tokenDeny(reader.AccessorID, "acl:write")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method, body := "GET", ""
			if strings.HasPrefix(tc.path, "/v1/acl/policy?") {
				method, body = "PUT", `{"Name":"via-query"}`
			}
			resp := s.Do(t, method, tc.path, body, tc.headers...)
			if tc.want.status == 200 {
				if resp.Status != 200 {
					t.Errorf("got %s, want 200", resp)
				}
				return
			}
			expectError(t, resp, tc.want.status, tc.want.body)
		})
	}
}

// TestACLAnonymousBootstrapHint: on a persistent agent the anonymous token's
// 403 says how to get a management token until there is one (design §7).
func TestACLAnonymousBootstrapHint(t *testing.T) {
	s := acxStart(t, "", servertest.Persistent(t.TempDir()), servertest.ACL(""))
	hinted := func(perm string) string { return anonymousDeny(perm) + bootstrapHint }
	tests := []struct{ method, path, body, perm string }{
		{"GET", "/v1/acl/policies", "", "acl:read"},
		{"GET", rulesPath, "", "acl:read"},
		{"PUT", rulePath, minimalBody, "acl:write"},
		{"PUT", policyPath, `{"Name":"p"}`, "acl:write"},
		{"PUT", tokenPath, `{}`, "acl:write"},
		{"GET", "/v1/operator/raft/configuration", "", "operator:read"},
		{"DELETE", "/v1/operator/raft/peer?id=x", "", "operator:write"},
		{"GET", "/v1/snapshot", "", "management"},
	}
	for _, tc := range tests {
		s.expectRefused(t, "", tc.method, tc.path, tc.body, 403, hinted(tc.perm))
	}
	// An unknown secret is not the anonymous token: no hint.
	s.expectRefused(t, uuid.NewString(), "GET", rulesPath, "", 403, aclNotFound)

	var boot state.ACLToken
	s.mustAs(t, "", "PUT", "/v1/acl/bootstrap", "").JSON(t, &boot)
	for _, tc := range tests {
		s.expectRefused(t, "", tc.method, tc.path, tc.body, 403, anonymousDeny(tc.perm))
	}
	// A token without the permission never gets the hint.
	s.mgmt = boot.SecretID
	tok := s.tokenWithRules(t, "ops", `operator = "read"`, "")
	s.expectRefused(t, tok.SecretID, "GET", rulesPath, "", 403, tokenDeny(tok.AccessorID, "acl:read"))

	t.Run("initial management token", func(t *testing.T) {
		// An initial management token counts as bootstrapped from the start.
		s := acxStart(t, "root", servertest.Persistent(t.TempDir()), servertest.ACL("root"))
		s.expectRefused(t, "", "GET", rulesPath, "", 403, anonymousDeny("acl:read"))
	})
}
