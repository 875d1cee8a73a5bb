package state

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/hashicorp/go-memdb"
)

func TestBindingRuleReadMissingOnEmptyStore(t *testing.T) {
	s := NewStore()
	for _, ns := range []string{DefaultNamespace, AllNamespaces, "team1"} {
		idx, rule, err := s.BindingRule(nil, idMissing, ns)
		if err != nil || rule != nil || idx != 1 {
			t.Fatalf("ns %q: idx %d rule %v err %v, want 1 nil nil", ns, idx, rule, err)
		}
	}
}

func TestBindingRuleCreateAndRead(t *testing.T) {
	s := NewStore()
	in := &BindingRule{
		ID:          idA,
		Description: "k8s services",
		AuthMethod:  "minikube",
		Selector:    `serviceaccount.namespace == default`,
		BindType:    BindTypeService,
		BindName:    "k8s-${serviceaccount.name}",
		Namespace:   "team1",
		CreateIndex: 999, // client-sent indexes are ignored
		ModifyIndex: 998,
	}
	out, err := s.BindingRuleSet(7, in, true)
	if err != nil {
		t.Fatal(err)
	}
	want := &BindingRule{
		ID:          idA,
		Description: "k8s services",
		AuthMethod:  "minikube",
		Selector:    `serviceaccount.namespace == default`,
		BindType:    BindTypeService,
		BindName:    "k8s-${serviceaccount.name}",
		Namespace:   "team1",
		CreateIndex: 7,
		ModifyIndex: 7,
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("create returned %+v, want %+v", out, want)
	}
	// The caller's struct is not modified.
	if in.CreateIndex != 999 || in.ModifyIndex != 998 {
		t.Fatalf("create modified its argument: %+v", in)
	}

	tests := []struct {
		name    string
		id, ns  string
		wantHit bool
	}{
		{"own namespace", idA, "team1", true},
		{"all namespaces", idA, AllNamespaces, true},
		{"uppercase ID", strings.ToUpper(idA), "team1", true},
		{"other namespace", idA, DefaultNamespace, false},
		{"empty namespace", idA, "", false},
		{"missing ID", idMissing, "team1", false},
		{"missing ID all namespaces", idMissing, AllNamespaces, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, rule, err := s.BindingRule(memdb.NewWatchSet(), tc.id, tc.ns)
			if err != nil {
				t.Fatal(err)
			}
			if idx != 7 {
				t.Errorf("index %d, want 7", idx)
			}
			if tc.wantHit {
				if !reflect.DeepEqual(rule, want) {
					t.Fatalf("got %+v, want %+v", rule, want)
				}
			} else if rule != nil {
				t.Fatalf("got %+v, want nil", rule)
			}
		})
	}
}

func TestBindingRuleReadInvalidID(t *testing.T) {
	s := NewStore()
	tests := []struct{ id, want string }{
		{"not-a-uuid", "failed binding rule lookup: index error: UUID must be 36 characters"},
		{"", "failed binding rule lookup: index error: UUID must be 36 characters"},
		{"zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", "failed binding rule lookup: index error: Invalid UUID: encoding/hex: invalid byte: U+007A 'z'"},
	}
	for _, tc := range tests {
		idx, rule, err := s.BindingRule(nil, tc.id, DefaultNamespace)
		if err == nil || err.Error() != tc.want {
			t.Errorf("id %q: err %v, want %q", tc.id, err, tc.want)
		}
		if idx != 0 || rule != nil {
			t.Errorf("id %q: idx %d rule %v on error, want 0 nil", tc.id, idx, rule)
		}
	}
}

// seedList creates, out of ID order:
//
//	idC default  minikube   at 10
//	idA default  jwt        at 11
//	idD team1    minikube   at 12
//	idB default  minikube   at 13
func seedList(t *testing.T) *Store {
	t.Helper()
	s := NewStore()
	mustCreate(t, s, 10, newRule(idC, DefaultNamespace, "minikube", "c"))
	mustCreate(t, s, 11, newRule(idA, DefaultNamespace, "jwt", "a"))
	mustCreate(t, s, 12, newRule(idD, "team1", "minikube", "d"))
	mustCreate(t, s, 13, newRule(idB, DefaultNamespace, "minikube", "b"))
	return s
}

func TestBindingRulesList(t *testing.T) {
	s := seedList(t)
	tests := []struct {
		name, ns, method string
		want             []string
	}{
		{"default namespace", DefaultNamespace, "", []string{idA, idB, idC}},
		{"all namespaces", AllNamespaces, "", []string{idA, idB, idC, idD}},
		{"team1", "team1", "", []string{idD}},
		{"unknown namespace", "nope", "", []string{}},
		{"empty namespace is not a wildcard", "", "", []string{}},
		{"default minikube", DefaultNamespace, "minikube", []string{idB, idC}},
		{"all minikube", AllNamespaces, "minikube", []string{idB, idC, idD}},
		{"default jwt", DefaultNamespace, "jwt", []string{idA}},
		{"team1 jwt", "team1", "jwt", []string{}},
		{"auth method filter is exact (case)", AllNamespaces, "Minikube", []string{}},
		{"auth method filter is exact (prefix)", AllNamespaces, "mini", []string{}},
		{"unknown auth method", AllNamespaces, "ldap", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, rules, err := s.BindingRules(memdb.NewWatchSet(), tc.ns, tc.method)
			if err != nil {
				t.Fatal(err)
			}
			if idx != 13 {
				t.Errorf("index %d, want 13", idx)
			}
			if rules == nil {
				t.Fatal("list returned nil, want a non-nil (possibly empty) slice")
			}
			if got := ruleIDs(rules); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("IDs %v, want %v", got, tc.want)
			}
			for _, r := range rules {
				if tc.ns != AllNamespaces && r.Namespace != tc.ns {
					t.Errorf("rule %s of namespace %q listed for %q", r.ID, r.Namespace, tc.ns)
				}
				if tc.method != "" && r.AuthMethod != tc.method {
					t.Errorf("rule %s of method %q listed for %q", r.ID, r.AuthMethod, tc.method)
				}
			}
		})
	}
}

func TestBindingRulesListContents(t *testing.T) {
	s := seedList(t)
	_, rules, err := s.BindingRules(nil, AllNamespaces, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []*BindingRule{
		{ID: idA, Description: "rule a", AuthMethod: "jwt", Selector: "value.team == a", BindType: "service", BindName: "a", Namespace: "default", CreateIndex: 11, ModifyIndex: 11},
		{ID: idB, Description: "rule b", AuthMethod: "minikube", Selector: "value.team == b", BindType: "service", BindName: "b", Namespace: "default", CreateIndex: 13, ModifyIndex: 13},
		{ID: idC, Description: "rule c", AuthMethod: "minikube", Selector: "value.team == c", BindType: "service", BindName: "c", Namespace: "default", CreateIndex: 10, ModifyIndex: 10},
		{ID: idD, Description: "rule d", AuthMethod: "minikube", Selector: "value.team == d", BindType: "service", BindName: "d", Namespace: "team1", CreateIndex: 12, ModifyIndex: 12},
	}
	if !reflect.DeepEqual(rules, want) {
		for i := range rules {
			t.Logf("got %+v", rules[i])
		}
		t.Fatal("list contents differ")
	}
}

func TestBindingRulesListEmptyStore(t *testing.T) {
	s := NewStore()
	idx, rules, err := s.BindingRules(nil, AllNamespaces, "")
	if err != nil || idx != 1 || rules == nil || len(rules) != 0 {
		t.Fatalf("idx %d rules %#v err %v, want 1, empty non-nil, nil", idx, rules, err)
	}
	idx, rules, err = s.BindingRules(nil, DefaultNamespace, "minikube")
	if err != nil || idx != 1 || rules == nil || len(rules) != 0 {
		t.Fatalf("by method: idx %d rules %#v err %v, want 1, empty non-nil, nil", idx, rules, err)
	}
}

func TestBindingRuleUpdate(t *testing.T) {
	s := NewStore()
	mustCreate(t, s, 3, &BindingRule{
		ID: idA, Description: "old", AuthMethod: "minikube", Selector: "a == b",
		BindType: BindTypeService, BindName: "old", Namespace: "team1",
	})

	tests := []struct {
		name   string
		idx    uint64
		update BindingRule
		want   BindingRule
	}{
		{
			name:   "empty auth method is inherited, full replace of the rest",
			idx:    5,
			update: BindingRule{ID: idA, BindType: BindTypeRole, BindName: "Admins", Namespace: "team1"},
			want:   BindingRule{ID: idA, AuthMethod: "minikube", BindType: BindTypeRole, BindName: "Admins", Namespace: "team1", CreateIndex: 3, ModifyIndex: 5},
		},
		{
			name: "same auth method is accepted, client indexes ignored",
			idx:  9,
			update: BindingRule{ID: idA, Description: "new", AuthMethod: "minikube", Selector: "x != y",
				BindType: BindTypeNode, BindName: "n-${x}", Namespace: "team1", CreateIndex: 100, ModifyIndex: 200},
			want: BindingRule{ID: idA, Description: "new", AuthMethod: "minikube", Selector: "x != y",
				BindType: BindTypeNode, BindName: "n-${x}", Namespace: "team1", CreateIndex: 3, ModifyIndex: 9},
		},
		{
			name:   "uppercase ID updates the rule and keeps the stored ID",
			idx:    12,
			update: BindingRule{ID: strings.ToUpper(idA), BindType: BindTypeService, BindName: "up", Namespace: "team1"},
			want:   BindingRule{ID: idA, AuthMethod: "minikube", BindType: BindTypeService, BindName: "up", Namespace: "team1", CreateIndex: 3, ModifyIndex: 12},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.update
			out, err := s.BindingRuleSet(tc.idx, &in, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*out, tc.want) {
				t.Fatalf("update returned %+v, want %+v", *out, tc.want)
			}
			if in != tc.update {
				t.Fatalf("update modified its argument: %+v", in)
			}
			idx, stored, err := s.BindingRule(nil, idA, "team1")
			if err != nil || stored == nil {
				t.Fatalf("read back: %v %v", stored, err)
			}
			if !reflect.DeepEqual(*stored, tc.want) {
				t.Fatalf("stored %+v, want %+v", *stored, tc.want)
			}
			if idx != tc.idx {
				t.Fatalf("read index %d, want %d", idx, tc.idx)
			}
			_, all, _ := s.BindingRules(nil, AllNamespaces, "")
			if len(all) != 1 {
				t.Fatalf("update changed the rule count to %d", len(all))
			}
		})
	}
}

func TestBindingRuleSetErrors(t *testing.T) {
	seed := func(t *testing.T) *Store {
		s := NewStore()
		mustCreate(t, s, 2, newRule(idA, "team1", "minikube", "a"))
		return s
	}
	tests := []struct {
		name   string
		rule   *BindingRule
		create bool
		code   ErrorCode
		msg    string
	}{
		{"create without ID", newRule("", "team1", "minikube", "x"), true, ErrInvalid, "binding rule is missing its ID or namespace"},
		{"update without ID", newRule("", "team1", "minikube", "x"), false, ErrInvalid, "binding rule is missing its ID or namespace"},
		{"create without namespace", newRule(idB, "", "minikube", "x"), true, ErrInvalid, "binding rule is missing its ID or namespace"},
		{"update without namespace", newRule(idA, "", "minikube", "x"), false, ErrInvalid, "binding rule is missing its ID or namespace"},
		{"create of an existing ID", newRule(idA, "team1", "minikube", "x"), true, ErrConflict, "binding rule " + idA + " already exists"},
		{"create of an existing ID in another namespace", newRule(idA, DefaultNamespace, "jwt", "x"), true, ErrConflict, "binding rule " + idA + " already exists"},
		{"create of an existing ID in uppercase", newRule(strings.ToUpper(idA), "team1", "minikube", "x"), true, ErrConflict, "binding rule " + strings.ToUpper(idA) + " already exists"},
		{"create without auth method", newRule(idB, "team1", "", "x"), true, ErrInvalid, "Invalid Binding Rule: no AuthMethod is set"},
		{"create with a non-UUID ID", newRule("abc", "team1", "minikube", "x"), true, ErrInvalid, `binding rule ID "abc" is not a UUID`},
		{"update of a missing rule", newRule(idMissing, "team1", "minikube", "x"), false, ErrNotFound, "cannot find binding rule " + idMissing},
		{"update of a missing rule without auth method", newRule(idMissing, "team1", "", "x"), false, ErrNotFound, "cannot find binding rule " + idMissing},
		{"update in another namespace", newRule(idA, DefaultNamespace, "minikube", "x"), false, ErrNotFound, "cannot find binding rule " + idA},
		{"update changing the auth method", newRule(idA, "team1", "jwt", "x"), false, ErrInvalid, "the AuthMethod field of an Binding Rule is immutable"},
		{"update changing the auth method's case", newRule(idA, "team1", "Minikube", "x"), false, ErrInvalid, "the AuthMethod field of an Binding Rule is immutable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seed(t)
			out, err := s.BindingRuleSet(20, tc.rule, tc.create)
			if out != nil {
				t.Fatalf("rejected write returned %+v", out)
			}
			wantStateError(t, err, tc.code, tc.msg)
			_, rule, _ := s.BindingRule(nil, idA, AllNamespaces)
			if rule == nil || rule.BindName != "a" || rule.ModifyIndex != 2 || rule.Namespace != "team1" {
				t.Fatalf("stored rule changed: %+v", rule)
			}
			if got := s.TableIndex(bindingRulesTable); got != 2 {
				t.Fatalf("TableIndex %d, want 2", got)
			}
		})
	}
}

func TestBindingRuleDelete(t *testing.T) {
	t.Run("found", func(t *testing.T) {
		s := seedList(t)
		if err := s.BindingRuleDelete(20, idB, DefaultNamespace); err != nil {
			t.Fatal(err)
		}
		idx, rule, err := s.BindingRule(nil, idB, AllNamespaces)
		if err != nil || rule != nil || idx != 20 {
			t.Fatalf("after delete: idx %d rule %v err %v, want 20 nil nil", idx, rule, err)
		}
		_, rules, _ := s.BindingRules(nil, AllNamespaces, "")
		if got, want := ruleIDs(rules), []string{idA, idC, idD}; !reflect.DeepEqual(got, want) {
			t.Fatalf("remaining %v, want %v", got, want)
		}
		_, rules, _ = s.BindingRules(nil, AllNamespaces, "minikube")
		if got, want := ruleIDs(rules), []string{idC, idD}; !reflect.DeepEqual(got, want) {
			t.Fatalf("remaining minikube %v, want %v (authmethod index not cleaned)", got, want)
		}
		// Deleting again is not found and does not move the index.
		wantStateError(t, s.BindingRuleDelete(21, idB, DefaultNamespace), ErrNotFound, "binding rule does not exist")
		if got := s.TableIndex(bindingRulesTable); got != 20 {
			t.Fatalf("TableIndex %d, want 20", got)
		}
	})
	t.Run("uppercase ID", func(t *testing.T) {
		s := seedList(t)
		if err := s.BindingRuleDelete(20, strings.ToUpper(idD), "team1"); err != nil {
			t.Fatal(err)
		}
		if _, rule, _ := s.BindingRule(nil, idD, AllNamespaces); rule != nil {
			t.Fatalf("rule still there: %+v", rule)
		}
	})
	tests := []struct {
		name, id, ns string
		code         ErrorCode
		msg          string
	}{
		{"missing", idMissing, DefaultNamespace, ErrNotFound, "binding rule does not exist"},
		{"other namespace", idD, DefaultNamespace, ErrNotFound, "binding rule does not exist"},
		{"wildcard is not a namespace for delete", idD, AllNamespaces, ErrNotFound, "binding rule does not exist"},
		{"non-UUID", "x", DefaultNamespace, ErrInvalid, `binding rule ID "x" is not a UUID`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seedList(t)
			wantStateError(t, s.BindingRuleDelete(20, tc.id, tc.ns), tc.code, tc.msg)
			_, rules, _ := s.BindingRules(nil, AllNamespaces, "")
			if got, want := ruleIDs(rules), []string{idA, idB, idC, idD}; !reflect.DeepEqual(got, want) {
				t.Fatalf("rules %v, want %v", got, want)
			}
			if got := s.TableIndex(bindingRulesTable); got != 13 {
				t.Fatalf("TableIndex %d, want 13", got)
			}
		})
	}
}

func TestBindingRuleCreateAfterDeleteReusesID(t *testing.T) {
	s := NewStore()
	mustCreate(t, s, 3, newRule(idA, DefaultNamespace, "m", "a"))
	if err := s.BindingRuleDelete(4, idA, DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	out := mustCreate(t, s, 6, newRule(idA, "team1", "m2", "b"))
	if out.CreateIndex != 6 || out.ModifyIndex != 6 || out.Namespace != "team1" || out.AuthMethod != "m2" {
		t.Fatalf("re-created rule %+v", out)
	}
}

func TestBindingRuleWatchFound(t *testing.T) {
	tests := []struct {
		name  string
		ns    string // namespace the watched read uses
		write func(t *testing.T, s *Store)
		fire  bool
	}{
		{"update of the rule", DefaultNamespace, func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idB, DefaultNamespace, "", "b2"), false); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"delete of the rule", DefaultNamespace, func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idB, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"update of the rule read with the wildcard", AllNamespaces, func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idB, DefaultNamespace, "", "b2"), false); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"create of an unrelated rule", DefaultNamespace, func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "minikube", "x"))
		}, false},
		{"update of an unrelated rule", DefaultNamespace, func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idC, DefaultNamespace, "", "c2"), false); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"delete of an unrelated rule", DefaultNamespace, func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idA, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"rejected update of the rule", DefaultNamespace, func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idB, DefaultNamespace, "jwt", "b2"), false); err == nil {
				t.Fatal("update accepted")
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seedList(t)
			for i, name := range []string{"minikube", "jwt", "ldap"} {
				if _, err := s.ACLAuthMethodSet(uint64(14+i), newMethod(name), true); err != nil {
					t.Fatal(err)
				}
			}
			ws := memdb.NewWatchSet()
			_, rule, err := s.BindingRule(ws, idB, tc.ns)
			if err != nil || rule == nil {
				t.Fatalf("read: %v %v", rule, err)
			}
			if fired(ws) {
				t.Fatal("watch fired before any write")
			}
			tc.write(t, s)
			if got := fired(ws); got != tc.fire {
				t.Fatalf("watch fired = %v, want %v", got, tc.fire)
			}
		})
	}
}

func TestBindingRuleWatchMissing(t *testing.T) {
	tests := []struct {
		name      string
		id, ns    string
		write     func(t *testing.T, s *Store)
		wantFired bool
	}{
		{"create of another rule", idMissing, DefaultNamespace, func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule("22222222-2222-4333-8444-555555555555", "team9", "jwt", "z"))
		}, true},
		{"update of another rule", idMissing, DefaultNamespace, func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idD, "team1", "", "d2"), false); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"delete of another rule", idMissing, DefaultNamespace, func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idC, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"create of the rule itself", idMissing, DefaultNamespace, func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "jwt", "z"))
		}, true},
		{"rule of another namespace, unrelated write", idD, DefaultNamespace, func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idA, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"rejected write", idMissing, DefaultNamespace, func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idA, DefaultNamespace, "jwt", "dup"), true); err == nil {
				t.Fatal("conflicting create accepted")
			}
		}, false},
		{"rejected delete", idMissing, DefaultNamespace, func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idMissing, DefaultNamespace); err == nil {
				t.Fatal("delete of a missing rule accepted")
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seedList(t)
			for i, name := range []string{"minikube", "jwt", "ldap"} {
				if _, err := s.ACLAuthMethodSet(uint64(14+i), newMethod(name), true); err != nil {
					t.Fatal(err)
				}
			}
			ws := memdb.NewWatchSet()
			_, rule, err := s.BindingRule(ws, tc.id, tc.ns)
			if err != nil || rule != nil {
				t.Fatalf("read: %v %v, want nil nil", rule, err)
			}
			if fired(ws) {
				t.Fatal("watch fired before any write")
			}
			tc.write(t, s)
			if got := fired(ws); got != tc.wantFired {
				t.Fatalf("watch fired = %v, want %v", got, tc.wantFired)
			}
		})
	}
}

func TestBindingRuleWatchMissingOnEmptyStore(t *testing.T) {
	s := NewStore()
	ws := memdb.NewWatchSet()
	if _, rule, err := s.BindingRule(ws, idMissing, DefaultNamespace); err != nil || rule != nil {
		t.Fatalf("read: %v %v", rule, err)
	}
	if fired(ws) {
		t.Fatal("watch fired before any write")
	}
	mustCreate(t, s, 2, newRule(idD, "team1", "jwt", "d"))
	if !fired(ws) {
		t.Fatal("watch of a missing rule did not fire on the table's first write")
	}
}

func TestBindingRulesWatch(t *testing.T) {
	tests := []struct {
		name       string
		ns, method string
		write      func(t *testing.T, s *Store)
		wantFired  bool
	}{
		{"insert", DefaultNamespace, "", func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "jwt", "n"))
		}, true},
		{"insert, wildcard", AllNamespaces, "", func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, "team7", "jwt", "n"))
		}, true},
		{"update", DefaultNamespace, "", func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idA, DefaultNamespace, "", "a2"), false); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"delete", DefaultNamespace, "", func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idC, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"insert of the filtered method", DefaultNamespace, "minikube", func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "minikube", "n"))
		}, true},
		{"delete of the filtered method", AllNamespaces, "minikube", func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idD, "team1"); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"insert of another method", DefaultNamespace, "minikube", func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "zzz", "n"))
		}, false},
		{"insert of the method in another case", DefaultNamespace, "minikube", func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "Minikube", "n"))
		}, false},
		{"update of the filtered method", AllNamespaces, "minikube", func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idD, "team1", "", "d2"), false); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"update of another method", AllNamespaces, "minikube", func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idA, DefaultNamespace, "", "a2"), false); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"delete of another method", AllNamespaces, "minikube", func(t *testing.T, s *Store) {
			if err := s.BindingRuleDelete(20, idA, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the filtered method deleted", AllNamespaces, "minikube", func(t *testing.T, s *Store) {
			if err := s.ACLAuthMethodDelete(21, "minikube"); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a method with no rules deleted", AllNamespaces, "minikube", func(t *testing.T, s *Store) {
			if err := s.ACLAuthMethodDelete(21, "ldap"); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"first rule of a method never listed", DefaultNamespace, "ldap", func(t *testing.T, s *Store) {
			mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "ldap", "n"))
		}, true},
		{"rejected insert", DefaultNamespace, "", func(t *testing.T, s *Store) {
			if _, err := s.BindingRuleSet(20, newRule(idA, DefaultNamespace, "jwt", "dup"), true); err == nil {
				t.Fatal("conflicting create accepted")
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seedList(t)
			for i, name := range []string{"minikube", "jwt", "ldap"} {
				if _, err := s.ACLAuthMethodSet(uint64(14+i), newMethod(name), true); err != nil {
					t.Fatal(err)
				}
			}
			ws := memdb.NewWatchSet()
			if _, _, err := s.BindingRules(ws, tc.ns, tc.method); err != nil {
				t.Fatal(err)
			}
			if fired(ws) {
				t.Fatal("watch fired before any write")
			}
			tc.write(t, s)
			if got := fired(ws); got != tc.wantFired {
				t.Fatalf("watch fired = %v, want %v", got, tc.wantFired)
			}
		})
	}
}

func TestBindingRulesWatchOnEmptyTable(t *testing.T) {
	s := NewStore()
	ws := memdb.NewWatchSet()
	if _, rules, err := s.BindingRules(ws, DefaultNamespace, ""); err != nil || len(rules) != 0 {
		t.Fatalf("list: %v %v", rules, err)
	}
	mustCreate(t, s, 2, newRule(idA, DefaultNamespace, "jwt", "a"))
	if !fired(ws) {
		t.Fatal("list watch on an empty table did not fire on insert")
	}
	ws = memdb.NewWatchSet()
	idx, rules, err := s.BindingRules(ws, DefaultNamespace, "")
	if err != nil || idx != 2 || len(rules) != 1 || rules[0].ID != idA {
		t.Fatalf("re-read: idx %d rules %v err %v", idx, rules, err)
	}
	if fired(ws) {
		t.Fatal("fresh watch fired without a write")
	}
}

func TestBindingRuleNilWatchSet(t *testing.T) {
	// Callers that do not block pass a nil WatchSet; adding to it is a no-op.
	s := seedList(t)
	if _, r, err := s.BindingRule(nil, idA, DefaultNamespace); err != nil || r == nil {
		t.Fatalf("found read with nil ws: %v %v", r, err)
	}
	if _, r, err := s.BindingRule(nil, idMissing, DefaultNamespace); err != nil || r != nil {
		t.Fatalf("missing read with nil ws: %v %v", r, err)
	}
	if _, rs, err := s.BindingRules(nil, AllNamespaces, "minikube"); err != nil || len(rs) != 3 {
		t.Fatalf("list with nil ws: %d %v", len(rs), err)
	}
}

// The rows that wake the lists of one method's rules are derived: no
// snapshot holds them (Tables, Counts, the Verifier), a restore rebuilds
// them from the rules, each counts its method's rules and goes with the
// last of them (or with the method, in any case of its name), so that the
// table holds no more rows than there are methods named by rules.
func TestBindingRuleMethodRowsAreDerived(t *testing.T) {
	for _, table := range Tables() {
		if table == bindingRuleMethodsTable {
			t.Fatalf("Tables() = %v: holds the derived %s", Tables(), bindingRuleMethodsTable)
		}
	}
	if err := NewVerifier().Insert(bindingRuleMethodsTable, &bindingRuleMethod{AuthMethod: "m"}); err == nil ||
		err.Error() != "failed restoring a row of acl-binding-rule-methods: invalid table 'acl-binding-rule-methods'" {
		t.Fatalf("a snapshot row of %s: %v", bindingRuleMethodsTable, err)
	}
	if NewRow(bindingRuleMethodsTable) != nil {
		t.Fatalf("NewRow(%s) made a row", bindingRuleMethodsTable)
	}

	s := seedList(t)
	if _, ok := s.Counts()[bindingRuleMethodsTable]; ok {
		t.Fatalf("Counts() = %v: counts the derived table", s.Counts())
	}
	rows := func(s *Store) map[string]int {
		txn := s.db.Txn(false)
		defer txn.Abort()
		iter, err := txn.Get(bindingRuleMethodsTable, "id")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			out[raw.(*bindingRuleMethod).AuthMethod] = raw.(*bindingRuleMethod).Rules
		}
		return out
	}
	if got, want := rows(s), map[string]int{"jwt": 1, "minikube": 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after the seed: %v, want %v", got, want)
	}
	// An update keeps the count; a rule of a new spelling adds a row.
	if _, err := s.BindingRuleSet(20, newRule(idA, DefaultNamespace, "", "a2"), false); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, 21, newRule(idMissing, DefaultNamespace, "Minikube", "n"))
	if got, want := rows(s), map[string]int{"jwt": 1, "minikube": 3, "Minikube": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after an update and a create: %v, want %v", got, want)
	}

	r := NewRestore()
	snap := s.Snapshot()
	rules, err := snap.BindingRules()
	snap.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range rules {
		copied := *rule
		if err := r.Insert(bindingRulesTable, &copied); err != nil {
			t.Fatal(err)
		}
	}
	restored := r.Commit()
	if got, want := rows(restored), rows(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after a restore: %v, want %v", got, want)
	}
	ws := memdb.NewWatchSet()
	if _, list, err := restored.BindingRules(ws, AllNamespaces, "minikube"); err != nil || len(list) != 3 {
		t.Fatalf("restored list of minikube: %v, %v", list, err)
	}
	if err := restored.BindingRuleDelete(22, idB, DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if !fired(ws) {
		t.Fatal("the restored minikube list did not wake on the deletion of a minikube rule")
	}

	// The last rule of a spelling takes its row: delete and create rules of
	// ever new method names, and no row is left behind.
	for i := range 20 {
		id := fmt.Sprintf("%08x-1111-4111-8111-111111111111", i)
		mustCreate(t, s, uint64(30+2*i), newRule(id, DefaultNamespace, fmt.Sprintf("gone%d", i), "n"))
		if err := s.BindingRuleDelete(uint64(31+2*i), id, DefaultNamespace); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rows(s), map[string]int{"jwt": 1, "minikube": 3, "Minikube": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after creating and deleting rules of 20 other methods: %v, want %v", got, want)
	}
	ws = memdb.NewWatchSet()
	if _, _, err := s.BindingRules(ws, DefaultNamespace, "jwt"); err != nil {
		t.Fatal(err)
	}
	if err := s.BindingRuleDelete(80, idA, DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if !fired(ws) {
		t.Fatal("the jwt list did not wake on the deletion of its last rule")
	}

	if _, err := s.ACLAuthMethodSet(81, newMethod("minikube"), true); err != nil {
		t.Fatal(err)
	}
	if err := s.ACLAuthMethodDelete(82, "MINIKUBE"); err != nil {
		t.Fatal(err)
	}
	if got := rows(s); len(got) != 0 {
		t.Fatalf("rows after the last rules and the method went: %v, want none", got)
	}
}

// A stored rule keeps its own strings in one allocation (ID, Description,
// Selector, BindName on a write; ID and Description on a restore, which
// shares the others between rules), with the values unchanged.
func TestBindingRuleStringsPacked(t *testing.T) {
	contiguous := func(fields ...string) bool {
		for i := 1; i < len(fields); i++ {
			prev := fields[i-1]
			if len(fields[i]) == 0 || len(prev) == 0 {
				continue
			}
			if unsafe.StringData(fields[i]) != (*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(prev)), len(prev))) {
				return false
			}
		}
		return true
	}
	s := NewStore()
	in := newRule(idA, DefaultNamespace, "m", "svc-${value.name}")
	want := *in
	got := mustCreate(t, s, 10, in)
	if got.ID != want.ID || got.Description != want.Description || got.Selector != want.Selector || got.BindName != want.BindName ||
		got.AuthMethod != want.AuthMethod || got.BindType != want.BindType || got.Namespace != want.Namespace {
		t.Fatalf("stored %+v, want the fields of %+v", got, want)
	}
	if !contiguous(got.ID, got.Description, got.Selector, got.BindName) {
		t.Fatal("a written rule's ID, Description, Selector and BindName are not one allocation")
	}
	noDesc := newRule(idB, DefaultNamespace, "m", "b")
	noDesc.Description = ""
	if got := mustCreate(t, s, 11, noDesc); got.Description != "" || got.BindName != "b" || got.ID != idB || !contiguous(got.ID, got.Selector, got.BindName) {
		t.Fatalf("a rule without a description: %+v", got)
	}

	r := NewRestore()
	row := newRule(idC, DefaultNamespace, "m", "c")
	if err := r.Insert(bindingRulesTable, row); err != nil {
		t.Fatal(err)
	}
	_, restored, err := r.Commit().BindingRule(nil, idC, DefaultNamespace)
	if err != nil || restored == nil {
		t.Fatalf("restored rule: %v, %v", restored, err)
	}
	if restored.ID != idC || restored.Description != "rule c" || restored.BindName != "c" || !contiguous(restored.ID, restored.Description) {
		t.Fatalf("a restored rule's ID and Description are not one allocation, or changed: %+v", restored)
	}
}
