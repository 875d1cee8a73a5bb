package state

import (
	"sync"

	"github.com/hashicorp/go-memdb"
)

// nodeAllocWatch wakes a node's blocking read of its allocations when the
// servers change one of them (its AllocModifyIndex moves), and only then.
// A memdb watch on the node's prefix of the allocations' node index also
// fired on the client's own reports and, for a node without allocations,
// on every write to a neighbouring branch of the radix tree: 1,000 idle
// nodes woke about 240 times per write.
type nodeAllocWatch struct {
	mu  sync.Mutex
	chs map[string]chan struct{}
}

// ch returns the channel closed at the node's next change.
func (w *nodeAllocWatch) ch(nodeID string) chan struct{} {
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
	return c
}

// notify wakes the watchers of the nodes whose allocations the servers
// changed in a committed transaction (placed, stopped, updated in place,
// deleted), and of the nodes deleted.
func (w *nodeAllocWatch) notify(changes memdb.Changes) {
	var nodes []string
	for _, c := range changes {
		switch {
		case c.Table == nodesTable && c.After == nil:
			nodes = append(nodes, c.Before.(*Node).ID)
		case c.Table != allocsTable:
		case c.After == nil:
			nodes = append(nodes, c.Before.(*Allocation).NodeID)
		case c.Before == nil || c.Before.(*Allocation).AllocModifyIndex != c.After.(*Allocation).AllocModifyIndex:
			nodes = append(nodes, c.After.(*Allocation).NodeID)
		}
	}
	if len(nodes) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range nodes {
		if c := w.chs[id]; c != nil {
			close(c)
			delete(w.chs, id)
		}
	}
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
