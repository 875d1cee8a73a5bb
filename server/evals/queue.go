package evals

import (
	"container/heap"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// pendingQueue is the broker's view of the pending evaluations, kept up to
// date incrementally: each refresh reads only the evaluations written
// since the last one (by ModifyIndex), so its cost follows the writes, not
// the number of evaluations waiting. Ready ones come out by priority, then
// age.
type pendingQueue struct {
	store *state.Store
	last  uint64
	// pending are the pending evaluations by ID, as last read.
	pending map[string]*state.Evaluation
	ready   evalHeap
	// blocked are the blocked evaluations written since the last refresh.
	blocked []*state.Evaluation
}

func newPendingQueue() *pendingQueue { return &pendingQueue{pending: map[string]*state.Evaluation{}} }

// refresh reads what changed since the last call (everything after a
// snapshot restore replaced the store) and adds ws's wake-up on the next write.
func (q *pendingQueue) refresh(st *state.Store, ws memdb.WatchSet) error {
	if st != q.store {
		q.store, q.last = st, 0
		q.pending = map[string]*state.Evaluation{}
		q.ready = q.ready[:0]
	}
	_, changed, err := st.EvalsModifiedSince(ws, q.last)
	if err != nil {
		return err
	}
	q.blocked = q.blocked[:0]
	for _, ev := range changed {
		if ev.Status == state.EvalStatusBlocked {
			q.blocked = append(q.blocked, ev)
		}
		if ev.Status == state.EvalStatusPending {
			q.pending[ev.ID] = ev
			heap.Push(&q.ready, ev)
		} else {
			delete(q.pending, ev.ID)
		}
		q.last = max(q.last, ev.ModifyIndex)
	}
	return nil
}

// gone drops a pending evaluation that no longer exists in st (deleted by
// a garbage collection after it finished) and says whether it did.
func (q *pendingQueue) gone(st *state.Store, id string) bool {
	_, ev, err := st.Eval(nil, id)
	if err != nil || ev != nil {
		return false
	}
	delete(q.pending, id)
	return true
}

// pop returns the next ready evaluation that take accepts, or nil; the ones
// take refuses (their job is busy, or they wait for later) stay queued.
func (q *pendingQueue) pop(take func(*state.Evaluation) bool) *state.Evaluation {
	var skipped []*state.Evaluation
	defer func() {
		for _, ev := range skipped {
			heap.Push(&q.ready, ev)
		}
	}()
	for q.ready.Len() > 0 {
		ev := heap.Pop(&q.ready).(*state.Evaluation)
		if q.pending[ev.ID] != ev {
			continue // superseded by a newer write, or no longer pending
		}
		if take(ev) {
			return ev
		}
		skipped = append(skipped, ev)
	}
	return nil
}

// requeue puts a taken evaluation back (its processing failed).
func (q *pendingQueue) requeue(ev *state.Evaluation) {
	if cur := q.pending[ev.ID]; cur != nil {
		heap.Push(&q.ready, cur)
	}
}

// evalHeap orders evaluations by priority (high first), then CreateIndex.
type evalHeap []*state.Evaluation

func (h evalHeap) Len() int { return len(h) }
func (h evalHeap) Less(i, j int) bool {
	if h[i].Priority != h[j].Priority {
		return h[i].Priority > h[j].Priority
	}
	return h[i].CreateIndex < h[j].CreateIndex
}
func (h evalHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evalHeap) Push(x any)   { *h = append(*h, x.(*state.Evaluation)) }
func (h *evalHeap) Pop() any {
	old := *h
	ev := old[len(old)-1]
	*h = old[:len(old)-1]
	return ev
}
