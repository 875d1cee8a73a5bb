package state

import (
	"math"
	"sync"

	"github.com/hashicorp/go-memdb"
)

// nodeAllocWatch keeps, per node, what its client's read of its
// allocations needs from the commits, so that no read walks the node's
// allocations to learn it:
//
//   - a channel closed when the servers change one of the node's
//     allocations (its AllocModifyIndex moves) or delete one, and only
//     then: a memdb watch on the node's prefix of the allocations' node
//     index also fired on the client's own reports and, for a node without
//     allocations, on every write to a neighbouring branch of the radix
//     tree (1,000 idle nodes woke about 240 times per write);
//   - the node's index: the highest AllocModifyIndex of its allocations and
//     the index of the last deletion of one (a node's blocking read waits
//     on it; a deletion moves it so that the node hears of the removal);
//   - the IDs of its allocations deleted since the horizon (tombstones), so
//     that a changes read can name them.
//
// It is derived state: rebuilt on restore, never in a snapshot, shared
// with point-in-time copies of the store. Only committed transactions
// update it (commitOrch's deferred notify, in commit order).
type nodeAllocWatch struct {
	mu    sync.Mutex
	chs   map[string]chan struct{}
	nodes map[string]*nodeAllocLog
	// horizon: a read of the changes after an index below it cannot be
	// answered (the tombstones before it are not known). A restored store
	// starts at math.MaxUint64 (the history its clients knew is another
	// one) and takes the index of its first commit.
	horizon uint64
}

type nodeAllocLog struct {
	index uint64
	// horizon: this node's tombstones before it were dropped (maxTombstones).
	horizon uint64
	removed []allocTombstone
}

type allocTombstone struct {
	id    string
	index uint64
}

// maxTombstones bounds a node's tombstones: past it, the older half is
// dropped and a read of changes from before them gets the whole list.
const maxTombstones = 256

func (w *nodeAllocWatch) logLocked(nodeID string) *nodeAllocLog {
	l := w.nodes[nodeID]
	if l == nil {
		if w.nodes == nil {
			w.nodes = map[string]*nodeAllocLog{}
		}
		l = &nodeAllocLog{}
		w.nodes[nodeID] = l
	}
	return l
}

// watch returns the channel closed at the node's next change and the
// node's index, together: a change committed after it closes the channel.
func (w *nodeAllocWatch) watch(nodeID string) (chan struct{}, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.chs[nodeID]
	if c == nil {
		if w.chs == nil {
			w.chs = map[string]chan struct{}{}
		}
		c = make(chan struct{})
		w.chs[nodeID] = c
	}
	return c, w.indexLocked(nodeID)
}

// index is the node's index (at least 1).
func (w *nodeAllocWatch) index(nodeID string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.indexLocked(nodeID)
}

func (w *nodeAllocWatch) indexLocked(nodeID string) uint64 {
	if l := w.nodes[nodeID]; l != nil {
		return max(l.index, 1)
	}
	return 1
}

// answers: the node's deletions after index since are all known (since
// is not below a horizon).
func (w *nodeAllocWatch) answers(nodeID string, since uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answersLocked(nodeID, since)
}

func (w *nodeAllocWatch) answersLocked(nodeID string, since uint64) bool {
	if since < w.horizon {
		return false
	}
	l := w.nodes[nodeID]
	return l == nil || since >= l.horizon
}

// removedSince returns the node's allocations deleted after index since,
// and false when they are not all known (since is below a horizon).
func (w *nodeAllocWatch) removedSince(nodeID string, since uint64) ([]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answersLocked(nodeID, since) {
		return nil, false
	}
	l := w.nodes[nodeID]
	if l == nil {
		return nil, true
	}
	var out []string
	for i := len(l.removed) - 1; i >= 0 && l.removed[i].index > since; i-- {
		out = append(out, l.removed[i].id)
	}
	return out, true
}

// notify takes in a transaction committed at idx: it moves the indexes of
// the nodes whose allocations the servers changed (placed, stopped,
// updated in place, deleted), records the deletions and wakes those nodes'
// readers, and the readers of the nodes deleted.
func (w *nodeAllocWatch) notify(changes memdb.Changes, idx uint64) {
	var woken []string
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.horizon == math.MaxUint64 {
		w.horizon = idx
	}
	for _, c := range changes {
		switch {
		case c.Table == nodesTable && c.After == nil:
			id := c.Before.(*Node).ID
			delete(w.nodes, id) // a node registered again reads all (its CreateIndex)
			woken = append(woken, id)
		case c.Table != allocsTable:
		case c.After == nil:
			a := c.Before.(*Allocation)
			l := w.logLocked(a.NodeID)
			l.index = max(l.index, idx)
			l.removed = append(l.removed, allocTombstone{id: a.ID, index: idx})
			if len(l.removed) > maxTombstones {
				drop := len(l.removed) / 2
				l.horizon = l.removed[drop-1].index
				l.removed = append([]allocTombstone(nil), l.removed[drop:]...)
			}
			woken = append(woken, a.NodeID)
		case c.Before == nil || c.Before.(*Allocation).AllocModifyIndex != c.After.(*Allocation).AllocModifyIndex:
			a := c.After.(*Allocation)
			l := w.logLocked(a.NodeID)
			l.index = max(l.index, a.AllocModifyIndex)
			woken = append(woken, a.NodeID)
		}
	}
	for _, id := range woken {
		if c := w.chs[id]; c != nil {
			close(c)
			delete(w.chs, id)
		}
	}
}

// rebuild sets every node's index from a freshly restored store's
// allocations; the restored store answers no changes until its first
// commit.
func (w *nodeAllocWatch) rebuild(txn *memdb.Txn) error {
	iter, err := txn.Get(allocsTable, "id")
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodes = map[string]*nodeAllocLog{}
	w.horizon = math.MaxUint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*Allocation)
		l := w.logLocked(a.NodeID)
		l.index = max(l.index, a.AllocModifyIndex)
	}
	return nil
}

// abandon wakes every watcher (the store is replaced).
func (w *nodeAllocWatch) abandon() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, c := range w.chs {
		close(c)
		delete(w.chs, id)
	}
}
