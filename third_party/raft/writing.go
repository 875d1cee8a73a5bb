// ctlplane fork: the leader replicates a batch while it writes it.

package raft

import "sync"

// writingLogs is the batch the leader is writing to its log store while the
// replication goroutines already send it (Raft thesis §10.2.1: the leader
// may write to its disk in parallel with replicating to its followers). It
// counts itself towards a commit only once its own write is durable, so the
// commit rule is unchanged. dispatchLogs runs on the leader loop, one batch
// at a time, so there is at most one batch here.
type writingLogs struct {
	mu   sync.RWMutex
	logs []*Log // contiguous indexes, logs[0].Index first
}

// set publishes logs before the leader writes them.
func (w *writingLogs) set(logs []*Log) {
	w.mu.Lock()
	w.logs = logs
	w.mu.Unlock()
}

// clear withdraws the batch once the store holds it (or the write failed).
func (w *writingLogs) clear() {
	w.mu.Lock()
	w.logs = nil
	w.mu.Unlock()
}

// get copies the entry at index into out when it is in the batch being
// written. Readers look here first and then in the store: the batch is
// cleared only after the store has it, so an entry is always in one of the
// two while the leader leads.
func (w *writingLogs) get(index uint64, out *Log) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if len(w.logs) == 0 || index < w.logs[0].Index || index > w.logs[len(w.logs)-1].Index {
		return false
	}
	*out = *w.logs[index-w.logs[0].Index]
	return true
}

// getLogForReplication reads an entry to send to a follower: from the
// batch the leader is still writing, else from the log store.
func (r *Raft) getLogForReplication(index uint64, out *Log) error {
	if r.writing.get(index, out) {
		return nil
	}
	return r.logs.GetLog(index, out)
}
