package iradix

import (
	"fmt"
	"sync"
	"testing"
)

// ctlplane fork: mutation channels are made on first use.

func TestMutateChMadeOnlyWhenWatched(t *testing.T) {
	r := New()
	txn := r.Txn()
	txn.TrackMutate(true)
	for i := 0; i < 1000; i++ {
		txn.Insert([]byte(fmt.Sprintf("key-%04d", i)), i)
	}
	r = txn.Commit()
	if _, ok := r.Get([]byte("key-0001")); !ok {
		t.Fatal("key-0001 is missing")
	}
	it := r.Root().Iterator()
	it.SeekPrefix([]byte("key-00"))
	for iter := r.root.rawIterator(); iter.Front() != nil; iter.Next() {
		n := iter.Front()
		if n.mutateCh.p.Load() != nil || (n.leaf != nil && n.leaf.mutateCh.p.Load() != nil) {
			t.Fatalf("a channel was made for node %q that nobody watched", iter.Path())
		}
	}
}

func TestMutateChWatchedThenReplaced(t *testing.T) {
	r := New()
	r, _, _ = r.Insert([]byte("a"), 1)
	r, _, _ = r.Insert([]byte("b"), 2)
	leafA, _, _ := r.Root().GetWatch([]byte("a"))
	leafB, _, _ := r.Root().GetWatch([]byte("b"))
	it := r.Root().Iterator()
	prefix := it.SeekPrefixWatch([]byte("a"))
	if recvClosed(leafA) || recvClosed(leafB) || recvClosed(prefix) {
		t.Fatal("a fresh channel is closed")
	}
	old := r
	txn := r.Txn()
	txn.TrackMutate(true)
	txn.Insert([]byte("a"), 10)
	r = txn.Commit()
	if !recvClosed(leafA) || !recvClosed(prefix) {
		t.Fatal("the channels of the replaced leaf and node were not closed")
	}
	if recvClosed(leafB) {
		t.Fatal("the channel of an untouched leaf was closed")
	}
	// Asked for after the commit, the replaced leaf's channel (from the old
	// tree) is a closed one, as it would be had it been made before.
	late, _, _ := old.Root().GetWatch([]byte("a"))
	if !recvClosed(late) {
		t.Fatal("the channel of a replaced leaf, asked for late, is open")
	}
	cur, v, _ := r.Root().GetWatch([]byte("a"))
	if recvClosed(cur) || v != 10 {
		t.Fatalf("the new leaf: closed %v, value %v", recvClosed(cur), v)
	}
	// Closing twice (a second Notify, or slowNotify over a closed node) is harmless.
	txn.Notify()
	var m mutateCh
	m.close()
	m.close()
	if !recvClosed(m.ch()) {
		t.Fatal("closed twice, ch is open")
	}
}

func TestMutateChSlowNotify(t *testing.T) {
	r := New()
	txn := r.Txn()
	for i := 0; i < defaultModifiedCache+10; i++ {
		txn.Insert([]byte(fmt.Sprintf("k%06d", i)), i)
	}
	r = txn.Commit()
	watched, _, _ := r.Root().GetWatch([]byte("k000050"))
	untouched, _, _ := r.Root().GetWatch([]byte("k000001"))
	txn = r.Txn()
	txn.TrackMutate(true)
	// More replaced nodes than are tracked one by one: the slow notify runs.
	for i := 2; i < defaultModifiedCache+10; i++ {
		txn.Insert([]byte(fmt.Sprintf("k%06d", i)), "new")
	}
	if !txn.trackOverflow {
		t.Fatal("tracking did not overflow")
	}
	txn.Commit()
	if !recvClosed(watched) {
		t.Fatal("slow notify left the replaced leaf's channel open")
	}
	if recvClosed(untouched) {
		t.Fatal("slow notify closed an untouched leaf's channel")
	}
}

// Readers ask for channels of a committed tree while a writer replaces its
// nodes: every channel a reader got from the old tree for the replaced key
// ends up closed (run with -race).
func TestMutateChConcurrentWatchAndCommit(t *testing.T) {
	for round := 0; round < 200; round++ {
		r := New()
		for i := 0; i < 64; i++ {
			r, _, _ = r.Insert([]byte(fmt.Sprintf("k%02d", i)), i)
		}
		old := r
		var wg sync.WaitGroup
		got := make([][]<-chan struct{}, 4)
		start := make(chan struct{})
		for g := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for j := 0; j < 20; j++ {
					ch, _, _ := old.Root().GetWatch([]byte("k07"))
					got[g] = append(got[g], ch)
					it := old.Root().Iterator()
					got[g] = append(got[g], it.SeekPrefixWatch([]byte("k0")))
				}
			}()
		}
		close(start)
		txn := r.Txn()
		txn.TrackMutate(true)
		txn.Insert([]byte("k07"), "x")
		txn.Commit()
		wg.Wait()
		for _, chs := range got {
			for _, ch := range chs {
				if !recvClosed(ch) {
					t.Fatalf("round %d: a channel of the replaced leaf stayed open", round)
				}
			}
		}
	}
}

func recvClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
