package state

import (
	"reflect"
	"testing"

	"github.com/hashicorp/go-memdb"
)

func TestACLRoleCreateReadUpdate(t *testing.T) {
	s := NewStore()
	if idx, r, err := s.ACLRole(nil, idA); err != nil || r != nil || idx != 1 {
		t.Fatalf("missing role: %d %+v %v", idx, r, err)
	}
	in := newRole(idB, "Deployers")
	in.ServiceIdentities = []*ACLServiceIdentity{{ServiceName: "web"}}
	in.NodeIdentities = []*ACLNodeIdentity{{NodeName: "n", Datacenter: "dc1"}}
	in.CreateIndex = 42
	got, err := s.ACLRoleSet(6, in)
	if err != nil {
		t.Fatal(err)
	}
	want := *in
	want.CreateIndex, want.ModifyIndex = 6, 6
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %+v, want %+v", got, &want)
	}
	if idx, r, err := s.ACLRole(nil, idB); err != nil || idx != 6 || !reflect.DeepEqual(r, &want) {
		t.Fatalf("by ID: %d %+v %v", idx, r, err)
	}
	for _, name := range []string{"Deployers", "deployers", "DEPLOYERS"} {
		if idx, r, err := s.ACLRoleByName(nil, name); err != nil || idx != 6 || !reflect.DeepEqual(r, &want) {
			t.Fatalf("by name %q: %d %+v %v", name, idx, r, err)
		}
	}

	ws := memdb.NewWatchSet()
	s.ACLRole(ws, idB)
	upd := newRole(idB, "deployers-v2")
	got, err = s.ACLRoleSet(9, upd)
	if err != nil || got.CreateIndex != 6 || got.ModifyIndex != 9 || got.Name != "deployers-v2" || got.ServiceIdentities != nil {
		t.Fatalf("update: %+v %v", got, err)
	}
	wantFired(t, ws, "role read on an update")
	if _, r, _ := s.ACLRoleByName(nil, "Deployers"); r != nil {
		t.Fatalf("old name still finds %+v", r)
	}
	wantIndex(t, s, map[string]uint64{aclRolesTable: 9, aclPoliciesTable: 1})
}

func TestACLRolesList(t *testing.T) {
	s := NewStore()
	for i, id := range []string{idC, idA, idB} {
		if _, err := s.ACLRoleSet(uint64(3+i), newRole(id, "r-"+id[:4])); err != nil {
			t.Fatal(err)
		}
	}
	idx, all, err := s.ACLRoles(nil, func(*ACLRole) bool { return true })
	if err != nil || idx != 5 || len(all) != 3 || all[0].ID != idA || all[1].ID != idB || all[2].ID != idC {
		t.Fatalf("list: %d %+v %v", idx, all, err)
	}
	_, some, _ := s.ACLRoles(nil, func(r *ACLRole) bool { return r.ID != idB })
	if len(some) != 2 || some[0].ID != idA || some[1].ID != idC {
		t.Fatalf("filtered list: %+v", some)
	}
}

func TestACLRoleSetErrors(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLRoleSet(3, newRole(idA, "admins")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ACLRoleSet(4, newRole(idB, "devs")); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	for name, tc := range map[string]struct {
		r    *ACLRole
		code ErrorCode
		msg  string
	}{
		"duplicate name":             {newRole(idC, "admins"), ErrInvalid, `Invalid Role: A Role with Name "admins" already exists`},
		"duplicate name, any case":   {newRole(idC, "ADMINS"), ErrInvalid, `Invalid Role: A Role with Name "ADMINS" already exists`},
		"rename onto another's name": {newRole(idB, "Admins"), ErrInvalid, `Invalid Role: A Role with Name "Admins" already exists`},
		"no ID":                      {newRole("", "x"), ErrInvalid, "role is missing its ID or name"},
		"no name":                    {newRole(idC, ""), ErrInvalid, "role is missing its ID or name"},
	} {
		r, err := s.ACLRoleSet(10, tc.r)
		if r != nil {
			t.Fatalf("%s: returned %+v", name, r)
		}
		wantStateError(t, err, tc.code, tc.msg)
		wantUnchanged(t, s, before)
	}
	wantIndex(t, s, map[string]uint64{aclRolesTable: 4})
}

func TestACLRoleDelete(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLRoleSet(3, newRole(idA, "admins")); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	wantStateError(t, s.ACLRoleDelete(5, idMissing), ErrNotFound, "Cannot find role to delete")
	wantUnchanged(t, s, before)

	ws := memdb.NewWatchSet()
	s.ACLRoles(ws, func(*ACLRole) bool { return true })
	if err := s.ACLRoleDelete(6, idA); err != nil {
		t.Fatal(err)
	}
	wantFired(t, ws, "role list on a delete")
	if idx, r, _ := s.ACLRoleByName(nil, "admins"); r != nil || idx != 6 {
		t.Fatalf("after delete: %d %+v", idx, r)
	}
	// The name is free again.
	if _, err := s.ACLRoleSet(7, newRole(idB, "admins")); err != nil {
		t.Fatal(err)
	}
}
