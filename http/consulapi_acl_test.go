package http_test

// The official Consul Go client, unmodified, against a real ACL-enabled
// server (design §2 and §7): bootstrap, policies, tokens, roles, a jwt auth
// method with binding rules, login with a JWT signed here, use of the minted
// token, and logout. Every call goes through the client's own request
// building, status checks and decoding.

import (
	"fmt"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/consul/api"
)

const anonymousTokenID = "00000000-0000-0000-0000-000000000002"

// newConsulAPIClientToken is newConsulAPIClient with a default token (the
// client sends it as X-Consul-Token on every call).
func newConsulAPIClientToken(t *testing.T, ts *servertest.TestServer, token string) *api.Client {
	t.Helper()
	newConsulAPIClient(t, ts) // clears the CONSUL_* environment
	c, err := api.NewClient(&api.Config{Address: strings.TrimPrefix(ts.URL, "http://"), Token: token})
	if err != nil {
		t.Fatalf("api.NewClient: %v", err)
	}
	return c
}

// checkQueryMeta checks what every read's QueryMeta carries on the leader.
func checkQueryMeta(t *testing.T, what string, qm *api.QueryMeta, minIndex uint64) {
	t.Helper()
	if qm == nil {
		t.Errorf("%s: no QueryMeta", what)
		return
	}
	if qm.LastIndex == 0 || qm.LastIndex < minIndex {
		t.Errorf("%s: LastIndex %d, want > 0 and >= %d", what, qm.LastIndex, minIndex)
	}
	if !qm.KnownLeader {
		t.Errorf("%s: KnownLeader false", what)
	}
	if qm.LastContact != 0 {
		t.Errorf("%s: LastContact %v on the leader", what, qm.LastContact)
	}
	if qm.RequestTime <= 0 {
		t.Errorf("%s: RequestTime %v", what, qm.RequestTime)
	}
}

func checkWriteMeta(t *testing.T, what string, wm *api.WriteMeta) {
	t.Helper()
	if wm == nil || wm.RequestTime <= 0 {
		t.Errorf("%s: WriteMeta %+v", what, wm)
	}
}

func checkIndexes(t *testing.T, what string, create, modify uint64) {
	t.Helper()
	if create == 0 || modify != create {
		t.Errorf("%s: CreateIndex %d ModifyIndex %d, want equal and non-zero", what, create, modify)
	}
}

func checkUpdatedIndexes(t *testing.T, what string, before, afterCreate, afterModify uint64, prevModify uint64) {
	t.Helper()
	if afterCreate != before || afterModify <= prevModify {
		t.Errorf("%s: indexes %d/%d after %d/%d; CreateIndex must stay, ModifyIndex must grow", what, afterCreate, afterModify, before, prevModify)
	}
}

func TestConsulAPIACLBootstrap(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(""))
	acl := newConsulAPIClient(t, ts).ACL()

	boot, wm, err := acl.Bootstrap()
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	checkWriteMeta(t, "Bootstrap", wm)
	if !consulUUIDRE.MatchString(boot.AccessorID) || !consulUUIDRE.MatchString(boot.SecretID) {
		t.Errorf("bootstrap IDs %q / %q are not v4 UUIDs", boot.AccessorID, boot.SecretID)
	}
	if boot.Description != "Bootstrap Token (Global Management)" || boot.Local || boot.Namespace != "default" ||
		len(boot.Policies) != 1 || boot.Policies[0].ID != globalManagementID || boot.Policies[0].Name != "global-management" ||
		boot.CreateTime.IsZero() || len(boot.Hash) == 0 || boot.ExpirationTime != nil {
		t.Errorf("bootstrap token %+v", boot)
	}
	checkIndexes(t, "bootstrap token", boot.CreateIndex, boot.ModifyIndex)

	// Once only: the second answer is the client's StatusError with the reset index.
	if again, _, err := acl.Bootstrap(); err == nil {
		t.Errorf("second Bootstrap succeeded: %+v", again)
	} else if want := fmt.Sprintf("Unexpected response code: 403 (Permission denied: ACL bootstrap no longer allowed (reset index: %d))", boot.CreateIndex); !strings.Contains(err.Error(), want) {
		t.Errorf("second Bootstrap: %v\nwant it to contain %q", err, want)
	}

	// The bootstrap secret works as the client's token.
	root := newConsulAPIClientToken(t, ts, boot.SecretID).ACL()
	self, qm, err := root.TokenReadSelf(nil)
	if err != nil {
		t.Fatalf("TokenReadSelf as the bootstrap token: %v", err)
	}
	checkQueryMeta(t, "TokenReadSelf", qm, 0)
	if self.AccessorID != boot.AccessorID || self.SecretID != boot.SecretID || self.CreateIndex != boot.CreateIndex {
		t.Errorf("self %+v, want %+v", self, boot)
	}
	if again, _, err := root.Bootstrap(); err == nil || !strings.Contains(err.Error(), "ACL bootstrap no longer allowed") {
		t.Errorf("Bootstrap with a management token: %+v, %v", again, err)
	}
	if _, _, err := root.PolicyCreate(&api.ACLPolicy{Name: "after-bootstrap", Rules: `acl = "read"`}, nil); err != nil {
		t.Errorf("PolicyCreate as the bootstrap token: %v", err)
	}
	// Without a token the client is the anonymous token.
	if _, _, err := acl.PolicyList(nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 403 (Permission denied: anonymous token lacks permission 'acl:read'") {
		t.Errorf("PolicyList without a token: %v", err)
	}
}

func TestConsulAPIACLPolicies(t *testing.T) {
	s := lgStart(t)
	acl := newConsulAPIClientToken(t, s.TestServer, lgMgmt).ACL()

	in := &api.ACLPolicy{Name: "readers", Description: "may read ACLs", Rules: `acl = "read"`, Datacenters: []string{"dc1"}}
	created, wm, err := acl.PolicyCreate(in, nil)
	if err != nil {
		t.Fatalf("PolicyCreate: %v", err)
	}
	checkWriteMeta(t, "PolicyCreate", wm)
	if !consulUUIDRE.MatchString(created.ID) || created.Name != in.Name || created.Description != in.Description ||
		created.Rules != in.Rules || len(created.Datacenters) != 1 || created.Datacenters[0] != "dc1" || len(created.Hash) == 0 {
		t.Errorf("created %+v from %+v", created, in)
	}
	checkIndexes(t, "created policy", created.CreateIndex, created.ModifyIndex)
	if _, _, err := acl.PolicyCreate(&api.ACLPolicy{ID: created.ID, Name: "x"}, nil); err == nil || !strings.Contains(err.Error(), "Cannot specify an ID in Policy Creation") {
		t.Errorf("PolicyCreate with an ID: %v", err)
	}
	if _, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "bad", Rules: `acl = "list"`}, nil); err == nil || !strings.Contains(err.Error(), `Unexpected response code: 400 (Invalid acl policy: "list")`) {
		t.Errorf("PolicyCreate with bad rules: %v", err)
	}

	read, qm, err := acl.PolicyRead(created.ID, nil)
	if err != nil {
		t.Fatalf("PolicyRead: %v", err)
	}
	checkQueryMeta(t, "PolicyRead", qm, created.ModifyIndex)
	if read.ID != created.ID || read.Name != created.Name || read.Rules != created.Rules || read.ModifyIndex != created.ModifyIndex || string(read.Hash) != string(created.Hash) {
		t.Errorf("read %+v, want %+v", read, created)
	}
	byName, qm, err := acl.PolicyReadByName("readers", nil)
	if err != nil || byName == nil || byName.ID != created.ID || byName.Rules != created.Rules {
		t.Fatalf("PolicyReadByName: %+v, %v", byName, err)
	}
	checkQueryMeta(t, "PolicyReadByName", qm, created.ModifyIndex)
	if gm, _, err := acl.PolicyReadByName("global-management", nil); err != nil || gm == nil || gm.ID != globalManagementID {
		t.Errorf("PolicyReadByName(global-management): %+v, %v", gm, err)
	}
	// The client turns a by-name 404 into nil without an error.
	if missing, qm, err := acl.PolicyReadByName("no-such-policy", nil); err != nil || missing != nil || qm == nil {
		t.Errorf("PolicyReadByName of a missing policy: %+v, %+v, %v", missing, qm, err)
	}

	// Update: the client sends the whole object back, Hash and indexes included.
	upd := *read
	upd.Description = "may write ACLs"
	upd.Rules = `acl = "write"`
	upd.Datacenters = nil
	updated, wm, err := acl.PolicyUpdate(&upd, nil)
	if err != nil {
		t.Fatalf("PolicyUpdate: %v", err)
	}
	checkWriteMeta(t, "PolicyUpdate", wm)
	if updated.ID != created.ID || updated.Description != upd.Description || updated.Rules != upd.Rules || len(updated.Datacenters) != 0 ||
		string(updated.Hash) == string(created.Hash) {
		t.Errorf("updated %+v", updated)
	}
	checkUpdatedIndexes(t, "PolicyUpdate", created.CreateIndex, updated.CreateIndex, updated.ModifyIndex, created.ModifyIndex)
	if _, _, err := acl.PolicyUpdate(&api.ACLPolicy{Name: "x"}, nil); err == nil || !strings.Contains(err.Error(), "Must specify an ID in Policy Update") {
		t.Errorf("PolicyUpdate without an ID: %v", err)
	}

	list, qm, err := acl.PolicyList(nil)
	if err != nil {
		t.Fatalf("PolicyList: %v", err)
	}
	checkQueryMeta(t, "PolicyList", qm, updated.ModifyIndex)
	names := map[string]*api.ACLPolicyListEntry{}
	for _, p := range list {
		names[p.Name] = p
	}
	if len(list) != 2 || names["global-management"] == nil || names["global-management"].ID != globalManagementID || names["readers"] == nil {
		t.Fatalf("PolicyList: %+v", list)
	}
	if e := names["readers"]; e.ID != created.ID || e.Description != updated.Description || e.CreateIndex != updated.CreateIndex ||
		e.ModifyIndex != updated.ModifyIndex || string(e.Hash) != string(updated.Hash) {
		t.Errorf("list entry %+v, want %+v", e, updated)
	}

	wm, err = acl.PolicyDelete(created.ID, nil)
	if err != nil {
		t.Fatalf("PolicyDelete: %v", err)
	}
	checkWriteMeta(t, "PolicyDelete", wm)
	if _, _, err := acl.PolicyRead(created.ID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Requested policy does not exist: ACL not found)") {
		t.Errorf("PolicyRead after delete: %v", err)
	}
	// PolicyDelete (unlike the other deletes) drains the body before it
	// builds its error, so the message never reaches the caller.
	if _, err := acl.PolicyDelete(created.ID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404") {
		t.Errorf("second PolicyDelete: %v", err)
	}
	if _, err := acl.PolicyDelete(globalManagementID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 400") {
		t.Errorf("PolicyDelete of global-management: %v", err)
	}
}

func TestConsulAPIACLTokens(t *testing.T) {
	ts, h := serveOwn(t, lgStart(t).TestServer, ctlhttp.Services{})
	s := &lgServer{ts}
	acl := newConsulAPIClientToken(t, s.TestServer, lgMgmt).ACL()

	readers, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "readers", Rules: `acl = "read"`}, nil)
	if err != nil {
		t.Fatalf("PolicyCreate: %v", err)
	}
	ops, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "ops", Rules: `operator = "read"`}, nil)
	if err != nil {
		t.Fatalf("PolicyCreate: %v", err)
	}
	role, _, err := acl.RoleCreate(&api.ACLRole{Name: "auditors", Policies: []*api.ACLRolePolicyLink{{Name: "ops"}}}, nil)
	if err != nil {
		t.Fatalf("RoleCreate: %v", err)
	}

	in := &api.ACLToken{
		Description:       "reader token",
		Policies:          []*api.ACLTokenPolicyLink{{Name: "readers"}},
		ServiceIdentities: []*api.ACLServiceIdentity{{ServiceName: "web", Datacenters: []string{"dc1"}}},
		NodeIdentities:    []*api.ACLNodeIdentity{{NodeName: "node-1", Datacenter: "dc1"}},
		ExpirationTTL:     time.Hour,
	}
	created, wm, err := acl.TokenCreate(in, nil)
	if err != nil {
		t.Fatalf("TokenCreate: %v", err)
	}
	checkWriteMeta(t, "TokenCreate", wm)
	if !consulUUIDRE.MatchString(created.AccessorID) || !consulUUIDRE.MatchString(created.SecretID) || created.AccessorID == created.SecretID {
		t.Errorf("token IDs %q / %q", created.AccessorID, created.SecretID)
	}
	if created.Description != in.Description || created.Local || created.AuthMethod != "" || created.Namespace != "default" || len(created.Hash) == 0 {
		t.Errorf("created %+v", created)
	}
	// A link given by name comes back resolved: ID and name.
	if len(created.Policies) != 1 || created.Policies[0].ID != readers.ID || created.Policies[0].Name != "readers" {
		t.Errorf("policy links %+v, want readers (%s)", created.Policies, readers.ID)
	}
	if len(created.ServiceIdentities) != 1 || created.ServiceIdentities[0].ServiceName != "web" || fmt.Sprint(created.ServiceIdentities[0].Datacenters) != "[dc1]" ||
		len(created.NodeIdentities) != 1 || *created.NodeIdentities[0] != (api.ACLNodeIdentity{NodeName: "node-1", Datacenter: "dc1"}) {
		t.Errorf("identities %+v %+v", created.ServiceIdentities, created.NodeIdentities)
	}
	if created.ExpirationTTL != time.Hour || created.ExpirationTime == nil || !created.ExpirationTime.Equal(created.CreateTime.Add(time.Hour)) {
		t.Errorf("expiry: TTL %v, time %v, created %v", created.ExpirationTTL, created.ExpirationTime, created.CreateTime)
	}
	if d := time.Since(created.CreateTime); d < -time.Minute || d > time.Minute {
		t.Errorf("CreateTime %v is not now", created.CreateTime)
	}
	checkIndexes(t, "created token", created.CreateIndex, created.ModifyIndex)

	// Read as a management token: the secret is shown.
	read, qm, err := acl.TokenRead(created.AccessorID, nil)
	if err != nil {
		t.Fatalf("TokenRead: %v", err)
	}
	checkQueryMeta(t, "TokenRead", qm, created.ModifyIndex)
	if read.AccessorID != created.AccessorID || read.SecretID != created.SecretID || read.ModifyIndex != created.ModifyIndex ||
		!read.ExpirationTime.Equal(*created.ExpirationTime) || len(read.Policies) != 1 || read.Policies[0].Name != "readers" {
		t.Errorf("read %+v, want %+v", read, created)
	}

	// The token itself, through the client's Token: self shows its own
	// secret; with acl:read only, other tokens' secrets are hidden.
	reader := newConsulAPIClientToken(t, s.TestServer, created.SecretID).ACL()
	self, qm, err := reader.TokenReadSelf(nil)
	if err != nil {
		t.Fatalf("TokenReadSelf: %v", err)
	}
	checkQueryMeta(t, "TokenReadSelf", qm, 0)
	if self.AccessorID != created.AccessorID || self.SecretID != created.SecretID || self.Description != created.Description {
		t.Errorf("self %+v, want %+v", self, created)
	}
	hidden, _, err := reader.TokenRead(created.AccessorID, nil)
	if err != nil || hidden.SecretID != "<hidden>" || hidden.AccessorID != created.AccessorID {
		t.Errorf("TokenRead with acl:read: %+v, %v; want SecretID <hidden>", hidden, err)
	}
	if _, _, err := reader.TokenCreate(&api.ACLToken{Description: "nope"}, nil); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("Unexpected response code: 403 (Permission denied: token with AccessorID '%s' lacks permission 'acl:write')", created.AccessorID)) {
		t.Errorf("TokenCreate with acl:read: %v", err)
	}

	// Update: the whole object goes back (TTL, expiry, CreateTime, Hash,
	// indexes, secret); links change.
	upd := *read
	upd.Description = "reader and auditor"
	upd.Policies = append(upd.Policies, &api.ACLTokenPolicyLink{ID: ops.ID})
	upd.Roles = []*api.ACLTokenRoleLink{{Name: "auditors"}}
	upd.NodeIdentities = nil
	updated, wm, err := acl.TokenUpdate(&upd, nil)
	if err != nil {
		t.Fatalf("TokenUpdate: %v", err)
	}
	checkWriteMeta(t, "TokenUpdate", wm)
	if updated.AccessorID != created.AccessorID || updated.SecretID != created.SecretID || updated.Description != upd.Description ||
		len(updated.Policies) != 2 || updated.Policies[1].ID != ops.ID || updated.Policies[1].Name != "ops" ||
		len(updated.Roles) != 1 || updated.Roles[0].ID != role.ID || updated.Roles[0].Name != "auditors" ||
		len(updated.NodeIdentities) != 0 || !updated.ExpirationTime.Equal(*created.ExpirationTime) || !updated.CreateTime.Equal(created.CreateTime) {
		t.Errorf("updated %+v", updated)
	}
	checkUpdatedIndexes(t, "TokenUpdate", created.CreateIndex, updated.CreateIndex, updated.ModifyIndex, created.ModifyIndex)
	// token/self is a blocking query like the other reads: it wakes on a
	// change to the token, and a wait that sees none answers at the old index.
	selfIdx := qm.LastIndex
	if _, sqm, err := reader.TokenReadSelf(&api.QueryOptions{WaitIndex: updated.ModifyIndex, WaitTime: 50 * time.Millisecond}); err != nil || sqm.LastIndex != updated.ModifyIndex {
		t.Errorf("TokenReadSelf with nothing new: %+v, %v; want index %d", sqm, err, updated.ModifyIndex)
	}
	woke := make(chan *api.ACLToken, 1)
	go func() {
		tok, _, err := reader.TokenReadSelf(&api.QueryOptions{WaitIndex: updated.ModifyIndex, WaitTime: 30 * time.Second})
		if err != nil {
			t.Errorf("blocking TokenReadSelf: %v", err)
		}
		woke <- tok
	}()
	waitBlocked(t, h, 1) // the update comes after token/self blocked
	again := *updated
	again.Description = "woken"
	if updated, _, err = acl.TokenUpdate(&again, nil); err != nil {
		t.Fatalf("TokenUpdate: %v", err)
	}
	select {
	case tok := <-woke:
		if tok == nil || tok.Description != "woken" || tok.ModifyIndex != updated.ModifyIndex || selfIdx >= updated.ModifyIndex {
			t.Errorf("blocking TokenReadSelf woke with %+v", tok)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("blocking TokenReadSelf did not wake on an update")
	}

	// The new permissions apply at once.
	if _, err := newConsulAPIClientToken(t, s.TestServer, created.SecretID).Operator().RaftGetConfiguration(nil); err != nil {
		t.Errorf("operator:read through the new role: %v", err)
	}

	list, qm, err := acl.TokenList(nil)
	if err != nil {
		t.Fatalf("TokenList: %v", err)
	}
	checkQueryMeta(t, "TokenList", qm, updated.ModifyIndex)
	byAccessor := map[string]*api.ACLTokenListEntry{}
	for _, e := range list {
		byAccessor[e.AccessorID] = e
	}
	if len(list) != 3 || byAccessor[anonymousTokenID] == nil || byAccessor[created.AccessorID] == nil {
		t.Fatalf("TokenList: %d tokens %+v, want the management, anonymous and created ones", len(list), byAccessor)
	}
	if e := byAccessor[created.AccessorID]; e.SecretID != created.SecretID || e.Description != updated.Description ||
		e.ModifyIndex != updated.ModifyIndex || len(e.Roles) != 1 || e.Roles[0].Name != "auditors" {
		t.Errorf("list entry %+v", e)
	}
	if rl, _, err := reader.TokenList(nil); err != nil {
		t.Errorf("TokenList with acl:read: %v", err)
	} else {
		for _, e := range rl {
			if e.SecretID != "<hidden>" {
				t.Errorf("TokenList with acl:read shows the secret of %s", e.AccessorID)
			}
		}
	}
	filtered, _, err := acl.TokenListFiltered(api.ACLTokenFilterOptions{Role: role.ID}, nil)
	if err != nil || len(filtered) != 1 || filtered[0].AccessorID != created.AccessorID {
		t.Errorf("TokenListFiltered by role: %+v, %v", filtered, err)
	}

	wm, err = acl.TokenDelete(created.AccessorID, nil)
	if err != nil {
		t.Fatalf("TokenDelete: %v", err)
	}
	checkWriteMeta(t, "TokenDelete", wm)
	if _, _, err := acl.TokenRead(created.AccessorID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Requested token does not exist: ACL not found)") {
		t.Errorf("TokenRead after delete: %v", err)
	}
	if _, _, err := reader.TokenReadSelf(nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 403 (token does not exist: ACL not found)") {
		t.Errorf("TokenReadSelf with a deleted token: %v", err)
	}
	if _, err := acl.TokenDelete(created.AccessorID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Cannot find token to delete)") {
		t.Errorf("second TokenDelete: %v", err)
	}
}

func TestConsulAPIACLRoles(t *testing.T) {
	s := lgStart(t)
	acl := newConsulAPIClientToken(t, s.TestServer, lgMgmt).ACL()

	readers, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "readers", Rules: `acl = "read"`}, nil)
	if err != nil {
		t.Fatalf("PolicyCreate: %v", err)
	}
	in := &api.ACLRole{
		Name:              "web-role",
		Description:       "the web tier",
		Policies:          []*api.ACLRolePolicyLink{{Name: "readers"}},
		ServiceIdentities: []*api.ACLServiceIdentity{{ServiceName: "web"}},
		NodeIdentities:    []*api.ACLNodeIdentity{{NodeName: "web-1", Datacenter: "dc1"}},
	}
	created, wm, err := acl.RoleCreate(in, nil)
	if err != nil {
		t.Fatalf("RoleCreate: %v", err)
	}
	checkWriteMeta(t, "RoleCreate", wm)
	if !consulUUIDRE.MatchString(created.ID) || created.Name != in.Name || created.Description != in.Description || len(created.Hash) == 0 ||
		len(created.Policies) != 1 || created.Policies[0].ID != readers.ID || created.Policies[0].Name != "readers" ||
		len(created.ServiceIdentities) != 1 || created.ServiceIdentities[0].ServiceName != "web" ||
		len(created.NodeIdentities) != 1 || *created.NodeIdentities[0] != *in.NodeIdentities[0] {
		t.Errorf("created %+v", created)
	}
	checkIndexes(t, "created role", created.CreateIndex, created.ModifyIndex)
	if _, _, err := acl.RoleCreate(&api.ACLRole{Name: "bad", Policies: []*api.ACLRolePolicyLink{{Name: "missing"}}}, nil); err == nil ||
		!strings.Contains(err.Error(), `Unexpected response code: 400 (No such ACL policy with name "missing")`) {
		t.Errorf("RoleCreate with a missing policy: %v", err)
	}

	read, qm, err := acl.RoleRead(created.ID, nil)
	if err != nil || read == nil {
		t.Fatalf("RoleRead: %+v, %v", read, err)
	}
	checkQueryMeta(t, "RoleRead", qm, created.ModifyIndex)
	if read.ID != created.ID || read.ModifyIndex != created.ModifyIndex || len(read.Policies) != 1 || read.Policies[0].Name != "readers" {
		t.Errorf("read %+v, want %+v", read, created)
	}
	byName, qm, err := acl.RoleReadByName("web-role", nil)
	if err != nil || byName == nil || byName.ID != created.ID {
		t.Fatalf("RoleReadByName: %+v, %v", byName, err)
	}
	checkQueryMeta(t, "RoleReadByName", qm, created.ModifyIndex)
	if missing, qm, err := acl.RoleRead("6f0e5c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b", nil); err != nil || missing != nil || qm == nil || qm.LastIndex == 0 {
		t.Errorf("RoleRead of a missing role: %+v, %+v, %v", missing, qm, err)
	}
	if missing, _, err := acl.RoleReadByName("nobody", nil); err != nil || missing != nil {
		t.Errorf("RoleReadByName of a missing role: %+v, %v", missing, err)
	}

	upd := *read
	upd.Name = "web-tier"
	upd.Description = "renamed"
	upd.Policies = nil
	upd.ServiceIdentities = append(upd.ServiceIdentities, &api.ACLServiceIdentity{ServiceName: "api", Datacenters: []string{"dc2"}})
	updated, wm, err := acl.RoleUpdate(&upd, nil)
	if err != nil {
		t.Fatalf("RoleUpdate: %v", err)
	}
	checkWriteMeta(t, "RoleUpdate", wm)
	if updated.ID != created.ID || updated.Name != "web-tier" || updated.Description != "renamed" || len(updated.Policies) != 0 ||
		len(updated.ServiceIdentities) != 2 || updated.ServiceIdentities[1].ServiceName != "api" {
		t.Errorf("updated %+v", updated)
	}
	checkUpdatedIndexes(t, "RoleUpdate", created.CreateIndex, updated.CreateIndex, updated.ModifyIndex, created.ModifyIndex)
	if old, _, err := acl.RoleReadByName("web-role", nil); err != nil || old != nil {
		t.Errorf("the old name still finds %+v, %v", old, err)
	}

	second, _, err := acl.RoleCreate(&api.ACLRole{Name: "second", Policies: []*api.ACLRolePolicyLink{{ID: readers.ID}}}, nil)
	if err != nil {
		t.Fatalf("RoleCreate: %v", err)
	}
	list, qm, err := acl.RoleList(nil)
	if err != nil {
		t.Fatalf("RoleList: %v", err)
	}
	checkQueryMeta(t, "RoleList", qm, second.ModifyIndex)
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	if len(list) != 2 || list[0].Name != "second" || list[0].ID != second.ID || list[0].Policies[0].Name != "readers" ||
		list[1].Name != "web-tier" || list[1].ModifyIndex != updated.ModifyIndex {
		t.Errorf("RoleList: %+v", list)
	}

	wm, err = acl.RoleDelete(created.ID, nil)
	if err != nil {
		t.Fatalf("RoleDelete: %v", err)
	}
	checkWriteMeta(t, "RoleDelete", wm)
	if gone, qm, err := acl.RoleRead(created.ID, nil); err != nil || gone != nil || qm.LastIndex <= second.ModifyIndex {
		t.Errorf("RoleRead after delete: %+v, %+v, %v", gone, qm, err)
	}
	if _, err := acl.RoleDelete(created.ID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Cannot find role to delete)") {
		t.Errorf("second RoleDelete: %v", err)
	}
}

// TestConsulAPIACLAuthMethodLogin: a jwt auth method and its binding rules
// through the client, then a login with a JWT signed here, the minted token
// at work, and logout.
func TestConsulAPIACLAuthMethodLogin(t *testing.T) {
	s := lgStart(t)
	acl := newConsulAPIClientToken(t, s.TestServer, lgMgmt).ACL()
	key := newLgKey(t, jose.RS256)

	readers, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "readers", Rules: `acl = "read"`}, nil)
	if err != nil {
		t.Fatalf("PolicyCreate: %v", err)
	}
	role, _, err := acl.RoleCreate(&api.ACLRole{Name: "payments-readers", Policies: []*api.ACLRolePolicyLink{{ID: readers.ID}}}, nil)
	if err != nil {
		t.Fatalf("RoleCreate: %v", err)
	}

	in := &api.ACLAuthMethod{
		Name:        "corp-jwt",
		Type:        "jwt",
		DisplayName: "Corp SSO",
		MaxTokenTTL: 10 * time.Minute,
		Config: map[string]any{
			"JWTValidationPubKeys": []string{key.pem(t)},
			"BoundIssuer":          "https://issuer.test",
			"BoundAudiences":       []string{"ctlplane"},
			"ClaimMappings":        map[string]string{"sub": "name", "team": "team"},
			"ListClaimMappings":    map[string]string{"groups": "groups"},
		},
	}
	method, wm, err := acl.AuthMethodCreate(in, nil)
	if err != nil {
		t.Fatalf("AuthMethodCreate: %v", err)
	}
	checkWriteMeta(t, "AuthMethodCreate", wm)
	if method.Name != "corp-jwt" || method.Type != "jwt" || method.DisplayName != "Corp SSO" || method.MaxTokenTTL != 10*time.Minute ||
		method.Namespace != "default" || method.TokenLocality != "" {
		t.Errorf("created %+v", method)
	}
	if keys, _ := method.Config["JWTValidationPubKeys"].([]any); len(keys) != 1 || keys[0] != key.pem(t) {
		t.Errorf("created Config keys %#v", method.Config["JWTValidationPubKeys"])
	}
	if m, _ := method.Config["ClaimMappings"].(map[string]any); len(m) != 2 || m["sub"] != "name" || m["team"] != "team" {
		t.Errorf("created ClaimMappings %#v", method.Config["ClaimMappings"])
	}
	checkIndexes(t, "created method", method.CreateIndex, method.ModifyIndex)
	if _, _, err := acl.AuthMethodCreate(&api.ACLAuthMethod{Name: "bad", Type: "jwt", MaxTokenTTL: 48 * time.Hour,
		Config: map[string]any{"JWTValidationPubKeys": []string{key.pem(t)}}}, nil); err == nil ||
		!strings.Contains(err.Error(), "Unexpected response code: 400 (MaxTokenTTL 48h0m0s cannot be more than 24h0m0s)") {
		t.Errorf("AuthMethodCreate with a long MaxTokenTTL: %v", err)
	}

	read, qm, err := acl.AuthMethodRead("corp-jwt", nil)
	if err != nil || read == nil {
		t.Fatalf("AuthMethodRead: %+v, %v", read, err)
	}
	checkQueryMeta(t, "AuthMethodRead", qm, method.ModifyIndex)
	if read.Name != method.Name || read.MaxTokenTTL != method.MaxTokenTTL || read.ModifyIndex != method.ModifyIndex || read.Config["BoundIssuer"] != "https://issuer.test" {
		t.Errorf("read %+v, want %+v", read, method)
	}

	// Update: the client sends the object back (MaxTokenTTL as "10m0s").
	upd := *read
	upd.Description = "corporate SSO"
	upd.TokenLocality = "global"
	updated, wm, err := acl.AuthMethodUpdate(&upd, nil)
	if err != nil {
		t.Fatalf("AuthMethodUpdate: %v", err)
	}
	checkWriteMeta(t, "AuthMethodUpdate", wm)
	if updated.Description != "corporate SSO" || updated.TokenLocality != "global" || updated.MaxTokenTTL != 10*time.Minute || updated.DisplayName != "Corp SSO" {
		t.Errorf("updated %+v", updated)
	}
	checkUpdatedIndexes(t, "AuthMethodUpdate", method.CreateIndex, updated.CreateIndex, updated.ModifyIndex, method.ModifyIndex)

	methods, qm, err := acl.AuthMethodList(nil)
	if err != nil {
		t.Fatalf("AuthMethodList: %v", err)
	}
	checkQueryMeta(t, "AuthMethodList", qm, updated.ModifyIndex)
	if len(methods) != 1 || methods[0].Name != "corp-jwt" || methods[0].Type != "jwt" || methods[0].MaxTokenTTL != 10*time.Minute ||
		methods[0].TokenLocality != "global" || methods[0].Description != "corporate SSO" || methods[0].ModifyIndex != updated.ModifyIndex {
		t.Errorf("AuthMethodList: %+v", methods)
	}

	// Binding rules against the method: a service rule for the payments
	// team, a role rule for admins, a node rule that this login misses.
	svcRule, wm, err := acl.BindingRuleCreate(&api.ACLBindingRule{Description: "payments services", AuthMethod: "corp-jwt",
		Selector: `value.team == "Payments"`, BindType: api.BindingRuleBindTypeService, BindName: "svc-${value.name}"}, nil)
	if err != nil {
		t.Fatalf("BindingRuleCreate: %v", err)
	}
	checkWriteMeta(t, "BindingRuleCreate", wm)
	if !consulUUIDRE.MatchString(svcRule.ID) || svcRule.AuthMethod != "corp-jwt" || svcRule.Namespace != "default" || svcRule.BindName != "svc-${value.name}" {
		t.Errorf("created rule %+v", svcRule)
	}
	checkIndexes(t, "created rule", svcRule.CreateIndex, svcRule.ModifyIndex)
	roleRule, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "corp-jwt", Selector: `"admin" in list.groups`,
		BindType: api.BindingRuleBindTypeRole, BindName: "payments-readers"}, nil)
	if err != nil {
		t.Fatalf("BindingRuleCreate (role): %v", err)
	}
	nodeRule, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "corp-jwt", Selector: `value.team == "Infra"`,
		BindType: api.BindingRuleBindTypeNode, BindName: "node-${value.name}"}, nil)
	if err != nil {
		t.Fatalf("BindingRuleCreate (node): %v", err)
	}
	// Checked against the method's identity fields.
	if _, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "corp-jwt", Selector: `value.nope == "x"`,
		BindType: api.BindingRuleBindTypeService, BindName: "x"}, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 400 (") {
		t.Errorf("BindingRuleCreate with an unknown selector field: %v", err)
	}

	gotRule, qm, err := acl.BindingRuleRead(svcRule.ID, nil)
	if err != nil || gotRule == nil || *gotRule != *svcRule {
		t.Fatalf("BindingRuleRead: %+v, %v; want %+v", gotRule, err, svcRule)
	}
	checkQueryMeta(t, "BindingRuleRead", qm, nodeRule.ModifyIndex)
	updRule := *gotRule
	updRule.Description = "payments services, lowercased names"
	updatedRule, wm, err := acl.BindingRuleUpdate(&updRule, nil)
	if err != nil {
		t.Fatalf("BindingRuleUpdate: %v", err)
	}
	checkWriteMeta(t, "BindingRuleUpdate", wm)
	if updatedRule.Description != updRule.Description || updatedRule.BindName != svcRule.BindName {
		t.Errorf("updated rule %+v", updatedRule)
	}
	checkUpdatedIndexes(t, "BindingRuleUpdate", svcRule.CreateIndex, updatedRule.CreateIndex, updatedRule.ModifyIndex, nodeRule.ModifyIndex)
	rules, qm, err := acl.BindingRuleList("corp-jwt", nil)
	if err != nil {
		t.Fatalf("BindingRuleList: %v", err)
	}
	checkQueryMeta(t, "BindingRuleList", qm, updatedRule.ModifyIndex)
	wantIDs := []string{svcRule.ID, roleRule.ID, nodeRule.ID}
	sort.Strings(wantIDs)
	if len(rules) != 3 || rules[0].ID != wantIDs[0] || rules[1].ID != wantIDs[1] || rules[2].ID != wantIDs[2] {
		t.Errorf("BindingRuleList: %+v, want IDs %v", rules, wantIDs)
	}

	// Login with a JWT signed here; no token is needed.
	anon := newConsulAPIClient(t, s.TestServer).ACL()
	bearer := key.sign(t, claims(nil))
	tok, wm, err := anon.Login(&api.ACLLoginParams{AuthMethod: "corp-jwt", BearerToken: bearer, Meta: map[string]string{"pod": "web-0"}}, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	checkWriteMeta(t, "Login", wm)
	if !consulUUIDRE.MatchString(tok.AccessorID) || !consulUUIDRE.MatchString(tok.SecretID) || tok.AuthMethod != "corp-jwt" || tok.Local ||
		tok.Description != `token created via login: {"pod":"web-0"}` || tok.Namespace != "default" || len(tok.Policies) != 0 {
		t.Errorf("login token %+v", tok)
	}
	if len(tok.ServiceIdentities) != 1 || tok.ServiceIdentities[0].ServiceName != "svc-web-frontend" || len(tok.NodeIdentities) != 0 {
		t.Errorf("login identities %+v %+v, want service svc-web-frontend only", tok.ServiceIdentities, tok.NodeIdentities)
	}
	if len(tok.Roles) != 1 || tok.Roles[0].ID != role.ID || tok.Roles[0].Name != "payments-readers" {
		t.Errorf("login roles %+v, want payments-readers (%s)", tok.Roles, role.ID)
	}
	if tok.ExpirationTime == nil || !tok.ExpirationTime.Equal(tok.CreateTime.Add(10*time.Minute)) {
		t.Errorf("login expiry %v, created %v; want MaxTokenTTL later", tok.ExpirationTime, tok.CreateTime)
	}
	checkIndexes(t, "login token", tok.CreateIndex, tok.ModifyIndex)

	// Refusals come back as the client's StatusError.
	if _, _, err := anon.Login(&api.ACLLoginParams{AuthMethod: "corp-jwt", BearerToken: key.sign(t, claims(map[string]any{"team": "Sales", "groups": []string{"dev"}}))}, nil); err == nil ||
		!strings.Contains(err.Error(), "Unexpected response code: 403 (Permission denied)") {
		t.Errorf("Login that no rule binds: %v", err)
	}
	if _, _, err := anon.Login(&api.ACLLoginParams{AuthMethod: "corp-jwt", BearerToken: newLgKey(t, jose.RS256).sign(t, claims(nil))}, nil); err == nil ||
		!strings.Contains(err.Error(), "Unexpected response code: 401 (") {
		t.Errorf("Login with a JWT signed by another key: %v", err)
	}
	if _, _, err := anon.Login(&api.ACLLoginParams{AuthMethod: "no-such-method", BearerToken: bearer}, nil); err == nil ||
		!strings.Contains(err.Error(), `Unexpected response code: 403 (ACL not found: auth method "no-such-method" not found)`) {
		t.Errorf("Login with an unknown method: %v", err)
	}

	// The minted token at work, as the client's Token.
	user := newConsulAPIClientToken(t, s.TestServer, tok.SecretID).ACL()
	self, qm, err := user.TokenReadSelf(nil)
	if err != nil {
		t.Fatalf("TokenReadSelf as the login token: %v", err)
	}
	checkQueryMeta(t, "TokenReadSelf", qm, 0)
	if self.AccessorID != tok.AccessorID || self.SecretID != tok.SecretID || self.AuthMethod != "corp-jwt" {
		t.Errorf("self %+v, want %+v", self, tok)
	}
	// acl:read through its role.
	if list, qm, err := user.BindingRuleList("", nil); err != nil || len(list) != 3 {
		t.Errorf("BindingRuleList as the login token: %d rules, %v", len(list), err)
	} else {
		checkQueryMeta(t, "BindingRuleList as the login token", qm, 0)
	}
	if _, _, err := user.PolicyCreate(&api.ACLPolicy{Name: "nope"}, nil); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("Unexpected response code: 403 (Permission denied: token with AccessorID '%s' lacks permission 'acl:write')", tok.AccessorID)) {
		t.Errorf("PolicyCreate as the login token: %v", err)
	}
	if logins, _, err := acl.TokenListFiltered(api.ACLTokenFilterOptions{AuthMethod: "corp-jwt"}, nil); err != nil || len(logins) != 1 || logins[0].AccessorID != tok.AccessorID {
		t.Errorf("TokenListFiltered by auth method: %+v, %v", logins, err)
	}

	// Logout: with the client's own token, then the token is gone.
	wm, err = user.Logout(nil)
	if err != nil {
		t.Fatalf("Logout: %v", err)
	}
	checkWriteMeta(t, "Logout", wm)
	if _, _, err := user.TokenReadSelf(nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 403 (token does not exist: ACL not found)") {
		t.Errorf("TokenReadSelf after logout: %v", err)
	}
	if _, err := user.Logout(nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 403 (ACL not found)") {
		t.Errorf("second Logout: %v", err)
	}
	if _, err := acl.Logout(nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 403 (Permission denied: token wasn't created via login)") {
		t.Errorf("Logout of the management token: %v", err)
	}

	// Delete a rule, then the method (which takes the other rules and any
	// login tokens with it).
	second, _, err := anon.Login(&api.ACLLoginParams{AuthMethod: "corp-jwt", BearerToken: bearer}, nil)
	if err != nil {
		t.Fatalf("second Login: %v", err)
	}
	wm, err = acl.BindingRuleDelete(nodeRule.ID, nil)
	if err != nil {
		t.Fatalf("BindingRuleDelete: %v", err)
	}
	checkWriteMeta(t, "BindingRuleDelete", wm)
	if gone, _, err := acl.BindingRuleRead(nodeRule.ID, nil); err != nil || gone != nil {
		t.Errorf("BindingRuleRead after delete: %+v, %v", gone, err)
	}
	wm, err = acl.AuthMethodDelete("corp-jwt", nil)
	if err != nil {
		t.Fatalf("AuthMethodDelete: %v", err)
	}
	checkWriteMeta(t, "AuthMethodDelete", wm)
	if gone, qm, err := acl.AuthMethodRead("corp-jwt", nil); err != nil || gone != nil || qm == nil || qm.LastIndex == 0 {
		t.Errorf("AuthMethodRead after delete: %+v, %+v, %v", gone, qm, err)
	}
	if rest, _, err := acl.BindingRuleList("corp-jwt", nil); err != nil || len(rest) != 0 {
		t.Errorf("rules after the method was deleted: %+v, %v", rest, err)
	}
	if _, _, err := acl.TokenRead(second.AccessorID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404") {
		t.Errorf("login token after the method was deleted: %v", err)
	}
	if _, err := acl.AuthMethodDelete("corp-jwt", nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Cannot find auth method to delete)") {
		t.Errorf("second AuthMethodDelete: %v", err)
	}
}
