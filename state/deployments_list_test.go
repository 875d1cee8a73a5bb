package state

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
)

// putDeployments writes deployments as they are (CreateIndex included), the
// table's index at idx.
func putDeployments(t testing.TB, s *Store, idx uint64, ds ...*Deployment) {
	t.Helper()
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, d := range ds {
		if err := txn.Insert(deploymentsTable, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := setIndex(txn, deploymentsTable, idx); err != nil {
		t.Fatal(err)
	}
	txn.Commit()
}

// dropDeployment deletes a deployment (no API does yet; a token may still
// name one that is gone, or that was never there).
func dropDeployment(t *testing.T, s *Store, idx uint64, d *Deployment) {
	t.Helper()
	txn := s.db.Txn(true)
	defer txn.Abort()
	if err := txn.Delete(deploymentsTable, d); err != nil {
		t.Fatal(err)
	}
	if err := setIndex(txn, deploymentsTable, idx); err != nil {
		t.Fatal(err)
	}
	txn.Commit()
}

func dep(id, ns string, createIndex uint64) *Deployment {
	return &Deployment{ID: id, Namespace: ns, JobID: "j", Status: DeploymentStatusRunning,
		CreateIndex: createIndex, ModifyIndex: createIndex, TaskGroups: map[string]*DeploymentState{}}
}

func walkIDs(t *testing.T, s *Store, q DeploymentListQuery) []string {
	t.Helper()
	ids := []string{}
	if _, err := s.DeploymentsWalk(nil, q, func(d *Deployment) (bool, error) {
		ids = append(ids, d.ID)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func depIDs(ds ...*Deployment) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func revIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

func uuidN(head string, n int) string {
	return fmt.Sprintf("%s-0000-4000-8000-%012x", head, n)
}

// Order across namespaces: CreateIndex first, equal CreateIndexes by ID,
// whatever the namespace; per namespace the same order restricted to it.
func TestDeploymentsOrderAcrossNamespacesAndTies(t *testing.T) {
	s := NewStore()
	a := dep(uuidN("cccccccc", 1), "prod", 10)
	b := dep(uuidN("aaaaaaaa", 2), "default", 10) // same CreateIndex as a, smaller ID
	c := dep(uuidN("bbbbbbbb", 3), "prod", 10)
	d := dep(uuidN("ffffffff", 4), "default", 7)
	e := dep(uuidN("00000000", 5), "prod", 12)
	f := dep(uuidN("dddddddd", 6), "default-2", 10) // a namespace that extends "default"
	putDeployments(t, s, 12, a, b, c, d, e, f)

	for _, c := range []struct {
		ns   string
		want []string
	}{
		{AllNamespaces, depIDs(d, b, c, a, f, e)},
		{"default", depIDs(d, b)},
		{"prod", depIDs(c, a, e)},
		{"default-2", depIDs(f)},
		{"nope", depIDs()},
		{"defaul", depIDs()},
	} {
		if got := walkIDs(t, s, DeploymentListQuery{Namespace: c.ns}); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.ns, got, c.want)
		}
		if got := walkIDs(t, s, DeploymentListQuery{Namespace: c.ns, Reverse: true}); !reflect.DeepEqual(got, revIDs(c.want)) {
			t.Errorf("%s reverse: %v, want %v", c.ns, got, revIDs(c.want))
		}
		_, list, err := s.Deployments(nil, c.ns, "")
		if err != nil || !reflect.DeepEqual(depIDs(list...), c.want) {
			t.Errorf("Deployments(%s): %v %v, want %v", c.ns, depIDs(list...), err, c.want)
		}
	}
}

// Every token position, both token forms, both directions: the walk starts
// at the token's deployment and goes on in order to the end.
func TestDeploymentsWalkTokensAtEveryPosition(t *testing.T) {
	s := NewStore()
	var ds []*Deployment
	for i := range 9 {
		ds = append(ds, dep(uuidN(fmt.Sprintf("%08x", (i*7)%9), i), []string{"default", "prod"}[i%2], uint64(5+i/3)))
	}
	putDeployments(t, s, 20, ds...)
	for _, ns := range []string{AllNamespaces, "default", "prod"} {
		ordered := walkIDs(t, s, DeploymentListQuery{Namespace: ns})
		byID := map[string]*Deployment{}
		for _, d := range ds {
			byID[d.ID] = d
		}
		for _, reverse := range []bool{false, true} {
			list := ordered
			if reverse {
				list = revIDs(ordered)
			}
			for i, id := range list {
				want := list[i:]
				q := DeploymentListQuery{Namespace: ns, Reverse: reverse, TokenID: id}
				if got := walkIDs(t, s, q); !reflect.DeepEqual(got, want) {
					t.Errorf("%s reverse=%v token %s: %v, want %v", ns, reverse, id, got, want)
				}
				q.TokenHasIndex, q.TokenIndex = true, byID[id].CreateIndex
				if got := walkIDs(t, s, q); !reflect.DeepEqual(got, want) {
					t.Errorf("%s reverse=%v token %d.%s: %v, want %v", ns, reverse, q.TokenIndex, id, got, want)
				}
			}
		}
	}
}

// A token naming a deployment that is gone: the bare ID leaves nothing to
// resume from (an empty walk), <CreateIndex>.<ID> resumes where it would be.
func TestDeploymentsWalkTokenOfDeletedDeployment(t *testing.T) {
	s := NewStore()
	a, b, c := dep(uuidN("aaaaaaaa", 1), "default", 5), dep(uuidN("bbbbbbbb", 2), "default", 6), dep(uuidN("cccccccc", 3), "default", 7)
	putDeployments(t, s, 7, a, b, c)
	dropDeployment(t, s, 8, b)
	q := DeploymentListQuery{Namespace: "default", TokenID: b.ID}
	if got := walkIDs(t, s, q); len(got) != 0 {
		t.Errorf("bare token of a deleted deployment: %v, want nothing", got)
	}
	q.Reverse = true
	if got := walkIDs(t, s, q); len(got) != 0 {
		t.Errorf("bare token of a deleted deployment, reverse: %v, want nothing", got)
	}
	q = DeploymentListQuery{Namespace: "default", TokenID: b.ID, TokenHasIndex: true, TokenIndex: 6}
	if got, want := walkIDs(t, s, q), depIDs(c); !reflect.DeepEqual(got, want) {
		t.Errorf("indexed token of a deleted deployment: %v, want %v", got, want)
	}
	q.Reverse = true
	if got, want := walkIDs(t, s, q), depIDs(a); !reflect.DeepEqual(got, want) {
		t.Errorf("indexed token of a deleted deployment, reverse: %v, want %v", got, want)
	}
	// With a prefix, tokens compare IDs: resume after where it was.
	q = DeploymentListQuery{Namespace: "default", Prefix: "bb", TokenID: b.ID}
	if got := walkIDs(t, s, q); len(got) != 0 {
		t.Errorf("prefix bb after deleting bb…: %v", got)
	}
	q = DeploymentListQuery{Namespace: AllNamespaces, Prefix: "", TokenID: b.ID}
	if got := walkIDs(t, s, q); len(got) != 0 {
		t.Errorf("namespace * bare token of a deleted deployment: %v, want nothing", got)
	}
}

func TestDeploymentsWalkStopsAndFails(t *testing.T) {
	s := NewStore()
	var ds []*Deployment
	for i := range 10 {
		ds = append(ds, dep(uuidN("abababab", i), "default", uint64(i+1)))
	}
	putDeployments(t, s, 10, ds...)
	n := 0
	idx, err := s.DeploymentsWalk(nil, DeploymentListQuery{Namespace: "default"}, func(*Deployment) (bool, error) {
		n++
		return n < 3, nil
	})
	if err != nil || n != 3 || idx != 10 {
		t.Fatalf("stop after 3: visited %d, idx %d, err %v", n, idx, err)
	}
	boom := fmt.Errorf("boom")
	n = 0
	if _, err := s.DeploymentsWalk(nil, DeploymentListQuery{Namespace: AllNamespaces, Reverse: true}, func(*Deployment) (bool, error) {
		n++
		return true, boom
	}); err != boom || n != 1 {
		t.Fatalf("error: visited %d, err %v", n, err)
	}
}

// The list watch fires on any write to the table, in every mode.
func TestDeploymentsWalkWatchesTheTable(t *testing.T) {
	for _, q := range []DeploymentListQuery{
		{Namespace: "default"},
		{Namespace: AllNamespaces, Reverse: true},
		{Namespace: "default", Prefix: "aa"},
		{Namespace: "default", TokenID: uuidN("aaaaaaaa", 1)},
		{Namespace: "default", TokenID: uuidN("aaaaaaaa", 1), TokenHasIndex: true, TokenIndex: 99},
	} {
		s := NewStore()
		a := dep(uuidN("aaaaaaaa", 1), "default", 5)
		putDeployments(t, s, 5, a)
		ws := memdb.NewWatchSet()
		if _, err := s.DeploymentsWalk(ws, q, func(*Deployment) (bool, error) { return false, nil }); err != nil {
			t.Fatal(err)
		}
		if fired(ws) {
			t.Fatalf("%+v: fired before any write", q)
		}
		// A change to another namespace's deployment, outside the prefix.
		putDeployments(t, s, 6, dep(uuidN("bbbbbbbb", 2), "prod", 6))
		if !fired(ws) {
			t.Errorf("%+v: did not fire on a write to the table", q)
		}
	}
}

// A restored store has the list indexes: its walks equal the original's.
func TestDeploymentsListAfterRestore(t *testing.T) {
	s := NewStore()
	rng := rand.New(rand.NewSource(3))
	putDeployments(t, s, 500, randomDeployments(rng, 60)...)
	snap := s.Snapshot()
	defer snap.Close()
	r := NewRestore()
	for _, table := range Tables() {
		if table == indexTable {
			entries, err := snap.Indexes()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if err := r.Index(e); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if err := snap.Each(table, func(row any) error { return r.Insert(table, row) }); err != nil {
			t.Fatal(err)
		}
	}
	restored := r.Commit()
	for _, ns := range []string{AllNamespaces, "default", "prod"} {
		for _, reverse := range []bool{false, true} {
			q := DeploymentListQuery{Namespace: ns, Reverse: reverse}
			want := walkIDs(t, s, q)
			if got := walkIDs(t, restored, q); !reflect.DeepEqual(got, want) || len(want) == 0 {
				t.Errorf("%s reverse=%v after restore: %v, want %v", ns, reverse, got, want)
			}
			q.TokenID = want[len(want)/2]
			if got := walkIDs(t, restored, q); !reflect.DeepEqual(got, want[len(want)/2:]) {
				t.Errorf("%s reverse=%v token after restore: %v, want %v", ns, reverse, got, want[len(want)/2:])
			}
		}
	}
	if restored.TableIndex(deploymentsTable) != 500 {
		t.Errorf("restored table index %d", restored.TableIndex(deploymentsTable))
	}
}

// randomDeployments: few namespaces, few CreateIndexes (many ties), IDs
// sharing prefixes.
func randomDeployments(rng *rand.Rand, n int) []*Deployment {
	nss := []string{"default", "prod", "a", "default-x"}
	heads := []string{"abababab", "abcd0000", "cdcdcdcd", "00000000", "ffffffff"}
	out := make([]*Deployment, 0, n)
	for i := range n {
		id := fmt.Sprintf("%s-%04x-4000-8000-%012x", heads[rng.Intn(len(heads))], rng.Intn(3), i)
		out = append(out, dep(id, nss[rng.Intn(len(nss))], uint64(1+rng.Intn(n/3+1))))
	}
	return out
}

// oldDeploymentList is the list as it was computed before the indexes:
// read every deployment, keep the namespace's, sort (or ID order with a
// prefix), reverse, then find the token's position.
func oldDeploymentList(s *Store, q DeploymentListQuery) []string {
	txn := s.db.Txn(false)
	defer txn.Abort()
	var iter memdb.ResultIterator
	if q.Prefix != "" {
		iter, _ = txn.Get(deploymentsTable, "id_prefix", q.Prefix)
	} else {
		iter, _ = txn.Get(deploymentsTable, "id")
	}
	all := []*Deployment{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if d := raw.(*Deployment); q.Namespace == AllNamespaces || d.Namespace == q.Namespace {
			all = append(all, d)
		}
	}
	if q.Prefix == "" {
		sort.Slice(all, func(i, j int) bool {
			if all[i].CreateIndex != all[j].CreateIndex {
				return all[i].CreateIndex < all[j].CreateIndex
			}
			return all[i].ID < all[j].ID
		})
	}
	if q.Reverse {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	start := 0
	if q.TokenID != "" {
		start = len(all)
		if q.Prefix == "" && !q.TokenHasIndex {
			for i, d := range all {
				if d.ID == q.TokenID {
					start = i
					break
				}
			}
		} else {
			for i, d := range all {
				var less, greater bool
				if q.Prefix != "" || !q.TokenHasIndex {
					less, greater = d.ID < q.TokenID, d.ID > q.TokenID
				} else {
					less = d.CreateIndex < q.TokenIndex || (d.CreateIndex == q.TokenIndex && d.ID < q.TokenID)
					greater = d.CreateIndex > q.TokenIndex || (d.CreateIndex == q.TokenIndex && d.ID > q.TokenID)
				}
				if (q.Reverse && !greater) || (!q.Reverse && !less) {
					start = i
					break
				}
			}
		}
	}
	return depIDs(all[start:]...)
}

// The walk equals the old read-all-and-sort list for every namespace,
// prefix, direction and token (listed IDs, IDs of deleted deployments,
// other spellings, garbage), both token forms with CreateIndexes around
// the right one.
func TestDeploymentsWalkMatchesOldList(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	s := NewStore()
	ds := randomDeployments(rng, 90)
	putDeployments(t, s, 100, ds...)
	for _, d := range ds[:10] {
		dropDeployment(t, s, 101, d)
	}
	tokens := []string{"", "zzz", "0", "ABABABAB-0000-4000-8000-000000000001", uuidN("99999999", 1), "abab\x00"}
	tokenIdx := map[string][]uint64{}
	for _, d := range ds {
		tokens = append(tokens, d.ID, strings.ToUpper(d.ID))
		tokenIdx[d.ID] = []uint64{d.CreateIndex - 1, d.CreateIndex, d.CreateIndex + 1}
	}
	checked, nonEmpty := 0, 0
	for _, ns := range []string{AllNamespaces, "default", "prod", "a", "default-x", "missing"} {
		for _, prefix := range []string{"", "ab", "abcd", "ab-cd", "ABAB", "cdcdcdcd-0001", "11"} {
			for _, reverse := range []bool{false, true} {
				for _, tok := range tokens {
					q := DeploymentListQuery{Namespace: ns, Prefix: prefix, Reverse: reverse, TokenID: tok}
					ixs := append([]uint64{0, 1, 1 << 63}, tokenIdx[tok]...)
					if tok == "" {
						ixs = nil
					}
					for k := -1; k < len(ixs); k++ {
						if k >= 0 {
							q.TokenHasIndex, q.TokenIndex = true, ixs[k]
						}
						want := oldDeploymentList(s, q)
						if got := walkIDs(t, s, q); !reflect.DeepEqual(got, want) {
							t.Fatalf("%+v:\n got %v\nwant %v", q, got, want)
						}
						checked++
						if len(want) > 0 {
							nonEmpty++
						}
					}
				}
			}
		}
	}
	t.Logf("%d queries checked, %d with a non-empty list", checked, nonEmpty)
	if nonEmpty < checked/4 {
		t.Fatalf("too few non-empty lists")
	}
}

// BenchmarkDeploymentsPage: the first page of 100 of 10,000 deployments
// in one namespace, and a page from a token half way, forward and reverse.
func BenchmarkDeploymentsPage(b *testing.B) {
	s := NewStore()
	var ds []*Deployment
	rng := rand.New(rand.NewSource(2))
	for i := range 10000 {
		id := fmt.Sprintf("%08x-%04x-4000-8000-%012x", rng.Uint32(), rng.Intn(1<<16), i)
		ds = append(ds, dep(id, "default", uint64(10+i)))
	}
	putDeployments(b, s, 20000, ds...)
	mid := ds[5000]
	for _, c := range []struct {
		name string
		q    DeploymentListQuery
	}{
		{"first", DeploymentListQuery{Namespace: "default"}},
		{"token", DeploymentListQuery{Namespace: "default", TokenID: mid.ID}},
		{"reverse-token", DeploymentListQuery{Namespace: "default", Reverse: true, TokenID: mid.ID}},
		{"all-namespaces", DeploymentListQuery{Namespace: AllNamespaces}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				ws := memdb.NewWatchSet()
				if _, err := s.DeploymentsWalk(ws, c.q, func(*Deployment) (bool, error) {
					n++
					return n <= 100, nil
				}); err != nil || n != 101 {
					b.Fatalf("visited %d, %v", n, err)
				}
			}
		})
	}
}
