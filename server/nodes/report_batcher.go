package nodes

import (
	"sync"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// maxReportBatch bounds the reports of one Raft entry (a node's request
// alone may carry MaxAllocUpdates; it always goes whole).
const maxReportBatch = 4 * MaxAllocUpdates

// reportBatcher writes the checked reports of many nodes in one Raft entry,
// as Nomad's Node.UpdateAlloc batches them: while one entry commits, the
// reports that arrive meanwhile wait, and the next entry carries all of
// them (group commit, as the evaluation batcher). A lone report goes out at
// once. Every caller returns when the entry holding its reports committed,
// with that entry's index, or its error (one error answers the whole batch).
type reportBatcher struct {
	raft fsm.Applier

	mu      sync.Mutex
	pending []*state.NodeAllocReports
	waiters []chan reportResult
	running bool
}

type reportResult struct {
	index uint64
	err   error
}

// write commits r with whatever else is pending and answers its index.
func (b *reportBatcher) write(r *state.NodeAllocReports) (uint64, error) {
	done := make(chan reportResult, 1)
	b.mu.Lock()
	b.pending = append(b.pending, r)
	b.waiters = append(b.waiters, done)
	if !b.running {
		b.running = true
		go b.run()
	}
	b.mu.Unlock()
	res := <-done
	return res.index, res.err
}

// run commits what is pending, one entry after another, until nothing is.
func (b *reportBatcher) run() {
	for {
		b.mu.Lock()
		n, size := 0, 0
		for n < len(b.pending) && (n == 0 || size+len(b.pending[n].Updates) <= maxReportBatch) {
			size += len(b.pending[n].Updates)
			n++
		}
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		nodes, waiters := b.pending[:n:n], b.waiters[:n:n]
		b.pending, b.waiters = b.pending[n:], b.waiters[n:]
		b.mu.Unlock()
		res, err := fsm.Apply(b.raft, fsm.AllocClientUpdates, &fsm.AllocClientUpdatesRequest{Nodes: nodes})
		for _, w := range waiters {
			w <- reportResult{index: res.Index, err: err}
		}
	}
}

// PendingReports is how many nodes' reports wait for the next Raft entry
// (the group commit's queue; operators' gauge and tests' sync point).
func (s *Service) PendingReports() int {
	s.reports.mu.Lock()
	defer s.reports.mu.Unlock()
	return len(s.reports.pending)
}
