package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const aclPoliciesTable = "acl-policies"

// Built-in policy.
const (
	GlobalManagementPolicyID   = "00000000-0000-0000-0000-000000000001"
	GlobalManagementPolicyName = "global-management"
)

// ACLPolicy is a named set of rules in the policy language.
type ACLPolicy struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string `json:",omitempty"`
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: aclPoliciesTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id":   {Name: "id", Unique: true, Indexer: &memdb.UUIDFieldIndex{Field: "ID"}},
			"name": {Name: "name", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name", Lowercase: true}},
		},
	}, func() any { return new(ACLPolicy) })
}

// ACLPolicy returns the policy with that ID, or nil.
func (s *Store) ACLPolicy(ws memdb.WatchSet, id string) (uint64, *ACLPolicy, error) {
	return getOne[ACLPolicy](s, ws, aclPoliciesTable, "id", id)
}

// ACLPolicyByName returns the policy with that name (any case), or nil.
func (s *Store) ACLPolicyByName(ws memdb.WatchSet, name string) (uint64, *ACLPolicy, error) {
	return getOne[ACLPolicy](s, ws, aclPoliciesTable, "name", name)
}

// ACLPolicies lists every policy by ID.
func (s *Store) ACLPolicies(ws memdb.WatchSet) (uint64, []*ACLPolicy, error) {
	return getAll[ACLPolicy](s, ws, aclPoliciesTable, func(*ACLPolicy) bool { return true })
}

// ACLPolicySet creates or replaces a policy; its name must be unique.
func (s *Store) ACLPolicySet(idx uint64, p *ACLPolicy) (*ACLPolicy, error) {
	txn := s.writeTxn()
	defer txn.Abort()
	stored, err := aclPolicySetTxn(txn, idx, p)
	if err != nil {
		return nil, err
	}
	txn.Commit()
	return stored, nil
}

func aclPolicySetTxn(txn *memdb.Txn, idx uint64, p *ACLPolicy) (*ACLPolicy, error) {
	if p.ID == "" || p.Name == "" {
		return nil, errorf(ErrInvalid, "policy is missing its ID or name")
	}
	stored := *p
	stored.CreateIndex = idx
	existing, err := txn.First(aclPoliciesTable, "id", p.ID)
	if err != nil {
		return nil, fmt.Errorf("failed policy lookup: %w", err)
	}
	if existing != nil {
		stored.CreateIndex = existing.(*ACLPolicy).CreateIndex
	}
	if other, err := txn.First(aclPoliciesTable, "name", p.Name); err != nil {
		return nil, fmt.Errorf("failed policy lookup: %w", err)
	} else if other != nil && other.(*ACLPolicy).ID != p.ID {
		return nil, errorf(ErrInvalid, "Invalid Policy: A Policy with Name %q already exists", p.Name)
	}
	stored.ModifyIndex = idx
	if err := txn.Insert(aclPoliciesTable, &stored); err != nil {
		return nil, fmt.Errorf("failed inserting policy: %w", err)
	}
	return &stored, setIndex(txn, aclPoliciesTable, idx)
}

// ACLPolicyDelete deletes a policy; a missing one is ErrNotFound.
func (s *Store) ACLPolicyDelete(idx uint64, id string) error {
	return deleteOne(s, idx, aclPoliciesTable, "id", id, "policy does not exist")
}
