package evals

import (
	"sync"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// maxEvalBatch bounds the evaluations of one Raft entry.
const maxEvalBatch = 1024

// evalBatcher writes evaluation updates from any number of workers, as
// Nomad's eval batcher does: while one entry commits, the updates that
// arrive meanwhile wait, and the next entry carries all of them (group
// commit). A lone update goes out at once; each caller returns when the
// entry holding its update committed, with that entry's error.
type evalBatcher struct {
	raft fsm.Applier

	mu      sync.Mutex
	pending []*state.Evaluation
	waiters []chan error
	running bool
}

// upsert writes ev and waits until it is committed.
func (b *evalBatcher) upsert(ev *state.Evaluation) error {
	done := make(chan error, 1)
	b.mu.Lock()
	b.pending = append(b.pending, ev)
	b.waiters = append(b.waiters, done)
	if !b.running {
		b.running = true
		go b.run()
	}
	b.mu.Unlock()
	return <-done
}

// run commits what is pending, one entry after another, until nothing is.
func (b *evalBatcher) run() {
	for {
		b.mu.Lock()
		n := min(len(b.pending), maxEvalBatch)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		evals, waiters := b.pending[:n:n], b.waiters[:n:n]
		b.pending, b.waiters = b.pending[n:], b.waiters[n:]
		b.mu.Unlock()
		_, err := fsm.Apply(b.raft, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: evals})
		for _, w := range waiters {
			w <- err
		}
	}
}
