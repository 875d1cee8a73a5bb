package iradix

import (
	"fmt"
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
