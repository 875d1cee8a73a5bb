package state

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"
)

const bindingRulesTable = "acl-binding-rules"

// bindingRuleMethodsTable holds one row per auth method named by binding
// rules (as the rules spell it), with how many rules name it, replaced by
// every write of one of them and deleted with the last: a list of one
// method's rules watches that row. (A memdb index of the rules by method
// did it with a second radix entry per rule: 30% of a rule's memory and 40%
// of the GC's marking of the table, for that list alone, which now filters
// a walk of the ID index.) Derived: in no snapshot, rebuilt by a restore.
// A watch on a missing row fires when the row is made.
const bindingRuleMethodsTable = "acl-binding-rule-methods"

type bindingRuleMethod struct {
	AuthMethod string
	Rules      int
}

// IsUUID says whether s is a UUID in its 36-character form (any case): the
// ID form the tables' UUID indexes take, anything else being the caller's
// mistake (400), not a store failure (500). (No regexp: it ran on every
// create the FSM applied.)
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

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

// packStrings puts the strings only this rule holds (ID and Description;
// with all=true also Selector and BindName, which a restore shares between
// rules instead) in one allocation: the GC marks one object for them on
// every cycle instead of up to four.
func (r *BindingRule) packStrings(all bool) {
	n := len(r.ID) + len(r.Description)
	if all {
		n += len(r.Selector) + len(r.BindName)
	}
	var b strings.Builder
	b.Grow(n)
	field := func(f *string) {
		start := b.Len()
		b.WriteString(*f)
		*f = b.String()[start:b.Len()]
	}
	field(&r.ID)
	field(&r.Description)
	if all {
		field(&r.Selector)
		field(&r.BindName)
	}
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
		},
	}, func() any { return new(BindingRule) })
	registerDerivedTable(&memdb.TableSchema{
		Name: bindingRuleMethodsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "AuthMethod"}},
		},
	})
}

// ruleMethodChanged replaces the row of method (exact case) with its rule
// count moved by delta, or deletes it when no rule names the method any
// more; either fires the watches of the lists of its rules. A batch calls
// it once per method it wrote rules of, at its commit.
func ruleMethodChanged(txn *memdb.Txn, method string, delta int) error {
	raw, err := txn.First(bindingRuleMethodsTable, "id", method)
	if err != nil {
		return fmt.Errorf("failed marking the rules of %q changed: %w", method, err)
	}
	n := delta
	if raw != nil {
		n += raw.(*bindingRuleMethod).Rules
	}
	if n <= 0 {
		if raw == nil {
			return nil
		}
		err = txn.Delete(bindingRuleMethodsTable, raw)
	} else {
		err = txn.Insert(bindingRuleMethodsTable, &bindingRuleMethod{AuthMethod: method, Rules: n})
	}
	if err != nil {
		return fmt.Errorf("failed marking the rules of %q changed: %w", method, err)
	}
	return nil
}

// rebuildRuleMethods counts a restored store's rules per method.
func rebuildRuleMethods(txn *memdb.Txn) error {
	iter, err := txn.Get(bindingRulesTable, "id")
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		counts[raw.(*BindingRule).AuthMethod]++
	}
	for method, n := range counts {
		if err := txn.Insert(bindingRuleMethodsTable, &bindingRuleMethod{AuthMethod: method, Rules: n}); err != nil {
			return err
		}
	}
	return nil
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
	iter, err := txn.Get(bindingRulesTable, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("failed binding rule list: %w", err)
	}
	if authMethod == "" {
		ws.Add(iter.WatchCh())
	} else {
		ch, _, err := txn.FirstWatch(bindingRuleMethodsTable, "id", authMethod)
		if err != nil {
			return 0, nil, fmt.Errorf("failed binding rule list: %w", err)
		}
		ws.Add(ch)
	}

	out := []*BindingRule{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		rule := raw.(*BindingRule)
		if (ns == AllNamespaces || rule.Namespace == ns) && (authMethod == "" || rule.AuthMethod == authMethod) {
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
	if !IsUUID(rule.ID) {
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
	stored.packStrings(true)

	// memdb computes every index value before it changes anything, so a
	// failed insert leaves the batch as it was.
	if err := txn.Insert(bindingRulesTable, &stored); err != nil {
		return nil, fmt.Errorf("failed inserting binding rule: %w", err)
	}
	delta := 0
	if raw == nil {
		delta = 1
	}
	b.ruleMethod(stored.AuthMethod, delta)
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
	if !IsUUID(id) {
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
	b.ruleMethod(raw.(*BindingRule).AuthMethod, -1)
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
	r.prepare(rule)
	if err := r.txn.Insert(bindingRulesTable, rule); err != nil {
		return fmt.Errorf("failed restoring binding rule %s: %w", rule.ID, err)
	}
	return nil
}
