package state

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

const aclAuthMethodsTable = "acl-auth-methods"

// ACLAuthMethod validates a login's bearer token and says what identity it
// stands for; its binding rules turn that identity into a token.
type ACLAuthMethod struct {
	Name          string
	Type          string
	DisplayName   string        `json:",omitempty"`
	Description   string        `json:",omitempty"`
	MaxTokenTTL   time.Duration `json:",omitempty"`
	TokenLocality string        `json:",omitempty"`
	Config        map[string]any
	Namespace     string
	CreateIndex   uint64
	ModifyIndex   uint64
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: aclAuthMethodsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name", Lowercase: true}},
		},
	}, func() any { return new(ACLAuthMethod) })
}

// ACLAuthMethod returns the method with that name (any case), or nil.
func (s *Store) ACLAuthMethod(ws memdb.WatchSet, name string) (uint64, *ACLAuthMethod, error) {
	return getOne[ACLAuthMethod](s, ws, aclAuthMethodsTable, "id", name)
}

// ACLAuthMethods lists every method by name.
func (s *Store) ACLAuthMethods(ws memdb.WatchSet) (uint64, []*ACLAuthMethod, error) {
	return getAll(s, ws, aclAuthMethodsTable, func(*ACLAuthMethod) bool { return true })
}

// ACLAuthMethodSet creates (create=true) or replaces a method. Its type
// never changes.
func (s *Store) ACLAuthMethodSet(idx uint64, m *ACLAuthMethod, create bool) (*ACLAuthMethod, error) {
	if m.Name == "" || m.Type == "" {
		return nil, errorf(ErrInvalid, "auth method is missing its name or type")
	}
	txn := s.writeTxn()
	defer txn.Abort()
	raw, err := txn.First(aclAuthMethodsTable, "id", m.Name)
	if err != nil {
		return nil, fmt.Errorf("failed auth method lookup: %w", err)
	}
	stored := *m
	stored.CreateIndex = idx
	switch {
	case create && raw != nil:
		return nil, errorf(ErrConflict, "Invalid Auth Method: An Auth Method with Name %q already exists", m.Name)
	case !create && raw == nil:
		return nil, errorf(ErrNotFound, "cannot find auth method %q", m.Name)
	case raw != nil:
		existing := raw.(*ACLAuthMethod)
		if !strings.EqualFold(existing.Type, m.Type) {
			return nil, errorf(ErrInvalid, "the Type field of an Auth Method is immutable")
		}
		stored.Name = existing.Name
		stored.CreateIndex = existing.CreateIndex
	}
	stored.ModifyIndex = idx
	if err := txn.Insert(aclAuthMethodsTable, &stored); err != nil {
		return nil, fmt.Errorf("failed inserting auth method: %w", err)
	}
	if err := setIndex(txn, aclAuthMethodsTable, idx); err != nil {
		return nil, err
	}
	txn.Commit()
	return &stored, nil
}

// ACLAuthMethodDelete deletes a method together with its binding rules and
// the tokens it minted, in one transaction.
func (s *Store) ACLAuthMethodDelete(idx uint64, name string) error {
	txn := s.writeTxn()
	defer txn.Abort()
	raw, err := txn.First(aclAuthMethodsTable, "id", name)
	if err != nil {
		return fmt.Errorf("failed auth method lookup: %w", err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "Cannot find auth method to delete")
	}
	method := raw.(*ACLAuthMethod)
	if err := txn.Delete(aclAuthMethodsTable, raw); err != nil {
		return fmt.Errorf("failed deleting auth method: %w", err)
	}
	// Method names are case-insensitive: a rule or token that names the
	// method in another case belongs to it too.
	rules, err := deleteWhere(txn, bindingRulesTable, func(raw any) bool {
		return strings.EqualFold(raw.(*BindingRule).AuthMethod, method.Name)
	})
	if err != nil {
		return fmt.Errorf("failed deleting binding rules of %q: %w", method.Name, err)
	}
	if _, err := deleteWhere(txn, bindingRuleMethodsTable, func(raw any) bool {
		return strings.EqualFold(raw.(*bindingRuleMethod).AuthMethod, method.Name)
	}); err != nil {
		return fmt.Errorf("failed deleting binding rules of %q: %w", method.Name, err)
	}
	tokens, err := deleteWhere(txn, aclTokensTable, func(raw any) bool {
		return strings.EqualFold(raw.(*ACLToken).AuthMethod, method.Name)
	})
	if err != nil {
		return fmt.Errorf("failed deleting tokens of %q: %w", method.Name, err)
	}
	tables := []string{aclAuthMethodsTable}
	if rules > 0 {
		tables = append(tables, bindingRulesTable)
	}
	if tokens > 0 {
		tables = append(tables, aclTokensTable)
	}
	for _, t := range tables {
		if err := setIndex(txn, t, idx); err != nil {
			return err
		}
	}
	txn.Commit()
	return nil
}

// deleteWhere deletes every row of table that match accepts.
func deleteWhere(txn *memdb.Txn, table string, match func(any) bool) (int, error) {
	iter, err := txn.Get(table, "id")
	if err != nil {
		return 0, err
	}
	var doomed []any
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if match(raw) {
			doomed = append(doomed, raw)
		}
	}
	for _, raw := range doomed {
		if err := txn.Delete(table, raw); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}
