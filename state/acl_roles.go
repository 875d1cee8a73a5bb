package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const aclRolesTable = "acl-roles"

// ACLRole is a named bundle of policies and identities a token can link to.
type ACLRole struct {
	ID                string
	Name              string
	Description       string
	Policies          []ACLLink             `json:",omitempty"`
	ServiceIdentities []*ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []*ACLNodeIdentity    `json:",omitempty"`
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: aclRolesTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id":   {Name: "id", Unique: true, Indexer: &memdb.UUIDFieldIndex{Field: "ID"}},
			"name": {Name: "name", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name", Lowercase: true}},
		},
	}, func() any { return new(ACLRole) })
}

// ACLRole returns the role with that ID, or nil.
func (s *Store) ACLRole(ws memdb.WatchSet, id string) (uint64, *ACLRole, error) {
	return getOne[ACLRole](s, ws, aclRolesTable, "id", id)
}

// ACLRoleByName returns the role with that name (any case), or nil.
func (s *Store) ACLRoleByName(ws memdb.WatchSet, name string) (uint64, *ACLRole, error) {
	return getOne[ACLRole](s, ws, aclRolesTable, "name", name)
}

// ACLRoles lists the roles keep accepts, by ID.
func (s *Store) ACLRoles(ws memdb.WatchSet, keep func(*ACLRole) bool) (uint64, []*ACLRole, error) {
	return getAll(s, ws, aclRolesTable, keep)
}

// ACLRoleSet creates or replaces a role; its name must be unique.
func (s *Store) ACLRoleSet(idx uint64, r *ACLRole) (*ACLRole, error) {
	if r.ID == "" || r.Name == "" {
		return nil, errorf(ErrInvalid, "role is missing its ID or name")
	}
	txn := s.writeTxn()
	defer txn.Abort()
	stored := *r
	stored.CreateIndex = idx
	if existing, err := txn.First(aclRolesTable, "id", r.ID); err != nil {
		return nil, fmt.Errorf("failed role lookup: %w", err)
	} else if existing != nil {
		stored.CreateIndex = existing.(*ACLRole).CreateIndex
	}
	if other, err := txn.First(aclRolesTable, "name", r.Name); err != nil {
		return nil, fmt.Errorf("failed role lookup: %w", err)
	} else if other != nil && other.(*ACLRole).ID != r.ID {
		return nil, errorf(ErrInvalid, "Invalid Role: A Role with Name %q already exists", r.Name)
	}
	stored.ModifyIndex = idx
	if err := txn.Insert(aclRolesTable, &stored); err != nil {
		return nil, fmt.Errorf("failed inserting role: %w", err)
	}
	if err := setIndex(txn, aclRolesTable, idx); err != nil {
		return nil, err
	}
	txn.Commit()
	return &stored, nil
}

// ACLRoleDelete deletes a role; a missing one is ErrNotFound.
func (s *Store) ACLRoleDelete(idx uint64, id string) error {
	return deleteOne(s, idx, aclRolesTable, "id", id, "Cannot find role to delete")
}
