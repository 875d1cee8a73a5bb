package state

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Fixed times for tokens (UTC, no monotonic reading, as stored objects have).
var (
	t0       = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	inAnHour = t0.Add(time.Hour)
)

func newPolicy(id, name string) *ACLPolicy {
	return &ACLPolicy{ID: id, Name: name, Description: "policy " + name, Rules: `acl = "read"`, Hash: []byte(name)}
}

func newToken(accessor, secret string) *ACLToken {
	return &ACLToken{
		AccessorID:  accessor,
		SecretID:    secret,
		Description: "token " + secret,
		Policies:    []ACLLink{{ID: idA, Name: "p"}},
		CreateTime:  t0,
		Namespace:   DefaultNamespace,
		Hash:        []byte(secret),
	}
}

func newRole(id, name string) *ACLRole {
	return &ACLRole{ID: id, Name: name, Description: "role " + name, Policies: []ACLLink{{ID: idA}}}
}

func newMethod(name string) *ACLAuthMethod {
	return &ACLAuthMethod{
		Name:        name,
		Type:        "jwt",
		DisplayName: "method " + name,
		MaxTokenTTL: time.Hour,
		Config:      map[string]any{"BoundIssuer": "https://issuer", "ClaimMappings": map[string]any{"sub": "user"}},
		Namespace:   DefaultNamespace,
	}
}

// snapshotOf is every row of every table, by table, for before/after checks.
func snapshotOf(t *testing.T, s *Store) map[string][]any {
	t.Helper()
	snap := s.Snapshot()
	defer snap.Close()
	out := map[string][]any{}
	for _, table := range Tables() {
		rows, err := snap.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		out[table] = rows
	}
	return out
}

// wantUnchanged checks that s still holds exactly before.
func wantUnchanged(t *testing.T, s *Store, before map[string][]any) {
	t.Helper()
	if after := snapshotOf(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("store changed:\n got %v\nwant %v", after, before)
	}
}

// wantIndex checks the table index of each table.
func wantIndex(t *testing.T, s *Store, want map[string]uint64) {
	t.Helper()
	for table, idx := range want {
		if got := s.TableIndex(table); got != idx {
			t.Errorf("TableIndex(%s) = %d, want %d", table, got, idx)
		}
	}
}

func wantFired(t *testing.T, ws memdb.WatchSet, what string) {
	t.Helper()
	if !fired(ws) {
		t.Fatalf("watch did not fire: %s", what)
	}
}

func wantNotFired(t *testing.T, ws memdb.WatchSet, what string) {
	t.Helper()
	if fired(ws) {
		t.Fatalf("watch fired: %s", what)
	}
}
