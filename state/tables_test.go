package state

import (
	"reflect"
	"strings"
	"testing"
)

func TestTables(t *testing.T) {
	// Snapshot streams are written in this order: it must not change by accident.
	want := []string{"index", "acl-auth-methods", "acl-binding-rules", "acl-meta", "acl-policies", "acl-roles", "acl-tokens",
		"allocs", "deployment_history", "deployments", "evals", "job_scaling_events", "job_summary", "job_versions", "jobs", "namespaces", "node_pools", "nodes", "servers", "service_registrations"}
	for i := 0; i < 3; i++ { // map iteration order must not leak
		if got := Tables(); !reflect.DeepEqual(got, want) {
			t.Fatalf("Tables() = %v, want %v", got, want)
		}
	}
	rowTypes := map[string]any{
		"index": &IndexEntry{}, "acl-auth-methods": &ACLAuthMethod{}, "acl-binding-rules": &BindingRule{},
		"acl-meta": &ACLMeta{}, "acl-policies": &ACLPolicy{}, "acl-roles": &ACLRole{}, "acl-tokens": &ACLToken{},
		"servers": &ServerInfo{}, "allocs": &Allocation{}, "deployment_history": &DeploymentEvent{},
		"deployments": &Deployment{}, "evals": &Evaluation{}, "job_versions": &Job{}, "jobs": &Job{}, "nodes": &Node{},
		"job_summary": &JobSummary{}, "job_scaling_events": &JobScalingEvents{}, "namespaces": &Namespace{}, "node_pools": &NodePool{},
		"service_registrations": &ServiceRegistration{},
	}
	for _, table := range want {
		row := NewRow(table)
		if !reflect.DeepEqual(row, rowTypes[table]) {
			t.Errorf("NewRow(%q) = %#v, want %#v", table, row, rowTypes[table])
		}
		if NewRow(table) == row {
			t.Errorf("NewRow(%q) returned the same row twice", table)
		}
	}
	for _, table := range []string{"", "nope", "Index", "acl_tokens"} {
		if row := NewRow(table); row != nil {
			t.Errorf("NewRow(%q) = %#v, want nil", table, row)
		}
	}
}

func seedACL(t *testing.T) *Store {
	t.Helper()
	s := seedMethods(t) // methods, rules and tokens at 2..12
	if _, err := s.ACLPolicySet(13, newPolicy(idA, "p")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ACLRoleSet(14, newRole(idB, "r")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ACLBootstrap(15, newToken("b0000000-0000-4000-8000-000000000001", "boot")); err != nil {
		t.Fatal(err)
	}
	if err := s.ServerSet(16, &ServerInfo{ID: "srv-1", Name: "one", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCountsEveryTable(t *testing.T) {
	want := map[string]int{"acl-auth-methods": 0, "acl-binding-rules": 0, "acl-meta": 0, "acl-policies": 0,
		"acl-roles": 0, "acl-tokens": 0, "servers": 0, "allocs": 0, "deployment_history": 0, "deployments": 0,
		"evals": 0, "job_scaling_events": 0, "job_summary": 0, "job_versions": 0, "jobs": 0, "namespaces": 0, "node_pools": 0, "nodes": 0, "service_registrations": 0}
	if got := NewStore().Counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Counts of an empty store %v, want %v", got, want)
	}
	want = map[string]int{"acl-auth-methods": 2, "acl-binding-rules": 4, "acl-meta": 1, "acl-policies": 1,
		"acl-roles": 1, "acl-tokens": 6, "servers": 1, "allocs": 0, "deployment_history": 0, "deployments": 0,
		"evals": 0, "job_scaling_events": 0, "job_summary": 0, "job_versions": 0, "jobs": 0, "namespaces": 0, "node_pools": 0, "nodes": 0, "service_registrations": 0}
	if got := seedACL(t).Counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Counts %v, want %v", got, want)
	}
}

func TestRowsAndInsertRoundTripEveryTable(t *testing.T) {
	src := seedACL(t)
	snap := src.Snapshot()
	defer snap.Close()
	r := NewRestore()
	total := 0
	for _, table := range Tables() {
		rows, err := snap.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if err := r.Insert(table, row); err != nil {
				t.Fatal(err)
			}
			total++
		}
	}
	dst := r.Commit()
	if total != 7+2+4+1+1+1+6+1 { // 7 index rows: every table but the index table
		t.Fatalf("%d rows in the snapshot", total)
	}
	if !reflect.DeepEqual(snapshotOf(t, dst), snapshotOf(t, src)) {
		t.Fatal("restored store differs")
	}
	// Secondary indexes are rebuilt: name, secret and authmethod lookups work.
	if _, p, _ := dst.ACLPolicyByName(nil, "P"); p == nil {
		t.Fatal("policy by name")
	}
	if _, tok, _ := dst.ACLTokenBySecret(nil, "boot"); tok == nil {
		t.Fatal("token by secret")
	}
	if _, m, _ := dst.ACLAuthMethod(nil, "JWT-2"); m == nil {
		t.Fatal("auth method by name")
	}
	if dst.ACLBootstrapIndex() != 15 {
		t.Fatalf("bootstrap index %d", dst.ACLBootstrapIndex())
	}
	if err := dst.ACLAuthMethodDelete(30, "jwt"); err != nil {
		t.Fatal(err)
	}
	if got := dst.Counts(); got["acl-binding-rules"] != 2 || got["acl-tokens"] != 4 {
		t.Fatalf("cascade on the restored store: %v", got)
	}

	if _, err := snap.Rows("nope"); err == nil {
		t.Fatal("Rows of an unknown table")
	}
	r2 := NewRestore()
	defer r2.Abort()
	if err := r2.Insert("nope", &ACLMeta{Key: "x"}); err == nil || !strings.HasPrefix(err.Error(), "failed restoring a row of nope: ") {
		t.Fatalf("Insert into an unknown table: %v", err)
	}
	if err := r2.Insert(aclTokensTable, &ACLToken{AccessorID: idA}); err == nil || !strings.HasPrefix(err.Error(), "failed restoring a row of acl-tokens: ") {
		t.Fatalf("Insert of a token without a secret: %v", err)
	}
}

func TestHashOf(t *testing.T) {
	a := HashOf("ab", "c")
	if len(a) != 32 || !reflect.DeepEqual(a, HashOf("ab", "c")) {
		t.Fatalf("HashOf is not a stable sha256: %x", a)
	}
	// Field boundaries count.
	for _, other := range [][]string{{"a", "bc"}, {"abc"}, {"ab", "c", ""}, {}} {
		if reflect.DeepEqual(a, HashOf(other...)) {
			t.Fatalf("HashOf(%q) equals HashOf(ab, c)", other)
		}
	}
}
