package server

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts the reads that reach the store.
type countingStore struct {
	*raft.InmemStore
	gets int
	fail error
}

func (s *countingStore) GetLog(i uint64, out *raft.Log) error {
	s.gets++
	return s.InmemStore.GetLog(i, out)
}

func (s *countingStore) StoreLogs(logs []*raft.Log) error {
	if s.fail != nil {
		return s.fail
	}
	return s.InmemStore.StoreLogs(logs)
}

func entries(from, to uint64, size int, tag string) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Data: append([]byte(fmt.Sprintf("%s%d:", tag, i)), make([]byte, size)...)})
	}
	return out
}

func TestLogCacheBounds(t *testing.T) {
	cases := []struct {
		name           string
		ring, maxBytes int
		store          [][]*raft.Log // StoreLogs calls in order
		deleteAfter    bool          // DeleteRange(1, 1) after the stores
		cached, stored []uint64      // read without the store / from the store
		tagOf          map[uint64]string
	}{
		{name: "count bound: the last ring-full stay", ring: 4, maxBytes: 1 << 20,
			store:  [][]*raft.Log{entries(1, 10, 10, "a")},
			cached: []uint64{7, 8, 9, 10}, stored: []uint64{1, 5, 6}},
		{name: "byte bound: large entries push the oldest out", ring: 64, maxBytes: 3 * (1000 + 64 + 8),
			store:  [][]*raft.Log{entries(1, 3, 10, "a"), entries(4, 8, 1000, "b")},
			cached: []uint64{6, 7, 8}, stored: []uint64{1, 3, 4, 5}},
		{name: "the newest stays whatever its size", ring: 8, maxBytes: 10,
			store:  [][]*raft.Log{entries(1, 2, 5000, "a")},
			cached: []uint64{2}, stored: []uint64{1}},
		{name: "a rewritten tail (follower) starts the cache again", ring: 8, maxBytes: 1 << 20,
			store:  [][]*raft.Log{entries(1, 5, 10, "a"), entries(3, 4, 10, "b")},
			cached: []uint64{3, 4}, stored: []uint64{1, 2, 5},
			tagOf: map[uint64]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "a"}},
		{name: "DeleteRange forgets the cache", ring: 8, maxBytes: 1 << 20,
			store: [][]*raft.Log{entries(1, 5, 10, "a")}, deleteAfter: true,
			stored: []uint64{2, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &countingStore{InmemStore: raft.NewInmemStore()}
			c := newLogCache(s, tc.ring, tc.maxBytes)
			for _, logs := range tc.store {
				if err := c.StoreLogs(logs); err != nil {
					t.Fatal(err)
				}
			}
			if tc.deleteAfter {
				if err := c.DeleteRange(1, 1); err != nil {
					t.Fatal(err)
				}
			}
			read := func(i uint64, fromStore bool) {
				before := s.gets
				var l raft.Log
				if err := c.GetLog(i, &l); err != nil {
					t.Fatalf("GetLog(%d): %v", i, err)
				}
				tag := "a"
				if tc.tagOf != nil {
					tag = tc.tagOf[i]
				} else if len(tc.store) > 1 && i >= tc.store[1][0].Index {
					tag = "b"
				}
				if l.Index != i || !bytes.HasPrefix(l.Data, []byte(fmt.Sprintf("%s%d:", tag, i))) {
					t.Fatalf("GetLog(%d) = index %d, data %.8q; want %s%d", i, l.Index, l.Data, tag, i)
				}
				if got := s.gets > before; got != fromStore {
					t.Errorf("GetLog(%d) read the store: %v, want %v", i, got, fromStore)
				}
			}
			for _, i := range tc.cached {
				read(i, false)
			}
			for _, i := range tc.stored {
				read(i, true)
			}
			if c.bytes > tc.maxBytes && c.last > c.first {
				t.Errorf("cache holds %d bytes in %d entries, bound %d", c.bytes, c.last-c.first+1, tc.maxBytes)
			}
		})
	}
}

// A failed store caches nothing.
func TestLogCacheStoreFailure(t *testing.T) {
	s := &countingStore{InmemStore: raft.NewInmemStore(), fail: errors.New("disk full")}
	c := newLogCache(s, 8, 1<<20)
	if err := c.StoreLogs(entries(1, 2, 10, "a")); err == nil || err.Error() != "disk full" {
		t.Fatalf("StoreLogs: %v, want disk full", err)
	}
	var l raft.Log
	if err := c.GetLog(1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog after a failed store: %v, want %v", err, raft.ErrLogNotFound)
	}
}

// monotonicStore is a store that says whether it may hold a gap.
type monotonicStore struct {
	*raft.InmemStore
	monotonic bool
}

func (s *monotonicStore) IsMonotonic() bool { return s.monotonic }

// The cache answers raft.MonotonicLogStore as the store under it does.
func TestLogCacheForwardsMonotonic(t *testing.T) {
	cases := []struct {
		name  string
		store raft.LogStore
		want  bool
	}{
		{"monotonic store", &monotonicStore{InmemStore: raft.NewInmemStore(), monotonic: true}, true},
		{"store that says no", &monotonicStore{InmemStore: raft.NewInmemStore()}, false},
		{"store without the method", raft.NewInmemStore(), false},
	}
	for _, tc := range cases {
		var store raft.LogStore = newLogCache(tc.store, 8, 1<<20)
		m, ok := store.(raft.MonotonicLogStore)
		if !ok {
			t.Fatalf("%s: the cache is not a raft.MonotonicLogStore", tc.name)
		}
		if got := m.IsMonotonic(); got != tc.want {
			t.Errorf("%s: IsMonotonic %v, want %v", tc.name, got, tc.want)
		}
	}
}
