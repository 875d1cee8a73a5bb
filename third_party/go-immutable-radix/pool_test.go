package iradix

import (
	"fmt"
	"sync"
	"testing"
)

// ctlplane fork: the writable sets are reused across transactions; a tree
// committed by one transaction must not change when the next one, with
// the same (emptied) set, writes over it, nor when a large transaction
// overflows the set's bound.
func TestPooledWritableSetKeepsCommittedTreesImmutable(t *testing.T) {
	tree := New()
	var trees []*Tree
	for round := range 20 {
		txn := tree.Txn()
		txn.TrackMutate(true)
		n := 50
		if round == 10 {
			n = 3 * defaultModifiedCache // past the bound: the set is emptied mid-transaction
		}
		for i := range n {
			txn.Insert([]byte(fmt.Sprintf("k%03d-%06d", i%97, round*100000+i)), round)
		}
		// Overwrite keys of earlier rounds in place of the new tree.
		txn.Insert([]byte("shared"), round)
		tree = txn.Commit()
		trees = append(trees, tree)
	}
	want := 0
	for round, tr := range trees {
		n := 50
		if round == 10 {
			n = 3 * defaultModifiedCache
		}
		want += n
		if round == 0 {
			want++ // "shared"
		}
		if tr.Len() != want {
			t.Fatalf("tree of round %d has Len %d, want %d", round, tr.Len(), want)
		}
		count := 0
		tr.Root().Walk(func(k []byte, v interface{}) bool {
			count++
			if string(k) == "shared" && v.(int) != round {
				t.Fatalf("tree of round %d: shared = %v, changed by a later transaction", round, v)
			}
			if v.(int) > round {
				t.Fatalf("tree of round %d holds %q = %v from a later transaction", round, k, v)
			}
			return false
		})
		if count != want {
			t.Fatalf("tree of round %d walks %d keys, want %d", round, count, want)
		}
	}
}

// ctlplane fork: a set that grew past maxPooledSet is not pooled (a map
// keeps its room when cleared, and every later user would range over it);
// a small one is pooled empty.
func TestPutPooledBound(t *testing.T) {
	var pool sync.Pool // no New: Get answers nil when nothing was pooled
	big := map[int]struct{}{}
	for i := range maxPooledSet + 1 {
		big[i] = struct{}{}
	}
	putPooled(&pool, big, len(big))
	if got := pool.Get(); got != nil {
		t.Fatalf("a set of %d entries was pooled", len(big))
	}
	// A set emptied mid-transaction holds few entries but was given many.
	putPooled(&pool, map[int]struct{}{1: {}}, maxPooledSet+1)
	if got := pool.Get(); got != nil {
		t.Fatal("a set given more than the bound was pooled")
	}
	small := map[int]struct{}{1: {}, 2: {}}
	putPooled(&pool, small, len(small))
	if len(small) != 0 {
		t.Fatalf("a pooled set keeps %d entries", len(small))
	}
}

// BenchmarkSmallTxnAfterLarge is one small write after large ones: what
// the store's small transactions cost when large ones ran before them.
func BenchmarkSmallTxnAfterLarge(b *testing.B) {
	tree := New()
	for i := range 20000 {
		tree, _, _ = tree.Insert([]byte(fmt.Sprintf("key-%08d", i)), i)
	}
	for round := range 4 { // large transactions, as 1,000 placements in one plan
		txn := tree.Txn()
		txn.TrackMutate(true)
		for i := range 5000 {
			txn.Insert([]byte(fmt.Sprintf("key-%08d", (i*7+round)%20000)), round)
		}
		tree = txn.Commit()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		txn := tree.Txn()
		txn.TrackMutate(true)
		txn.Insert([]byte(fmt.Sprintf("key-%08d", i%20000)), i)
		tree = txn.Commit()
	}
}
