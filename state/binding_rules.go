package state

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/go-memdb"
)

const bindingRulesTable = "acl-binding-rules"

// uuidRE is the ID form the tables' UUID indexes take: anything else is the
// caller's mistake (400), not a store failure (500).
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Namespaces.
const (
	DefaultNamespace = "default"
	// AllNamespaces is the wildcard accepted by list endpoints.
	AllNamespaces = "*"
)

// Bind types of a binding rule.
const (
	BindTypeService = "service"
	BindTypeNode    = "node"
	BindTypeRole    = "role"
)

// BindingRule links an auth method to what a login through it puts in a token.
type BindingRule struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	Namespace   string
	CreateIndex uint64
	ModifyIndex uint64
}

// shareStrings shares the fields that rules repeat (all but ID and
// Description, which are per rule).
func (r *BindingRule) shareStrings(share func(string) string) {
	r.AuthMethod = share(r.AuthMethod)
	r.Selector = share(r.Selector)
	r.BindType = share(r.BindType)
	r.BindName = share(r.BindName)
	r.Namespace = share(r.Namespace)
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: bindingRulesTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: uuidNibbleIndex{field: func(obj any) string { return obj.(*BindingRule).ID }}},
			// Exact name; a non-unique index keeps entries of one method in ID order.
			"authmethod": {Name: "authmethod", Indexer: &memdb.StringFieldIndex{Field: "AuthMethod"}},
		},
	}, func() any { return new(BindingRule) })
}

// BindingRule returns the rule with that ID in namespace ns (AllNamespaces:
// in any), or nil. The
// index is the binding-rule table's. A missing rule also watches the whole
// table, so a blocked read of it wakes when the table moves on.
func (s *Store) BindingRule(ws memdb.WatchSet, id, ns string) (uint64, *BindingRule, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()

	idx := maxIndex(txn, bindingRulesTable)
	ch, raw, err := txn.FirstWatch(bindingRulesTable, "id", id)
	if err != nil {
		return 0, nil, fmt.Errorf("failed binding rule lookup: %w", err)
	}
	ws.Add(ch)
	if raw != nil {
		if rule := raw.(*BindingRule); ns == AllNamespaces || rule.Namespace == ns {
			return idx, rule, nil
		}
	}
	watchTableIndex(txn, ws, bindingRulesTable)
	return idx, nil, nil
}

// BindingRules lists the rules of namespace ns (AllNamespaces for every one),
// optionally only those of one auth method, ascending by ID.
func (s *Store) BindingRules(ws memdb.WatchSet, ns, authMethod string) (uint64, []*BindingRule, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()

	idx := maxIndex(txn, bindingRulesTable)
	var iter memdb.ResultIterator
	var err error
	if authMethod != "" {
		iter, err = txn.Get(bindingRulesTable, "authmethod", authMethod)
	} else {
		iter, err = txn.Get(bindingRulesTable, "id")
	}
	if err != nil {
		return 0, nil, fmt.Errorf("failed binding rule list: %w", err)
	}
	ws.Add(iter.WatchCh())

	out := []*BindingRule{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		rule := raw.(*BindingRule)
		if ns == AllNamespaces || rule.Namespace == ns {
			out = append(out, rule)
		}
	}
	return idx, out, nil
}

// BindingRuleSet creates (create=true) or replaces a rule at Raft index idx
// and returns the stored rule. Checks that depend on the current state are
// made here, inside the write, so that no concurrent write can slip between
// check and apply: an update needs the rule to exist in rule.Namespace, keeps
// its CreateIndex and its AuthMethod (taken when rule.AuthMethod is empty,
// otherwise it must be equal).
func (s *Store) BindingRuleSet(idx uint64, rule *BindingRule, create bool) (*BindingRule, error) {
	return inBatch(s, func(b *Batch) (*BindingRule, error) { return b.BindingRuleSet(idx, rule, create) })
}

// BindingRuleSet is Store.BindingRuleSet inside a batch.
func (b *Batch) BindingRuleSet(idx uint64, rule *BindingRule, create bool) (*BindingRule, error) {
	if rule.ID == "" || rule.Namespace == "" {
		return nil, errorf(ErrInvalid, "binding rule is missing its ID or namespace")
	}
	if !uuidRE.MatchString(rule.ID) {
		return nil, errorf(ErrInvalid, "binding rule ID %q is not a UUID", rule.ID)
	}
	txn := b.txn
	raw, err := txn.First(bindingRulesTable, "id", rule.ID)
	if err != nil {
		return nil, fmt.Errorf("failed binding rule lookup: %w", err)
	}
	stored := *rule
	if create {
		if raw != nil {
			return nil, errorf(ErrConflict, "binding rule %s already exists", rule.ID)
		}
		stored.CreateIndex = idx
	} else {
		if raw == nil || raw.(*BindingRule).Namespace != rule.Namespace {
			return nil, errorf(ErrNotFound, "cannot find binding rule %s", rule.ID)
		}
		existing := raw.(*BindingRule)
		switch {
		case stored.AuthMethod == "":
			stored.AuthMethod = existing.AuthMethod
		case stored.AuthMethod != existing.AuthMethod:
			return nil, errorf(ErrInvalid, "the AuthMethod field of an Binding Rule is immutable")
		}
		stored.ID = existing.ID // keep the canonical (lowercase) form
		stored.CreateIndex = existing.CreateIndex
	}
	if stored.AuthMethod == "" {
		return nil, errorf(ErrInvalid, "Invalid Binding Rule: no AuthMethod is set")
	}
	stored.ModifyIndex = idx
	// One copy of the names every rule of a method repeats. (Selectors and
	// bind names may be all different: they are shared by a restore only.)
	stored.AuthMethod = shared(stored.AuthMethod)
	stored.Namespace = shared(stored.Namespace)
	stored.BindType = shared(stored.BindType)

	// memdb computes every index value before it changes anything, so a
	// failed insert leaves the batch as it was.
	if err := txn.Insert(bindingRulesTable, &stored); err != nil {
		return nil, fmt.Errorf("failed inserting binding rule: %w", err)
	}
	b.touch(bindingRulesTable, idx)
	b.record(bindingRulesTable, raw, &stored)
	return &stored, nil
}

// BindingRuleDelete removes the rule with that ID from namespace ns at Raft
// index idx. A rule that is not there is ErrNotFound and changes nothing.
func (s *Store) BindingRuleDelete(idx uint64, id, ns string) error {
	_, err := inBatch(s, func(b *Batch) (struct{}, error) { return struct{}{}, b.BindingRuleDelete(idx, id, ns) })
	return err
}

// BindingRuleDelete is Store.BindingRuleDelete inside a batch.
func (b *Batch) BindingRuleDelete(idx uint64, id, ns string) error {
	if !uuidRE.MatchString(id) {
		return errorf(ErrInvalid, "binding rule ID %q is not a UUID", id)
	}
	raw, err := b.txn.First(bindingRulesTable, "id", id)
	if err != nil {
		return fmt.Errorf("failed binding rule lookup: %w", err)
	}
	if raw == nil || raw.(*BindingRule).Namespace != ns {
		return errorf(ErrNotFound, "binding rule does not exist")
	}
	if err := b.txn.Delete(bindingRulesTable, raw); err != nil {
		return fmt.Errorf("failed deleting binding rule: %w", err)
	}
	b.touch(bindingRulesTable, idx)
	b.record(bindingRulesTable, raw, nil)
	return nil
}

// BindingRules returns every rule of the snapshot.
func (s *Snapshot) BindingRules() ([]*BindingRule, error) {
	iter, err := s.txn.Get(bindingRulesTable, "id")
	if err != nil {
		return nil, err
	}
	var out []*BindingRule
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*BindingRule))
	}
	return out, nil
}

// BindingRule restores one rule as it was.
func (r *Restore) BindingRule(rule *BindingRule) error {
	rule.shareStrings(r.strings.share)
	if err := r.txn.Insert(bindingRulesTable, rule); err != nil {
		return fmt.Errorf("failed restoring binding rule %s: %w", rule.ID, err)
	}
	return nil
}
