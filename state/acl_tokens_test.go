package state

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// withMethods makes auth methods so that tokens can name them.
func withMethods(t *testing.T, s *Store, idx uint64, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := s.ACLAuthMethodSet(idx, newMethod(name), true); err != nil {
			t.Fatal(err)
		}
	}
}

func TestACLTokenExpired(t *testing.T) {
	tok := newToken(idA, "s")
	if tok.Expired(t0) || tok.Expired(t0.Add(100*365*24*time.Hour)) {
		t.Fatal("a token without expiry expired")
	}
	exp := t0
	tok.ExpirationTime = &exp
	for now, want := range map[time.Time]bool{
		t0.Add(-time.Nanosecond): false,
		t0:                       true, // expired at its expiration time
		t0.Add(time.Nanosecond):  true,
	} {
		if got := tok.Expired(now); got != want {
			t.Errorf("Expired(%v) = %v, want %v", now, got, want)
		}
	}
}

func TestACLTokenReadMissing(t *testing.T) {
	s := NewStore()
	if idx, tok, err := s.ACLTokenByAccessor(nil, idA); err != nil || tok != nil || idx != 1 {
		t.Fatalf("by accessor: %d %+v %v", idx, tok, err)
	}
	for _, secret := range []string{"nope", ""} {
		if idx, tok, err := s.ACLTokenBySecret(nil, secret); err != nil || tok != nil || idx != 1 {
			t.Fatalf("by secret %q: %d %+v %v", secret, idx, tok, err)
		}
	}
	idx, all, err := s.ACLTokens(nil, func(*ACLToken) bool { return true })
	if err != nil || idx != 1 || all == nil || len(all) != 0 {
		t.Fatalf("list: %d %#v %v", idx, all, err)
	}
}

func TestACLTokenCreateAndRead(t *testing.T) {
	s := NewStore()
	withMethods(t, s, 2, "jwt")
	in := newToken(idB, "secret-b")
	exp := inAnHour
	in.ExpirationTime, in.ExpirationTTL = &exp, time.Hour
	in.AuthMethod = "jwt"
	in.Roles = []ACLLink{{ID: idC, Name: "r"}}
	in.ServiceIdentities = []*ACLServiceIdentity{{ServiceName: "web", Datacenters: []string{"dc1"}}}
	in.NodeIdentities = []*ACLNodeIdentity{{NodeName: "n1", Datacenter: "dc1"}}
	in.CreateIndex, in.ModifyIndex = 50, 60
	got, err := s.ACLTokenSet(7, in, true)
	if err != nil {
		t.Fatal(err)
	}
	want := *in
	want.CreateIndex, want.ModifyIndex = 7, 7
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %+v, want %+v", got, &want)
	}
	if in.CreateIndex != 50 {
		t.Fatal("create changed its argument")
	}
	if idx, tok, err := s.ACLTokenByAccessor(nil, idB); err != nil || idx != 7 || !reflect.DeepEqual(tok, &want) {
		t.Fatalf("by accessor: %d %+v %v", idx, tok, err)
	}
	if idx, tok, err := s.ACLTokenBySecret(nil, "secret-b"); err != nil || idx != 7 || !reflect.DeepEqual(tok, &want) {
		t.Fatalf("by secret: %d %+v %v", idx, tok, err)
	}
	// Secrets are exact: no case folding, no prefix.
	for _, secret := range []string{"SECRET-B", "secret-", "secret-bb", idB} {
		if _, tok, _ := s.ACLTokenBySecret(nil, secret); tok != nil {
			t.Fatalf("secret %q found %+v", secret, tok)
		}
	}
	wantIndex(t, s, map[string]uint64{aclTokensTable: 7, aclPoliciesTable: 1})
}

func TestACLTokenUpdateKeepsImmutableFields(t *testing.T) {
	s := NewStore()
	withMethods(t, s, 2, "jwt", "other-method")
	orig := newToken(idA, "secret-a")
	exp := inAnHour
	orig.ExpirationTime, orig.ExpirationTTL, orig.AuthMethod = &exp, time.Hour, "jwt"
	if _, err := s.ACLTokenSet(4, orig, true); err != nil {
		t.Fatal(err)
	}

	otherExp := t0.Add(time.Minute)
	upd := &ACLToken{
		AccessorID:     idA,
		SecretID:       "changed-secret",
		Description:    "new description",
		Policies:       []ACLLink{{ID: idB, Name: "other"}},
		Local:          true,
		AuthMethod:     "other-method",
		ExpirationTime: &otherExp,
		ExpirationTTL:  time.Minute,
		CreateTime:     t0.Add(24 * time.Hour),
		Namespace:      "team1",
		Hash:           []byte("h2"),
		CreateIndex:    99,
	}
	got, err := s.ACLTokenSet(9, upd, false)
	if err != nil {
		t.Fatal(err)
	}
	want := &ACLToken{
		AccessorID:     idA,
		SecretID:       "secret-a",
		Description:    "new description",
		Policies:       []ACLLink{{ID: idB, Name: "other"}},
		Local:          true,
		AuthMethod:     "jwt",
		ExpirationTime: &exp,
		ExpirationTTL:  time.Hour,
		CreateTime:     t0,
		Namespace:      "team1",
		Hash:           []byte("h2"),
		CreateIndex:    4,
		ModifyIndex:    9,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("update returned\n %+v\nwant %+v", got, want)
	}
	if _, tok, _ := s.ACLTokenBySecret(nil, "secret-a"); !reflect.DeepEqual(tok, want) {
		t.Fatalf("by the kept secret: %+v", tok)
	}
	if _, tok, _ := s.ACLTokenBySecret(nil, "changed-secret"); tok != nil {
		t.Fatalf("the ignored secret finds %+v", tok)
	}
	// The kept AuthMethod is what the authmethod index holds.
	if _, toks, _ := s.ACLTokens(nil, func(t *ACLToken) bool { return t.AuthMethod == "jwt" }); len(toks) != 1 {
		t.Fatalf("tokens of jwt: %+v", toks)
	}
	// An update without an expiry keeps the expiry too.
	upd2 := newToken(idA, "")
	got, err = s.ACLTokenSet(10, upd2, false)
	if err != nil || got.ExpirationTime == nil || !got.ExpirationTime.Equal(exp) || got.ExpirationTTL != time.Hour || got.SecretID != "secret-a" {
		t.Fatalf("second update: %+v %v", got, err)
	}
	wantIndex(t, s, map[string]uint64{aclTokensTable: 10})
}

func TestACLTokenSetErrors(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLTokenSet(4, newToken(idA, "secret-a"), true); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	tests := []struct {
		name   string
		tok    *ACLToken
		create bool
		code   ErrorCode
		msg    string
	}{
		{"duplicate accessor", newToken(idA, "other-secret"), true, ErrConflict, "Invalid Token: AccessorID is already in use"},
		{"duplicate secret", newToken(idB, "secret-a"), true, ErrConflict, "Invalid Token: SecretID is already in use"},
		{"create without secret", newToken(idB, ""), true, ErrInvalid, "token is missing its SecretID"},
		{"create without accessor", newToken("", "s"), true, ErrInvalid, "token is missing its AccessorID"},
		{"update without accessor", newToken("", "s"), false, ErrInvalid, "token is missing its AccessorID"},
		{"update of a missing token", newToken(idMissing, "s"), false, ErrNotFound, "Cannot find token " + idMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := s.ACLTokenSet(10, tc.tok, tc.create)
			wantStateError(t, err, tc.code, tc.msg)
			if tok != nil {
				t.Fatalf("returned %+v with the error", tok)
			}
			wantUnchanged(t, s, before)
			wantIndex(t, s, map[string]uint64{aclTokensTable: 4})
		})
	}
	if _, err := s.ACLTokenSet(10, newToken("nope", "s2"), true); err == nil {
		t.Fatal("non-UUID accessor accepted")
	}
	wantUnchanged(t, s, before)
}

func TestACLTokensFilter(t *testing.T) {
	s := NewStore()
	withMethods(t, s, 2, "jwt", "k8s")
	for i, tc := range []struct{ id, method string }{{idD, "jwt"}, {idB, ""}, {idA, "jwt"}, {idC, "k8s"}} {
		tok := newToken(tc.id, "s-"+tc.id)
		tok.AuthMethod = tc.method
		if _, err := s.ACLTokenSet(uint64(10+i), tok, true); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(toks []*ACLToken) []string {
		out := []string{}
		for _, t := range toks {
			out = append(out, t.AccessorID)
		}
		return out
	}
	for name, tc := range map[string]struct {
		keep func(*ACLToken) bool
		want []string
	}{
		"all":     {func(*ACLToken) bool { return true }, []string{idA, idB, idC, idD}},
		"none":    {func(*ACLToken) bool { return false }, []string{}},
		"jwt":     {func(t *ACLToken) bool { return t.AuthMethod == "jwt" }, []string{idA, idD}},
		"no auth": {func(t *ACLToken) bool { return t.AuthMethod == "" }, []string{idB}},
	} {
		idx, toks, err := s.ACLTokens(nil, tc.keep)
		if err != nil || idx != 13 {
			t.Fatalf("%s: idx %d err %v", name, idx, err)
		}
		if got := ids(toks); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestACLTokenDelete(t *testing.T) {
	s := NewStore()
	for i, id := range []string{idA, idB} {
		if _, err := s.ACLTokenSet(uint64(3+i), newToken(id, "s-"+id), true); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshotOf(t, s)
	wantStateError(t, s.ACLTokenDelete(8, idMissing), ErrNotFound, "Cannot find token to delete")
	wantUnchanged(t, s, before)

	ws := memdb.NewWatchSet()
	s.ACLTokenBySecret(ws, "s-"+idA)
	if err := s.ACLTokenDelete(9, idA); err != nil {
		t.Fatal(err)
	}
	wantFired(t, ws, "read by secret on a delete")
	if idx, tok, _ := s.ACLTokenBySecret(nil, "s-"+idA); tok != nil || idx != 9 {
		t.Fatalf("deleted token by secret: %d %+v", idx, tok)
	}
	if _, tok, _ := s.ACLTokenByAccessor(nil, idB); tok == nil {
		t.Fatal("the other token went too")
	}
	// The secret can be used again.
	if _, err := s.ACLTokenSet(10, newToken(idC, "s-"+idA), true); err != nil {
		t.Fatalf("reusing a deleted token's secret: %v", err)
	}
}

func TestACLTokensDeleteExpired(t *testing.T) {
	s := NewStore()
	past, now, future := t0.Add(-time.Minute), t0, t0.Add(time.Minute)
	for i, tc := range []struct {
		id  string
		exp *time.Time
	}{
		{idA, &past},   // expired, listed
		{idB, &future}, // not expired, listed
		{idC, nil},     // no expiry, listed
		{idD, &past},   // expired, not listed
	} {
		tok := newToken(tc.id, "s-"+tc.id)
		tok.ExpirationTime = tc.exp
		if _, err := s.ACLTokenSet(uint64(10+i), tok, true); err != nil {
			t.Fatal(err)
		}
	}
	exactly := newToken("e0000000-0000-4000-8000-000000000005", "s-exact")
	exactly.ExpirationTime = &now
	if _, err := s.ACLTokenSet(14, exactly, true); err != nil {
		t.Fatal(err)
	}

	ws := memdb.NewWatchSet()
	s.ACLTokens(ws, func(*ACLToken) bool { return true })
	n, err := s.ACLTokensDeleteExpired(20, now, []string{idA, idB, idC, idMissing, exactly.AccessorID})
	if err != nil || n != 2 {
		t.Fatalf("reap: n %d err %v, want 2", n, err)
	}
	wantFired(t, ws, "token list on a reap")
	wantIndex(t, s, map[string]uint64{aclTokensTable: 20})
	_, left, _ := s.ACLTokens(nil, func(*ACLToken) bool { return true })
	var ids []string
	for _, tok := range left {
		ids = append(ids, tok.AccessorID)
	}
	if want := []string{idB, idC, idD}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("left %v, want %v", ids, want)
	}

	// Nothing (more) to delete: no write, no index bump, no wake-up.
	before := snapshotOf(t, s)
	ws = memdb.NewWatchSet()
	s.ACLTokens(ws, func(*ACLToken) bool { return true })
	for _, ids := range [][]string{nil, {idA}, {idB, idC}, {idMissing}} {
		n, err := s.ACLTokensDeleteExpired(21, now, ids)
		if err != nil || n != 0 {
			t.Fatalf("reap %v: n %d err %v, want 0", ids, n, err)
		}
	}
	wantNotFired(t, ws, "token list on reaps that deleted nothing")
	wantUnchanged(t, s, before)
	wantIndex(t, s, map[string]uint64{aclTokensTable: 20})

	// A token renewed past now is kept; a later now reaps it.
	if n, _ := s.ACLTokensDeleteExpired(22, future.Add(-time.Nanosecond), []string{idB}); n != 0 {
		t.Fatalf("reaped a token before its expiry")
	}
	if n, _ := s.ACLTokensDeleteExpired(23, future, []string{idB, idD}); n != 2 {
		t.Fatalf("reaped %d, want 2", n)
	}
	wantIndex(t, s, map[string]uint64{aclTokensTable: 23})
}

func TestACLTokensDeleteExpiredBadAccessor(t *testing.T) {
	s := NewStore()
	past := t0.Add(-time.Minute)
	tok := newToken(idA, "s")
	tok.ExpirationTime = &past
	if _, err := s.ACLTokenSet(3, tok, true); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, s)
	// A malformed ID fails the whole reap: nothing is deleted.
	if n, err := s.ACLTokensDeleteExpired(5, t0, []string{idA, "nope"}); err == nil || n != 0 {
		t.Fatalf("n %d err %v, want 0 and an error", n, err)
	}
	wantUnchanged(t, s, before)
}

func TestACLTokenWatches(t *testing.T) {
	s := NewStore()
	if _, err := s.ACLTokenSet(3, newToken(idA, "sa"), true); err != nil {
		t.Fatal(err)
	}
	byAccessor, bySecret, missing := memdb.NewWatchSet(), memdb.NewWatchSet(), memdb.NewWatchSet()
	s.ACLTokenByAccessor(byAccessor, idA)
	s.ACLTokenBySecret(bySecret, "sa")
	s.ACLTokenBySecret(missing, "sb")

	if _, err := s.ACLTokenSet(4, newToken(idA, ""), false); err != nil {
		t.Fatal(err)
	}
	wantFired(t, byAccessor, "by accessor on an update")
	wantFired(t, bySecret, "by secret on an update")
	// (A watch on a missing key may also fire for nearby writes: memdb
	// watches the closest node. Only "it fires when the key appears" holds.)

	if _, err := s.ACLTokenSet(5, newToken(idB, "sb"), true); err != nil {
		t.Fatal(err)
	}
	wantFired(t, missing, "a missing secret when it is created")
}
