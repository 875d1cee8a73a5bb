package state

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
)

func TestACLPolicyReadMissing(t *testing.T) {
	s := NewStore()
	idx, p, err := s.ACLPolicy(nil, idA)
	if err != nil || p != nil || idx != 1 {
		t.Fatalf("ACLPolicy on an empty store: %d %+v %v", idx, p, err)
	}
	idx, p, err = s.ACLPolicyByName(nil, "nope")
	if err != nil || p != nil || idx != 1 {
		t.Fatalf("ACLPolicyByName on an empty store: %d %+v %v", idx, p, err)
	}
	idx, all, err := s.ACLPolicies(nil)
	if err != nil || idx != 1 || all == nil || len(all) != 0 {
		t.Fatalf("ACLPolicies on an empty store: %d %#v %v, want an empty non-nil list", idx, all, err)
	}
	if _, _, err := s.ACLPolicy(nil, "not-a-uuid"); err == nil || !strings.HasPrefix(err.Error(), "failed acl-policies lookup: ") {
		t.Fatalf("non-UUID ID: err %v", err)
	}
}

func TestACLPolicySetCreateAndRead(t *testing.T) {
	s := NewStore()
	in := newPolicy(idB, "Web-Read")
	in.Datacenters = []string{"dc1"}
	in.CreateIndex, in.ModifyIndex = 77, 88 // ignored
	got, err := s.ACLPolicySet(5, in)
	if err != nil {
		t.Fatal(err)
	}
	want := &ACLPolicy{ID: idB, Name: "Web-Read", Description: "policy Web-Read", Rules: `acl = "read"`,
		Datacenters: []string{"dc1"}, Hash: []byte("Web-Read"), CreateIndex: 5, ModifyIndex: 5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("set returned %+v, want %+v", got, want)
	}
	if in.CreateIndex != 77 || in.ModifyIndex != 88 {
		t.Fatalf("set changed its argument: %+v", in)
	}
	idx, byID, err := s.ACLPolicy(nil, idB)
	if err != nil || idx != 5 || !reflect.DeepEqual(byID, want) {
		t.Fatalf("ACLPolicy: %d %+v %v", idx, byID, err)
	}
	// The name lookup ignores case.
	for _, name := range []string{"Web-Read", "web-read", "WEB-READ", "wEb-ReAd"} {
		idx, byName, err := s.ACLPolicyByName(nil, name)
		if err != nil || idx != 5 || !reflect.DeepEqual(byName, want) {
			t.Fatalf("ACLPolicyByName(%q): %d %+v %v", name, idx, byName, err)
		}
	}
	if _, p, _ := s.ACLPolicyByName(nil, "web"); p != nil {
		t.Fatalf("a name prefix found %+v", p)
	}
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 5, aclTokensTable: 1})

	// The list is in ID order whatever the insertion order.
	if _, err := s.ACLPolicySet(6, newPolicy(idD, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ACLPolicySet(7, newPolicy(idA, "a")); err != nil {
		t.Fatal(err)
	}
	idx, all, err := s.ACLPolicies(nil)
	if err != nil || idx != 7 {
		t.Fatalf("ACLPolicies: %d %v", idx, err)
	}
	var ids []string
	for _, p := range all {
		ids = append(ids, p.ID)
	}
	if !reflect.DeepEqual(ids, []string{idA, idB, idD}) {
		t.Fatalf("ACLPolicies order %v", ids)
	}
}

func TestACLPolicySetUpdate(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLPolicySet(5, newPolicy(idA, "ops")); err != nil {
		t.Fatal(err)
	}
	upd := newPolicy(idA, "operators")
	upd.Rules = `operator = "write"`
	upd.CreateIndex = 1 // ignored: CreateIndex is kept
	got, err := s.ACLPolicySet(9, upd)
	if err != nil {
		t.Fatal(err)
	}
	want := &ACLPolicy{ID: idA, Name: "operators", Description: "policy operators", Rules: `operator = "write"`,
		Hash: []byte("operators"), CreateIndex: 5, ModifyIndex: 9}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("update returned %+v, want %+v", got, want)
	}
	if _, p, _ := s.ACLPolicy(nil, idA); !reflect.DeepEqual(p, want) {
		t.Fatalf("stored %+v", p)
	}
	// The old name is free again, the new one is indexed.
	if _, p, _ := s.ACLPolicyByName(nil, "ops"); p != nil {
		t.Fatalf("old name still finds %+v", p)
	}
	if _, p, _ := s.ACLPolicyByName(nil, "OPERATORS"); p == nil || p.ID != idA {
		t.Fatalf("new name finds %+v", p)
	}
	if _, err := s.ACLPolicySet(10, newPolicy(idB, "ops")); err != nil {
		t.Fatalf("reusing a freed name: %v", err)
	}
	// Changing only the case of its own name is allowed.
	if p, err := s.ACLPolicySet(11, newPolicy(idA, "OPERATORS")); err != nil || p.Name != "OPERATORS" || p.CreateIndex != 5 {
		t.Fatalf("case-only rename: %+v %v", p, err)
	}
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 11})
}

func TestACLPolicySetErrors(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLPolicySet(5, newPolicy(idA, "web")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ACLPolicySet(6, newPolicy(idB, "db")); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	tests := []struct {
		name string
		p    *ACLPolicy
		code ErrorCode
		msg  string
	}{
		{"another policy's name", newPolicy(idC, "web"), ErrInvalid, `Invalid Policy: A Policy with Name "web" already exists`},
		{"another policy's name, other case", newPolicy(idC, "WEB"), ErrInvalid, `Invalid Policy: A Policy with Name "WEB" already exists`},
		{"rename onto another policy's name", newPolicy(idB, "Web"), ErrInvalid, `Invalid Policy: A Policy with Name "Web" already exists`},
		{"no ID", newPolicy("", "x"), ErrInvalid, "policy is missing its ID or name"},
		{"no name", newPolicy(idC, ""), ErrInvalid, "policy is missing its ID or name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.ACLPolicySet(10, tc.p)
			wantStateError(t, err, tc.code, tc.msg)
			if p != nil {
				t.Fatalf("returned %+v with the error", p)
			}
			wantUnchanged(t, s, before)
			wantIndex(t, s, map[string]uint64{aclPoliciesTable: 6})
		})
	}
	// A non-UUID ID is refused by the index (not a state.Error).
	if _, err := s.ACLPolicySet(10, newPolicy("nope", "x")); err == nil {
		t.Fatal("non-UUID ID accepted")
	}
	wantUnchanged(t, s, before)
}

func TestACLPolicyDelete(t *testing.T) {
	s := NewStore()
	for i, id := range []string{idA, idB} {
		if _, err := s.ACLPolicySet(uint64(3+i), newPolicy(id, "p"+id[:2])); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshotOf(t, s)
	wantStateError(t, s.ACLPolicyDelete(9, idMissing), ErrNotFound, "policy does not exist")
	wantUnchanged(t, s, before)
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 4})

	if err := s.ACLPolicyDelete(10, idA); err != nil {
		t.Fatal(err)
	}
	if idx, p, _ := s.ACLPolicy(nil, idA); p != nil || idx != 10 {
		t.Fatalf("after delete: %d %+v", idx, p)
	}
	if _, p, _ := s.ACLPolicyByName(nil, "p"+idA[:2]); p != nil {
		t.Fatalf("name index still finds %+v", p)
	}
	if _, all, _ := s.ACLPolicies(nil); len(all) != 1 || all[0].ID != idB {
		t.Fatalf("left %+v", all)
	}
	wantStateError(t, s.ACLPolicyDelete(11, idA), ErrNotFound, "policy does not exist")
	wantIndex(t, s, map[string]uint64{aclPoliciesTable: 10})
}

func TestACLPolicyWatches(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLPolicySet(3, newPolicy(idA, "a")); err != nil {
		t.Fatal(err)
	}
	byID, byName, list, other := memdb.NewWatchSet(), memdb.NewWatchSet(), memdb.NewWatchSet(), memdb.NewWatchSet()
	s.ACLPolicy(byID, idA)
	s.ACLPolicyByName(byName, "A")
	s.ACLPolicies(list)
	s.ACLTokens(other, func(*ACLToken) bool { return true })

	if _, err := s.ACLPolicySet(4, newPolicy(idB, "b")); err != nil {
		t.Fatal(err)
	}
	wantFired(t, list, "list on a create")
	wantNotFired(t, byID, "another policy's read on a create")

	list = memdb.NewWatchSet()
	s.ACLPolicies(list)
	upd := newPolicy(idA, "a")
	upd.Rules = `acl = "write"`
	if _, err := s.ACLPolicySet(5, upd); err != nil {
		t.Fatal(err)
	}
	wantFired(t, byID, "read by ID on an update")
	wantFired(t, byName, "read by name on an update")
	wantFired(t, list, "list on an update")

	byID = memdb.NewWatchSet()
	s.ACLPolicy(byID, idA)
	if err := s.ACLPolicyDelete(6, idA); err != nil {
		t.Fatal(err)
	}
	wantFired(t, byID, "read on a delete")
	wantNotFired(t, other, "token list on policy writes")

	// Rejected writes fire nothing.
	list = memdb.NewWatchSet()
	s.ACLPolicies(list)
	s.ACLPolicySet(7, newPolicy(idC, "B"))
	s.ACLPolicyDelete(7, idMissing)
	wantNotFired(t, list, "list on rejected writes")
}
