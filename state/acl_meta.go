package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const aclMetaTable = "acl-meta"

// ACLMeta records cluster-wide ACL facts, one row per key.
type ACLMeta struct {
	Key   string
	Index uint64
}

// aclBootstrapKey: the row exists once the ACL system was bootstrapped;
// its Index is the bootstrap's Raft index (the "reset index").
const aclBootstrapKey = "bootstrap"

func init() {
	registerTable(&memdb.TableSchema{
		Name: aclMetaTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		},
	}, func() any { return new(ACLMeta) })
}

// ACLBootstrapIndex is the index the ACL system was bootstrapped at; 0 when it was not.
func (s *Store) ACLBootstrapIndex() uint64 {
	_, row, err := getOne[ACLMeta](s, memdb.NewWatchSet(), aclMetaTable, "id", aclBootstrapKey)
	if err != nil || row == nil {
		return 0
	}
	return row.Index
}

// ACLBootstrap stores the first management token and closes bootstrapping,
// atomically: a second bootstrap fails with the reset index.
func (s *Store) ACLBootstrap(idx uint64, token *ACLToken) (*ACLToken, error) {
	txn := s.writeTxn()
	defer txn.Abort()
	raw, err := txn.First(aclMetaTable, "id", aclBootstrapKey)
	if err != nil {
		return nil, fmt.Errorf("failed ACL meta lookup: %w", err)
	}
	if raw != nil {
		return nil, &Error{Code: ErrForbidden, Msg: fmt.Sprintf("Permission denied: ACL bootstrap no longer allowed (reset index: %d)", raw.(*ACLMeta).Index)}
	}
	if err := txn.Insert(aclMetaTable, &ACLMeta{Key: aclBootstrapKey, Index: idx}); err != nil {
		return nil, fmt.Errorf("failed recording the bootstrap: %w", err)
	}
	if err := setIndex(txn, aclMetaTable, idx); err != nil {
		return nil, err
	}
	stored, err := aclTokenSetTxn(txn, idx, token, true)
	if err != nil {
		return nil, err
	}
	txn.Commit()
	return stored, nil
}

// ACLInit makes sure the built-in objects exist: the global-management
// policy, the anonymous token and, when given, the initial management token
// (which also closes bootstrapping). Existing objects are left as they are.
func (s *Store) ACLInit(idx uint64, management *ACLPolicy, anonymous, initial *ACLToken) error {
	txn := s.writeTxn()
	defer txn.Abort()
	changed := false
	if raw, err := txn.First(aclPoliciesTable, "id", management.ID); err != nil {
		return fmt.Errorf("failed policy lookup: %w", err)
	} else if raw == nil {
		if _, err := aclPolicySetTxn(txn, idx, management); err != nil {
			return err
		}
		changed = true
	}
	for _, tok := range []*ACLToken{anonymous, initial} {
		if tok == nil {
			continue
		}
		if raw, err := txn.First(aclTokensTable, "id", tok.AccessorID); err != nil {
			return fmt.Errorf("failed token lookup: %w", err)
		} else if raw != nil {
			continue
		}
		if other, err := txn.First(aclTokensTable, "secret", tok.SecretID); err != nil {
			return fmt.Errorf("failed token lookup: %w", err)
		} else if other != nil {
			continue
		}
		if _, err := aclTokenSetTxn(txn, idx, tok, true); err != nil {
			return err
		}
		changed = true
		if tok == initial {
			if raw, _ := txn.First(aclMetaTable, "id", aclBootstrapKey); raw == nil {
				if err := txn.Insert(aclMetaTable, &ACLMeta{Key: aclBootstrapKey, Index: idx}); err != nil {
					return err
				}
				if err := setIndex(txn, aclMetaTable, idx); err != nil {
					return err
				}
			}
		}
	}
	if changed {
		txn.Commit()
	}
	return nil
}
