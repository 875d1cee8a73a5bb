package state

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/hashicorp/go-memdb"
)

func TestSnapshotOfEmptyStore(t *testing.T) {
	snap := NewStore().Snapshot()
	defer snap.Close()
	idx, err := snap.Indexes()
	if err != nil || len(idx) != 0 {
		t.Fatalf("Indexes: %v %v, want none", idx, err)
	}
	rules, err := snap.BindingRules()
	if err != nil || len(rules) != 0 {
		t.Fatalf("BindingRules: %v %v, want none", rules, err)
	}
}

func TestSnapshotContents(t *testing.T) {
	s := seedList(t)
	if err := s.BindingRuleDelete(15, idC, DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	defer snap.Close()

	indexes, err := snap.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	wantIdx := []*IndexEntry{{Key: bindingRulesTable, Value: 15}}
	if !reflect.DeepEqual(indexes, wantIdx) {
		t.Fatalf("Indexes %+v, want %+v", indexes, wantIdx)
	}
	rules, err := snap.BindingRules()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ruleIDs(rules), []string{idA, idB, idD}; !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot rules %v, want %v", got, want)
	}
	_, live, _ := s.BindingRules(nil, AllNamespaces, "")
	if !reflect.DeepEqual(rules, live) {
		t.Fatal("snapshot rules differ from the store's")
	}
}

func TestSnapshotIsPointInTime(t *testing.T) {
	s := seedList(t)
	snap := s.Snapshot()
	defer snap.Close()

	// Writes after the snapshot are not in it, and are not blocked by it.
	mustCreate(t, s, 20, newRule(idMissing, DefaultNamespace, "jwt", "late"))
	if _, err := s.BindingRuleSet(21, newRule(idA, DefaultNamespace, "", "a-changed"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.BindingRuleDelete(22, idD, "team1"); err != nil {
		t.Fatal(err)
	}

	rules, err := snap.BindingRules()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ruleIDs(rules), []string{idA, idB, idC, idD}; !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot rules %v, want %v", got, want)
	}
	if rules[0].BindName != "a" || rules[0].ModifyIndex != 11 {
		t.Fatalf("snapshot sees the later update: %+v", rules[0])
	}
	indexes, _ := snap.Indexes()
	if want := []*IndexEntry{{Key: bindingRulesTable, Value: 13}}; !reflect.DeepEqual(indexes, want) {
		t.Fatalf("snapshot indexes %+v, want %+v", indexes, want)
	}
	if got := s.TableIndex(bindingRulesTable); got != 22 {
		t.Fatalf("live TableIndex %d, want 22", got)
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	src := seedList(t)
	if _, err := src.BindingRuleSet(17, newRule(idC, DefaultNamespace, "", "c2"), false); err != nil {
		t.Fatal(err)
	}
	snap := src.Snapshot()
	defer snap.Close()
	indexes, err := snap.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := snap.BindingRules()
	if err != nil {
		t.Fatal(err)
	}

	r := NewRestore()
	for _, e := range indexes {
		cp := *e
		if err := r.Index(&cp); err != nil {
			t.Fatal(err)
		}
	}
	for _, rule := range rules {
		cp := *rule
		if err := r.BindingRule(&cp); err != nil {
			t.Fatal(err)
		}
	}
	dst := r.Commit()
	if dst == src {
		t.Fatal("restore returned the source store")
	}

	if got := dst.TableIndex(bindingRulesTable); got != 17 {
		t.Fatalf("restored TableIndex %d, want 17", got)
	}
	_, want, _ := src.BindingRules(nil, AllNamespaces, "")
	idx, got, err := dst.BindingRules(nil, AllNamespaces, "")
	if err != nil || idx != 17 {
		t.Fatalf("restored list: idx %d err %v", idx, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored rules differ:\n got %+v\nwant %+v", got, want)
	}
	// Secondary indexes are rebuilt.
	_, byMethod, _ := dst.BindingRules(nil, AllNamespaces, "minikube")
	if ids, want := ruleIDs(byMethod), []string{idB, idC, idD}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("restored authmethod index %v, want %v", ids, want)
	}
	_, one, _ := dst.BindingRule(nil, idC, DefaultNamespace)
	if one == nil || one.BindName != "c2" || one.CreateIndex != 10 || one.ModifyIndex != 17 {
		t.Fatalf("restored rule %+v", one)
	}

	// The restored store is writable and keeps going from the restored state.
	ws := memdb.NewWatchSet()
	dst.BindingRule(ws, idA, DefaultNamespace)
	if _, err := dst.BindingRuleSet(30, newRule(idA, DefaultNamespace, "", "a3"), false); err != nil {
		t.Fatal(err)
	}
	if !fired(ws) {
		t.Fatal("watch on the restored store did not fire")
	}
	if _, err := dst.BindingRuleSet(31, newRule(idB, DefaultNamespace, "jwt", "x"), true); err == nil {
		t.Fatal("restored store accepted a duplicate ID")
	}
	// The source is independent of the restored store.
	_, srcA, _ := src.BindingRule(nil, idA, DefaultNamespace)
	if srcA.BindName != "a" || src.TableIndex(bindingRulesTable) != 17 {
		t.Fatalf("source changed by a write to the restored store: %+v", srcA)
	}
}

func TestRestoreEmpty(t *testing.T) {
	s := NewRestore().Commit()
	if got := s.TableIndex(bindingRulesTable); got != 1 {
		t.Fatalf("TableIndex %d, want 1", got)
	}
	_, rules, err := s.BindingRules(nil, AllNamespaces, "")
	if err != nil || len(rules) != 0 {
		t.Fatalf("rules %v err %v", rules, err)
	}
}

func TestRestoreErrors(t *testing.T) {
	r := NewRestore()
	defer r.Abort()
	err := r.BindingRule(&BindingRule{ID: "bad", AuthMethod: "m", Namespace: DefaultNamespace})
	if err == nil || !strings.HasPrefix(err.Error(), "failed restoring binding rule bad: ") {
		t.Fatalf("bad rule ID: err %v", err)
	}
	err = r.Index(&IndexEntry{Key: "", Value: 3})
	if err == nil || !strings.HasPrefix(err.Error(), `failed restoring index "": `) {
		t.Fatalf("empty index key: err %v", err)
	}
}

func TestRestoreAbort(t *testing.T) {
	r := NewRestore()
	if err := r.BindingRule(newRule(idA, DefaultNamespace, "m", "a")); err != nil {
		t.Fatal(err)
	}
	if err := r.Index(&IndexEntry{Key: bindingRulesTable, Value: 9}); err != nil {
		t.Fatal(err)
	}
	r.Abort()
	// Nothing of an aborted restore is visible in its store.
	s := r.store
	if got := s.TableIndex(bindingRulesTable); got != 1 {
		t.Fatalf("aborted restore: TableIndex %d, want 1", got)
	}
	if _, rule, _ := s.BindingRule(nil, idA, AllNamespaces); rule != nil {
		t.Fatalf("aborted restore: rule %+v visible", rule)
	}
}

// sameBytes reports whether two strings share their bytes (one copy).
func sameBytes(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

func TestRestoreSharesRepeatedStrings(t *testing.T) {
	// Each rule with its own copy of every string, as decoding makes them.
	mk := func(id, desc string) *BindingRule {
		return &BindingRule{
			ID: id, Description: desc,
			AuthMethod: strings.Clone("minikube"), Selector: strings.Clone(`value.team == "a"`),
			BindType: strings.Clone(BindTypeService), BindName: strings.Clone("svc-${value.name}"),
			Namespace: strings.Clone(DefaultNamespace), CreateIndex: 3, ModifyIndex: 4,
		}
	}
	a, b := mk(idA, "rule a"), mk(idB, "rule b")
	r := NewRestore()
	if err := r.Insert(bindingRulesTable, a); err != nil {
		t.Fatal(err)
	}
	if err := r.BindingRule(b); err != nil {
		t.Fatal(err)
	}
	s := r.Commit()
	_, ra, _ := s.BindingRule(nil, idA, DefaultNamespace)
	_, rb, _ := s.BindingRule(nil, idB, DefaultNamespace)
	if ra == nil || rb == nil {
		t.Fatalf("restored rules %+v %+v", ra, rb)
	}
	for _, f := range []struct{ name, a, b string }{
		{"AuthMethod", ra.AuthMethod, rb.AuthMethod}, {"Selector", ra.Selector, rb.Selector},
		{"BindType", ra.BindType, rb.BindType}, {"BindName", ra.BindName, rb.BindName},
		{"Namespace", ra.Namespace, rb.Namespace},
	} {
		if f.a != f.b || !sameBytes(f.a, f.b) {
			t.Errorf("%s: %q and %q are two copies", f.name, f.a, f.b)
		}
	}
	// Per-rule fields keep their values.
	if ra.Description != "rule a" || rb.Description != "rule b" || ra.ID != idA || rb.ID != idB {
		t.Fatalf("restored %+v %+v", ra, rb)
	}
	_, byMethod, _ := s.BindingRules(nil, DefaultNamespace, "minikube")
	if got := ruleIDs(byMethod); !reflect.DeepEqual(got, []string{idA, idB}) {
		t.Fatalf("authmethod index lists %v", got)
	}
}

func TestRestoreStringSharingIsBounded(t *testing.T) {
	m := restoreStrings{}
	for i := 0; i < maxRestoreStrings+10; i++ {
		m.share(strings.Repeat("x", 1) + fmt.Sprint(i))
	}
	if len(m) != maxRestoreStrings {
		t.Fatalf("%d strings remembered, want at most %d", len(m), maxRestoreStrings)
	}
	// A known string is still shared past the bound; a new one is kept as is.
	known := m.share("x1")
	if got := m.share(strings.Clone("x1")); !sameBytes(got, known) {
		t.Fatal("a known string is not shared once the bound is reached")
	}
	if got := m.share("new"); got != "new" {
		t.Fatalf("share(new) = %q", got)
	}
}

func TestBindingRuleSetSharesNames(t *testing.T) {
	s := NewStore()
	r1 := newRule(idA, strings.Clone(DefaultNamespace), strings.Clone("jwt"), "a")
	r2 := newRule(idB, strings.Clone(DefaultNamespace), strings.Clone("jwt"), "b")
	r1.BindType, r2.BindType = strings.Clone(BindTypeService), strings.Clone(BindTypeService)
	a, err := s.BindingRuleSet(5, r1, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.BindingRuleSet(6, r2, true)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBytes(a.AuthMethod, b.AuthMethod) || !sameBytes(a.Namespace, b.Namespace) || !sameBytes(a.BindType, b.BindType) {
		t.Fatalf("stored rules keep their own copies of AuthMethod, Namespace, BindType: %+v %+v", a, b)
	}
}
