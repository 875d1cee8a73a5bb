package state

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

func TestACLAuthMethodCreateAndRead(t *testing.T) {
	s := NewStore()
	if idx, m, err := s.ACLAuthMethod(nil, "jwt"); err != nil || m != nil || idx != 1 {
		t.Fatalf("missing method: %d %+v %v", idx, m, err)
	}
	in := newMethod("Minikube")
	in.CreateIndex, in.ModifyIndex = 80, 90
	got, err := s.ACLAuthMethodSet(5, in, true)
	if err != nil {
		t.Fatal(err)
	}
	want := *newMethod("Minikube")
	want.CreateIndex, want.ModifyIndex = 5, 5
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %+v, want %+v", got, &want)
	}
	for _, name := range []string{"Minikube", "minikube", "MINIKUBE"} {
		if idx, m, err := s.ACLAuthMethod(nil, name); err != nil || idx != 5 || !reflect.DeepEqual(m, &want) {
			t.Fatalf("read %q: %d %+v %v", name, idx, m, err)
		}
	}
	if _, m, _ := s.ACLAuthMethod(nil, "mini"); m != nil {
		t.Fatalf("a prefix found %+v", m)
	}
	// The list is by (case-folded) name.
	for i, name := range []string{"b-method", "A-method"} {
		if _, err := s.ACLAuthMethodSet(uint64(6+i), newMethod(name), true); err != nil {
			t.Fatal(err)
		}
	}
	idx, all, err := s.ACLAuthMethods(nil)
	if err != nil || idx != 7 {
		t.Fatalf("list: %d %v", idx, err)
	}
	var names []string
	for _, m := range all {
		names = append(names, m.Name)
	}
	if want := []string{"A-method", "b-method", "Minikube"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("list order %v, want %v", names, want)
	}
}

func TestACLAuthMethodUpdate(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLAuthMethodSet(5, newMethod("Minikube"), true); err != nil {
		t.Fatal(err)
	}
	ws := memdb.NewWatchSet()
	s.ACLAuthMethod(ws, "minikube")
	upd := newMethod("MINIKUBE") // another case of the same name
	upd.Type = "JWT"             // the type compares case-insensitively
	upd.Description = "changed"
	upd.Config = map[string]any{"JWKSURL": "https://x"}
	got, err := s.ACLAuthMethodSet(8, upd, false)
	if err != nil {
		t.Fatal(err)
	}
	wantFired(t, ws, "method read on an update")
	want := *upd
	want.Name = "Minikube" // the stored name is kept
	want.CreateIndex, want.ModifyIndex = 5, 8
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("update returned %+v, want %+v", got, &want)
	}
	if _, m, _ := s.ACLAuthMethod(nil, "minikube"); !reflect.DeepEqual(m, &want) {
		t.Fatalf("stored %+v", m)
	}
	wantIndex(t, s, map[string]uint64{aclAuthMethodsTable: 8})
}

func TestACLAuthMethodSetErrors(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLAuthMethodSet(5, newMethod("jwt"), true); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	typed := func(name, typ string) *ACLAuthMethod {
		m := newMethod(name)
		m.Type = typ
		return m
	}
	tests := []struct {
		name   string
		m      *ACLAuthMethod
		create bool
		code   ErrorCode
		msg    string
	}{
		{"type is immutable", typed("jwt", "kubernetes"), false, ErrInvalid, "the Type field of an Auth Method is immutable"},
		{"type is immutable, other case of the name", typed("JWT", "oidc"), false, ErrInvalid, "the Type field of an Auth Method is immutable"},
		{"create of an existing name", newMethod("jwt"), true, ErrConflict, `Invalid Auth Method: An Auth Method with Name "jwt" already exists`},
		{"create of an existing name, other case", newMethod("Jwt"), true, ErrConflict, `Invalid Auth Method: An Auth Method with Name "Jwt" already exists`},
		{"update of a missing method", newMethod("nope"), false, ErrNotFound, `cannot find auth method "nope"`},
		{"no name", newMethod(""), true, ErrInvalid, "auth method is missing its name or type"},
		{"no type", typed("x", ""), true, ErrInvalid, "auth method is missing its name or type"},
		{"no type on update", typed("jwt", ""), false, ErrInvalid, "auth method is missing its name or type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := s.ACLAuthMethodSet(9, tc.m, tc.create)
			if m != nil {
				t.Fatalf("returned %+v with the error", m)
			}
			wantStateError(t, err, tc.code, tc.msg)
			wantUnchanged(t, s, before)
			wantIndex(t, s, map[string]uint64{aclAuthMethodsTable: 5})
		})
	}
}

// seedMethods makes methods "jwt" and "jwt-2" (a name that "jwt" is a
// prefix of), two binding rules and two tokens each, and a token of no method.
func seedMethods(t *testing.T) *Store {
	t.Helper()
	s := NewStore()
	for i, name := range []string{"jwt", "jwt-2"} {
		if _, err := s.ACLAuthMethodSet(uint64(2+i), newMethod(name), true); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, s, 4, newRule(idA, DefaultNamespace, "jwt", "a"))
	mustCreate(t, s, 5, newRule(idB, "team1", "jwt-2", "b"))
	mustCreate(t, s, 6, newRule(idC, "team1", "jwt", "c"))
	mustCreate(t, s, 7, newRule(idD, DefaultNamespace, "jwt-2", "d"))
	for i, tc := range []struct{ id, method string }{
		{idA, "jwt"}, {idB, "jwt-2"}, {idC, ""}, {idD, "jwt"}, {idMissing, "jwt-2"},
	} {
		tok := newToken(tc.id, "secret-"+tc.id)
		tok.AuthMethod = tc.method
		if _, err := s.ACLTokenSet(uint64(8+i), tok, true); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestACLAuthMethodDeleteCascades(t *testing.T) {
	s := seedMethods(t)
	rulesWS, tokensWS, methodWS, otherMethodWS := memdb.NewWatchSet(), memdb.NewWatchSet(), memdb.NewWatchSet(), memdb.NewWatchSet()
	s.BindingRules(rulesWS, AllNamespaces, "")
	s.ACLTokens(tokensWS, func(*ACLToken) bool { return true })
	s.ACLAuthMethod(methodWS, "jwt")
	s.ACLAuthMethod(otherMethodWS, "jwt-2")
	wantIndex(t, s, map[string]uint64{aclAuthMethodsTable: 3, bindingRulesTable: 7, aclTokensTable: 12})

	// Any case of the name finds the method; the cascade uses its stored name.
	if err := s.ACLAuthMethodDelete(20, "JWT"); err != nil {
		t.Fatal(err)
	}
	wantFired(t, methodWS, "the method's read")
	wantFired(t, rulesWS, "the binding-rule list")
	wantFired(t, tokensWS, "the token list")
	wantIndex(t, s, map[string]uint64{aclAuthMethodsTable: 20, bindingRulesTable: 20, aclTokensTable: 20})

	if _, m, _ := s.ACLAuthMethod(nil, "jwt"); m != nil {
		t.Fatalf("method still there: %+v", m)
	}
	if _, m, _ := s.ACLAuthMethod(nil, "jwt-2"); m == nil {
		t.Fatal("the other method went too")
	}
	_, rules, _ := s.BindingRules(nil, AllNamespaces, "")
	if got, want := ruleIDs(rules), []string{idB, idD}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rules left %v, want %v (those of jwt-2)", got, want)
	}
	_, toks, _ := s.ACLTokens(nil, func(*ACLToken) bool { return true })
	var ids []string
	for _, tok := range toks {
		ids = append(ids, tok.AccessorID)
	}
	if want := []string{idMissing, idB, idC}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("tokens left %v, want %v (jwt-2's and the one of no method)", ids, want)
	}
	// The secret index no longer finds the deleted tokens.
	if _, tok, _ := s.ACLTokenBySecret(nil, "secret-"+idA); tok != nil {
		t.Fatalf("deleted token by secret: %+v", tok)
	}
	// A new method of the same name starts with no rules and no tokens.
	if _, err := s.ACLAuthMethodSet(21, newMethod("jwt"), true); err != nil {
		t.Fatal(err)
	}
	if _, r, _ := s.BindingRules(nil, AllNamespaces, "jwt"); len(r) != 0 {
		t.Fatalf("new jwt has rules %+v", r)
	}
}

func TestACLAuthMethodDeleteTouchesOnlyWhatItChanged(t *testing.T) {
	s := seedMethods(t)
	if _, err := s.ACLAuthMethodSet(15, newMethod("lonely"), true); err != nil {
		t.Fatal(err)
	}
	rulesWS, tokensWS := memdb.NewWatchSet(), memdb.NewWatchSet()
	s.BindingRules(rulesWS, AllNamespaces, "")
	s.ACLTokens(tokensWS, func(*ACLToken) bool { return true })
	if err := s.ACLAuthMethodDelete(16, "lonely"); err != nil {
		t.Fatal(err)
	}
	wantIndex(t, s, map[string]uint64{aclAuthMethodsTable: 16, bindingRulesTable: 7, aclTokensTable: 12})
	wantNotFired(t, rulesWS, "binding-rule list when no rule was deleted")
	wantNotFired(t, tokensWS, "token list when no token was deleted")

	// Rules but no tokens: the token table is left alone.
	if _, err := s.ACLAuthMethodSet(17, newMethod("rules-only"), true); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, 18, newRule("aaaaaaaa-0000-4000-8000-000000000009", DefaultNamespace, "rules-only", "x"))
	if err := s.ACLAuthMethodDelete(19, "rules-only"); err != nil {
		t.Fatal(err)
	}
	wantIndex(t, s, map[string]uint64{aclAuthMethodsTable: 19, bindingRulesTable: 19, aclTokensTable: 12})
}

func TestACLAuthMethodDeleteMissing(t *testing.T) {
	s := seedMethods(t)
	before := snapshotOf(t, s)
	wantStateError(t, s.ACLAuthMethodDelete(30, "nope"), ErrNotFound, "Cannot find auth method to delete")
	// Rules and tokens that name a method that does not exist are not deleted either.
	wantStateError(t, s.ACLAuthMethodDelete(30, "jwt-"), ErrNotFound, "Cannot find auth method to delete")
	wantUnchanged(t, s, before)
}

func TestACLAuthMethodDeleteIsAtomic(t *testing.T) {
	// A reader never sees the method gone and its rules or tokens still
	// there, or the other way round. Run with -race.
	s := seedMethods(t)
	stop, done := make(chan struct{}), make(chan struct{})
	var before, after atomic.Int64 // reads of the whole state before and after the delete
	var bad string
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap := s.Snapshot()
			m, _ := snap.Rows(aclAuthMethodsTable)
			r, _ := snap.Rows(bindingRulesTable)
			tk, _ := snap.Rows(aclTokensTable)
			snap.Close()
			switch state := [3]int{len(m), len(r), len(tk)}; state {
			case [3]int{2, 4, 5}:
				before.Add(1)
			case [3]int{1, 2, 3}:
				after.Add(1)
			default:
				bad = fmt.Sprintf("partial state: %d methods, %d rules, %d tokens", state[0], state[1], state[2])
				return
			}
		}
	}()
	// The reader reads on through the delete: wait until it has read the
	// state often on each side of it.
	waitReads := func(n *atomic.Int64, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for n.Load() < 100 {
			select {
			case <-done:
				t.Fatal(bad)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the reader read the state %s the delete %d times in 10s", what, n.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitReads(&before, "before")
	if err := s.ACLAuthMethodDelete(40, "jwt"); err != nil {
		t.Fatal(err)
	}
	waitReads(&after, "after")
	close(stop)
	<-done
	if bad != "" {
		t.Fatal(bad)
	}
}
