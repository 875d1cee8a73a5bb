package state

import (
	"testing"
	"time"
)

func TestNewStoreTableIndexIsOne(t *testing.T) {
	s := NewStore()
	for _, table := range []string{bindingRulesTable, indexTable, "no-such-table"} {
		if got := s.TableIndex(table); got != 1 {
			t.Errorf("TableIndex(%q) of a new store = %d, want 1", table, got)
		}
	}
}

func TestTableIndexBumpedByWrites(t *testing.T) {
	s := NewStore()
	mustCreate(t, s, 5, newRule(idA, DefaultNamespace, "m", "a"))
	if got := s.TableIndex(bindingRulesTable); got != 5 {
		t.Fatalf("after create at 5: TableIndex = %d, want 5", got)
	}
	upd := newRule(idA, DefaultNamespace, "m", "a2")
	if _, err := s.BindingRuleSet(8, upd, false); err != nil {
		t.Fatal(err)
	}
	if got := s.TableIndex(bindingRulesTable); got != 8 {
		t.Fatalf("after update at 8: TableIndex = %d, want 8", got)
	}
	if err := s.BindingRuleDelete(11, idA, DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if got := s.TableIndex(bindingRulesTable); got != 11 {
		t.Fatalf("after delete at 11: TableIndex = %d, want 11", got)
	}
	// Other tables are untouched.
	if got := s.TableIndex("no-such-table"); got != 1 {
		t.Fatalf("TableIndex of an unwritten table = %d, want 1", got)
	}
}

func TestTableIndexNeverBelowOne(t *testing.T) {
	s := NewStore()
	// A write at Raft index 0 stores 0 in the index row; readers still see 1.
	mustCreate(t, s, 0, newRule(idA, DefaultNamespace, "m", "a"))
	if got := s.TableIndex(bindingRulesTable); got != 1 {
		t.Fatalf("TableIndex after a write at 0 = %d, want 1", got)
	}
	idx, rule, err := s.BindingRule(nil, idA, DefaultNamespace)
	if err != nil || rule == nil {
		t.Fatalf("read: rule %v err %v", rule, err)
	}
	if idx != 1 || rule.CreateIndex != 0 || rule.ModifyIndex != 0 {
		t.Fatalf("read: idx %d create %d modify %d, want 1 0 0", idx, rule.CreateIndex, rule.ModifyIndex)
	}
	idx, rules, err := s.BindingRules(nil, AllNamespaces, "")
	if err != nil || idx != 1 || len(rules) != 1 {
		t.Fatalf("list: idx %d rules %d err %v, want 1 1 nil", idx, len(rules), err)
	}
}

func TestTableIndexNotBumpedByRejectedWrites(t *testing.T) {
	s := NewStore()
	mustCreate(t, s, 4, newRule(idA, DefaultNamespace, "m", "a"))

	rejected := []struct {
		name  string
		write func() error
	}{
		{"create conflict", func() error {
			_, err := s.BindingRuleSet(10, newRule(idA, DefaultNamespace, "m", "x"), true)
			return err
		}},
		{"create without auth method", func() error {
			_, err := s.BindingRuleSet(10, newRule(idB, DefaultNamespace, "", "x"), true)
			return err
		}},
		{"create without namespace", func() error {
			_, err := s.BindingRuleSet(10, newRule(idB, "", "m", "x"), true)
			return err
		}},
		{"create with a non-UUID ID", func() error {
			_, err := s.BindingRuleSet(10, newRule("not-a-uuid", DefaultNamespace, "m", "x"), true)
			return err
		}},
		{"update missing", func() error {
			_, err := s.BindingRuleSet(10, newRule(idMissing, DefaultNamespace, "m", "x"), false)
			return err
		}},
		{"update other namespace", func() error {
			_, err := s.BindingRuleSet(10, newRule(idA, "team1", "m", "x"), false)
			return err
		}},
		{"update changing auth method", func() error {
			_, err := s.BindingRuleSet(10, newRule(idA, DefaultNamespace, "other", "x"), false)
			return err
		}},
		{"delete missing", func() error { return s.BindingRuleDelete(10, idMissing, DefaultNamespace) }},
		{"delete other namespace", func() error { return s.BindingRuleDelete(10, idA, "team1") }},
		{"delete non-UUID", func() error { return s.BindingRuleDelete(10, "nope", DefaultNamespace) }},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); err == nil {
				t.Fatal("write was accepted, want an error")
			}
			if got := s.TableIndex(bindingRulesTable); got != 4 {
				t.Fatalf("TableIndex = %d after a rejected write, want 4", got)
			}
			_, rule, err := s.BindingRule(nil, idA, DefaultNamespace)
			if err != nil || rule == nil {
				t.Fatalf("rule %s: %v %v", idA, rule, err)
			}
			if rule.BindName != "a" || rule.ModifyIndex != 4 || rule.Namespace != DefaultNamespace || rule.AuthMethod != "m" {
				t.Fatalf("rule changed by a rejected write: %+v", rule)
			}
			_, rules, _ := s.BindingRules(nil, AllNamespaces, "")
			if len(rules) != 1 {
				t.Fatalf("rejected write changed the rule count to %d", len(rules))
			}
		})
	}
}

func TestAbandon(t *testing.T) {
	s := NewStore()
	ch := s.AbandonCh()
	select {
	case <-ch:
		t.Fatal("AbandonCh of a new store is closed")
	default:
	}
	s.Abandon()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("AbandonCh delivered a value instead of being closed")
		}
	case <-time.After(time.Second):
		t.Fatal("AbandonCh not closed after Abandon")
	}
	// A second Abandon is a no-op, not a double close.
	s.Abandon()
	if s.AbandonCh() != ch {
		t.Fatal("AbandonCh changed after Abandon")
	}
	// Another store is not affected.
	other := NewStore()
	select {
	case <-other.AbandonCh():
		t.Fatal("a fresh store shares the abandoned store's channel")
	default:
	}
}

func TestErrorType(t *testing.T) {
	err := errorf(ErrConflict, "binding rule %s already exists", idA)
	if err.Code != ErrConflict {
		t.Fatalf("code %d, want %d", err.Code, ErrConflict)
	}
	if want := "binding rule " + idA + " already exists"; err.Error() != want || err.Msg != want {
		t.Fatalf("Error() %q Msg %q, want %q", err.Error(), err.Msg, want)
	}
	// The codes are distinct and non-zero so that a zero Error is never mistaken for one.
	codes := map[ErrorCode]string{}
	for name, c := range map[string]ErrorCode{"ErrNotFound": ErrNotFound, "ErrInvalid": ErrInvalid, "ErrConflict": ErrConflict} {
		if c == 0 {
			t.Errorf("%s is 0", name)
		}
		if prev, dup := codes[c]; dup {
			t.Errorf("%s and %s share code %d", name, prev, c)
		}
		codes[c] = name
	}
}
