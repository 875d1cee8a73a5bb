package state

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-memdb"
)

func managementPolicy() *ACLPolicy {
	return &ACLPolicy{ID: GlobalManagementPolicyID, Name: GlobalManagementPolicyName, Rules: `acl = "write"`}
}

func anonymousToken() *ACLToken {
	return &ACLToken{AccessorID: AnonymousTokenID, SecretID: AnonymousTokenSecret, Description: "Anonymous Token", Namespace: DefaultNamespace, CreateTime: t0}
}

func initialToken() *ACLToken {
	tok := newToken(idC, "initial-secret")
	tok.Description = "Initial Management Token"
	tok.Policies = []ACLLink{{ID: GlobalManagementPolicyID, Name: GlobalManagementPolicyName}}
	return tok
}

func TestACLBootstrap(t *testing.T) {
	s := NewStore()
	if got := s.ACLBootstrapIndex(); got != 0 {
		t.Fatalf("ACLBootstrapIndex of a new store = %d, want 0", got)
	}
	ws := memdb.NewWatchSet()
	s.ACLTokens(ws, func(*ACLToken) bool { return true })
	tok := newToken(idA, "boot-secret")
	got, err := s.ACLBootstrap(10, tok)
	if err != nil {
		t.Fatal(err)
	}
	want := *tok
	want.CreateIndex, want.ModifyIndex = 10, 10
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("bootstrap returned %+v, want %+v", got, &want)
	}
	wantFired(t, ws, "token list on a bootstrap")
	if _, stored, _ := s.ACLTokenBySecret(nil, "boot-secret"); !reflect.DeepEqual(stored, &want) {
		t.Fatalf("stored %+v", stored)
	}
	if got := s.ACLBootstrapIndex(); got != 10 {
		t.Fatalf("ACLBootstrapIndex = %d, want 10", got)
	}
	wantIndex(t, s, map[string]uint64{aclMetaTable: 10, aclTokensTable: 10})

	// A second bootstrap is refused with the reset index, and changes nothing.
	before := snapshotOf(t, s)
	for _, idx := range []uint64{11, 500} {
		got, err := s.ACLBootstrap(idx, newToken(idB, "second"))
		if got != nil {
			t.Fatalf("second bootstrap returned %+v", got)
		}
		var se *Error
		if !errors.As(err, &se) || se.Code != ErrForbidden {
			t.Fatalf("second bootstrap: %T %v, want a *state.Error with ErrForbidden", err, err)
		}
		wantStateError(t, err, ErrForbidden, "Permission denied: ACL bootstrap no longer allowed (reset index: 10)")
	}
	wantUnchanged(t, s, before)
}

func TestACLBootstrapRejectedTokenLeavesBootstrapOpen(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLTokenSet(3, newToken(idA, "taken"), true); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	for _, tok := range []*ACLToken{newToken(idA, "new"), newToken(idB, "taken")} {
		_, err := s.ACLBootstrap(5, tok)
		var se *Error
		if !errors.As(err, &se) || se.Code != ErrConflict {
			t.Fatalf("bootstrap with a conflicting token: %v, want ErrConflict", err)
		}
	}
	wantUnchanged(t, s, before)
	if got := s.ACLBootstrapIndex(); got != 0 {
		t.Fatalf("a failed bootstrap closed bootstrapping (index %d)", got)
	}
	if _, err := s.ACLBootstrap(6, newToken(idB, "fresh")); err != nil {
		t.Fatalf("bootstrap after a failed one: %v", err)
	}
	if got := s.ACLBootstrapIndex(); got != 6 {
		t.Fatalf("ACLBootstrapIndex = %d, want 6", got)
	}
}

func TestACLInitWithInitialToken(t *testing.T) {
	s := NewStore()
	secretWS, policyWS := memdb.NewWatchSet(), memdb.NewWatchSet()
	s.ACLTokenBySecret(secretWS, "initial-secret")
	s.ACLPolicies(policyWS)
	if err := s.ACLInit(3, managementPolicy(), anonymousToken(), initialToken()); err != nil {
		t.Fatal(err)
	}
	wantFired(t, secretWS, "the initial token's secret")
	wantFired(t, policyWS, "the policy list")

	_, p, _ := s.ACLPolicy(nil, GlobalManagementPolicyID)
	wantP := managementPolicy()
	wantP.CreateIndex, wantP.ModifyIndex = 3, 3
	if !reflect.DeepEqual(p, wantP) {
		t.Fatalf("management policy %+v, want %+v", p, wantP)
	}
	_, anon, _ := s.ACLTokenBySecret(nil, AnonymousTokenSecret)
	wantAnon := anonymousToken()
	wantAnon.CreateIndex, wantAnon.ModifyIndex = 3, 3
	if !reflect.DeepEqual(anon, wantAnon) {
		t.Fatalf("anonymous token %+v, want %+v", anon, wantAnon)
	}
	_, initial, _ := s.ACLTokenBySecret(nil, "initial-secret")
	wantInit := initialToken()
	wantInit.CreateIndex, wantInit.ModifyIndex = 3, 3
	if !reflect.DeepEqual(initial, wantInit) {
		t.Fatalf("initial token %+v, want %+v", initial, wantInit)
	}
	if got := s.ACLBootstrapIndex(); got != 3 {
		t.Fatalf("ACLBootstrapIndex = %d, want 3 (the initial token closes bootstrapping)", got)
	}
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 3, aclTokensTable: 3, aclMetaTable: 3})

	// A second init is a no-op: nothing written, no index moves, no watch fires.
	before := snapshotOf(t, s)
	ws := memdb.NewWatchSet()
	s.ACLPolicies(ws)
	s.ACLTokens(ws, func(*ACLToken) bool { return true })
	changed := managementPolicy()
	changed.Rules = `acl = "read"` // an existing policy is left as it is
	if err := s.ACLInit(9, changed, anonymousToken(), initialToken()); err != nil {
		t.Fatal(err)
	}
	wantUnchanged(t, s, before)
	wantNotFired(t, ws, "a second init")
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 3, aclTokensTable: 3, aclMetaTable: 3})

	_, err := s.ACLBootstrap(10, newToken(idA, "boot"))
	wantStateError(t, err, ErrForbidden, "Permission denied: ACL bootstrap no longer allowed (reset index: 3)")
}

func TestACLInitWithoutInitialToken(t *testing.T) {
	s := NewStore()
	if err := s.ACLInit(3, managementPolicy(), anonymousToken(), nil); err != nil {
		t.Fatal(err)
	}
	_, toks, _ := s.ACLTokens(nil, func(*ACLToken) bool { return true })
	if len(toks) != 1 || toks[0].AccessorID != AnonymousTokenID {
		t.Fatalf("tokens %+v, want only the anonymous one", toks)
	}
	if got := s.ACLBootstrapIndex(); got != 0 {
		t.Fatalf("bootstrap closed (%d) without an initial token", got)
	}
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 3, aclTokensTable: 3, aclMetaTable: 1})

	// Idempotent as well.
	before := snapshotOf(t, s)
	if err := s.ACLInit(4, managementPolicy(), anonymousToken(), nil); err != nil {
		t.Fatal(err)
	}
	wantUnchanged(t, s, before)

	// Bootstrapping is still possible; a later init with an initial token
	// adds it but keeps the bootstrap's reset index.
	if _, err := s.ACLBootstrap(5, newToken(idA, "boot")); err != nil {
		t.Fatal(err)
	}
	if err := s.ACLInit(8, managementPolicy(), anonymousToken(), initialToken()); err != nil {
		t.Fatal(err)
	}
	if _, tok, _ := s.ACLTokenBySecret(nil, "initial-secret"); tok == nil || tok.CreateIndex != 8 {
		t.Fatalf("initial token %+v", tok)
	}
	if got := s.ACLBootstrapIndex(); got != 5 {
		t.Fatalf("ACLBootstrapIndex = %d, want 5", got)
	}
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 3, aclTokensTable: 8, aclMetaTable: 5})
}

func TestACLInitSkipsTakenSecret(t *testing.T) {
	// An initial token whose secret another token already has is not
	// created (and so does not close bootstrapping).
	s := NewStore()
	if _, err := s.ACLTokenSet(2, newToken(idA, "initial-secret"), true); err != nil {
		t.Fatal(err)
	}
	if err := s.ACLInit(3, managementPolicy(), anonymousToken(), initialToken()); err != nil {
		t.Fatal(err)
	}
	if _, tok, _ := s.ACLTokenByAccessor(nil, idC); tok != nil {
		t.Fatalf("initial token created over a taken secret: %+v", tok)
	}
	if _, tok, _ := s.ACLTokenBySecret(nil, "initial-secret"); tok == nil || tok.AccessorID != idA {
		t.Fatalf("the existing token changed: %+v", tok)
	}
	if got := s.ACLBootstrapIndex(); got != 0 {
		t.Fatalf("ACLBootstrapIndex = %d, want 0", got)
	}
}

func TestACLInitPolicyNameTaken(t *testing.T) {
	// Another policy already called global-management: the init fails as a
	// whole and writes nothing.
	s := NewStore()
	if _, err := s.ACLPolicySet(2, newPolicy(idA, "Global-Management")); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	err := s.ACLInit(3, managementPolicy(), anonymousToken(), initialToken())
	wantStateError(t, err, ErrInvalid, `Invalid Policy: A Policy with Name "global-management" already exists`)
	wantUnchanged(t, s, before)
}
