package server

import (
	"sync"

	"github.com/hashicorp/raft"
)

// Bounds of the in-memory cache of the latest Raft entries, in front of a
// persistent log store.
const (
	logCacheEntries = 512
	// A plan or a batch of node reports on a large cluster is hundreds of
	// kilobytes: 512 of them held ~150 MB of the heap (raft.LogCache bounds
	// only the count).
	logCacheBytes = 16 << 20
)

// logCache keeps the latest entries in memory, as raft.LogCache does, for
// the replication goroutines and the FSM to read without the store; it is
// bounded in bytes as well as in entries, the oldest going first.
type logCache struct {
	raft.LogStore
	maxBytes int

	mu          sync.RWMutex
	ring        []*raft.Log
	first, last uint64 // cached indexes, contiguous; none when last < first
	bytes       int
}

func newLogCache(store raft.LogStore, entries, maxBytes int) *logCache {
	return &logCache{LogStore: store, maxBytes: maxBytes, ring: make([]*raft.Log, entries), first: 1}
}

func entryBytes(l *raft.Log) int { return len(l.Data) + len(l.Extensions) + 64 }

// GetLog answers from the cache when it holds index, else from the store.
func (c *logCache) GetLog(index uint64, out *raft.Log) error {
	c.mu.RLock()
	if index >= c.first && index <= c.last {
		if l := c.ring[index%uint64(len(c.ring))]; l != nil && l.Index == index {
			*out = *l
			c.mu.RUnlock()
			return nil
		}
	}
	c.mu.RUnlock()
	return c.LogStore.GetLog(index, out)
}

// StoreLog stores one entry.
func (c *logCache) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores the entries and, once the store has them, caches them.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last >= c.first && logs[0].Index != c.last+1 {
		c.resetLocked() // not the next entries (a follower overwriting its tail)
	}
	n := uint64(len(c.ring))
	for _, l := range logs {
		if c.last < c.first {
			c.first = l.Index
		}
		if c.last >= c.first && l.Index-c.first >= n {
			c.dropOldestLocked() // its slot is the new entry's
		}
		c.ring[l.Index%n] = l
		c.last = l.Index
		c.bytes += entryBytes(l)
	}
	for c.bytes > c.maxBytes && c.first < c.last {
		c.dropOldestLocked()
	}
	return nil
}

func (c *logCache) dropOldestLocked() {
	slot := c.first % uint64(len(c.ring))
	if l := c.ring[slot]; l != nil {
		c.bytes -= entryBytes(l)
		c.ring[slot] = nil
	}
	c.first++
}

func (c *logCache) resetLocked() {
	clear(c.ring)
	c.first, c.last, c.bytes = 1, 0, 0
}

// IsMonotonic passes on the store's answer (raft.MonotonicLogStore). A
// store that cannot hold a gap (raft-wal) says so, and Raft then empties
// the log of a follower that installs a snapshot past it; hidden behind the
// cache, the follower kept its log and its next append, after the gap,
// failed ("non-monotonic log entries").
func (c *logCache) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

var _ raft.MonotonicLogStore = (*logCache)(nil)

// DeleteRange deletes from the store and forgets the cache, as
// raft.LogCache does (compaction and a follower's truncation are rare).
func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	c.resetLocked()
	c.mu.Unlock()
	return c.LogStore.DeleteRange(min, max)
}
