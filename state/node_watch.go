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
//   - how many of its allocations its client's list has (not ended on the
//     client);
//   - the IDs of its allocations deleted since the horizon (tombstones), so
//     that a changes read can name them.
//
// It is derived state: rebuilt on restore, never in a snapshot, shared
// with point-in-time copies of the store. An orchestrator commit updates
// it and commits memdb under mu (commit), and a changes read holds mu's
// read lock over its memdb transaction: what a read sees of the two is
// always the same commit.
type nodeAllocWatch struct {
	mu    sync.RWMutex
	nodes map[string]*nodeAllocLog
	// horizon: a read of the changes after an index below it cannot be
	// answered (the tombstones before it are not known). A restored store
	// starts at math.MaxUint64 (the history its clients knew is another
	// one) and takes the index of its first commit.
	horizon uint64

	chMu sync.Mutex
	chs  map[string]chan struct{}
}

type nodeAllocLog struct {
	index uint64
	// listed counts the allocations not ended on the client.
	listed int
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
// node's index: the channel is taken first, so a change whose commit the
// index does not include closes it.
func (w *nodeAllocWatch) watch(nodeID string) (chan struct{}, uint64) {
	w.chMu.Lock()
	c := w.chs[nodeID]
	if c == nil {
		if w.chs == nil {
			w.chs = map[string]chan struct{}{}
		}
		c = make(chan struct{})
		w.chs[nodeID] = c
	}
	w.chMu.Unlock()
	w.mu.RLock()
	defer w.mu.RUnlock()
	return c, w.indexLocked(nodeID)
}

// index is the node's index (at least 1).
func (w *nodeAllocWatch) index(nodeID string) uint64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.indexLocked(nodeID)
}

func (w *nodeAllocWatch) indexLocked(nodeID string) uint64 {
	if l := w.nodes[nodeID]; l != nil {
		return max(l.index, 1)
	}
	return 1
}

// answersLocked: the node's deletions after index since are all known
// (since is not below a horizon).
func (w *nodeAllocWatch) answersLocked(nodeID string, since uint64) bool {
	if since < w.horizon {
		return false
	}
	l := w.nodes[nodeID]
	return l == nil || since >= l.horizon
}

// removedSinceLocked returns the node's allocations deleted after since
// (answersLocked must hold).
func (w *nodeAllocWatch) removedSinceLocked(nodeID string, since uint64) []string {
	l := w.nodes[nodeID]
	if l == nil {
		return nil
	}
	var out []string
	for i := len(l.removed) - 1; i >= 0 && l.removed[i].index > since; i-- {
		out = append(out, l.removed[i].id)
	}
	return out
}

func (w *nodeAllocWatch) listedLocked(nodeID string) int {
	if l := w.nodes[nodeID]; l != nil {
		return l.listed
	}
	return 0
}

// listed: an allocation is in its client's list while it has not ended on
// the client.
func listed(a *Allocation) bool { return a != nil && !a.ClientTerminalStatus() }

// commit takes in an orchestrator transaction at idx and commits it, as one
// step for the readers; then it wakes the readers of the nodes whose
// allocations the servers changed (placed, stopped, updated in place,
// deleted), and of the nodes deleted.
func (w *nodeAllocWatch) commit(txn *memdb.Txn, idx uint64, changes memdb.Changes) {
	var woken []string
	w.mu.Lock()
	if w.horizon == math.MaxUint64 {
		w.horizon = idx
	}
	for _, c := range changes {
		if c.Table == nodesTable && c.After == nil {
			id := c.Before.(*Node).ID
			delete(w.nodes, id) // a node registered again reads all (its CreateIndex)
			woken = append(woken, id)
			continue
		}
		if c.Table != allocsTable {
			continue
		}
		before, after := allocChange(c)
		a := after
		if a == nil {
			a = before
		}
		l := w.logLocked(a.NodeID)
		if listed(before) {
			l.listed--
		}
		if listed(after) {
			l.listed++
		}
		switch {
		case after == nil:
			l.index = max(l.index, idx)
			l.removed = append(l.removed, allocTombstone{id: a.ID, index: idx})
			if len(l.removed) > maxTombstones {
				drop := len(l.removed) / 2
				l.horizon = l.removed[drop-1].index
				l.removed = append([]allocTombstone(nil), l.removed[drop:]...)
			}
			woken = append(woken, a.NodeID)
		case before == nil || before.AllocModifyIndex != after.AllocModifyIndex:
			l.index = max(l.index, after.AllocModifyIndex)
			woken = append(woken, a.NodeID)
		}
	}
	txn.Commit()
	w.mu.Unlock()
	if len(woken) == 0 {
		return
	}
	w.chMu.Lock()
	defer w.chMu.Unlock()
	for _, id := range woken {
		if c := w.chs[id]; c != nil {
			close(c)
			delete(w.chs, id)
		}
	}
}

// rebuild sets every node's index and count from a freshly restored
// store's allocations; the restored store answers no changes until its
// first commit.
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
		if listed(a) {
			l.listed++
		}
	}
	return nil
}

// abandon wakes every watcher (the store is replaced).
func (w *nodeAllocWatch) abandon() {
	w.chMu.Lock()
	defer w.chMu.Unlock()
	for id, c := range w.chs {
		close(c)
		delete(w.chs, id)
	}
}
