// Package raftfsm adapts the FSM to hashicorp/raft, so that the fsm package
// (which the HTTP layer's request types come from) stays free of Raft.
package raftfsm

import (
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// FSM is the raft.FSM of ctlplane; it is a raft.BatchingFSM.
type FSM struct {
	*fsm.FSM
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New returns a raft.FSM over an empty store.
func New(logger hclog.Logger) *FSM { return &FSM{FSM: fsm.New(logger)} }

// Apply applies one committed log entry.
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyEntry(l.Index, l.Data) }

// Snapshot captures the store in O(1); Persist streams it later.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{s: f.FSM.Snapshot()}, nil
}

type snapshot struct{ s *fsm.Snapshot }

// Persist writes the stream to the sink, cancelling it on failure.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.s.Stream(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() { s.s.Release() }

// ApplyBatch applies a batch of committed entries (raft.BatchingFSM): the
// commands in shared memdb transactions, configuration entries answered
// with nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	entries := make([]fsm.Entry, len(logs))
	for i, l := range logs {
		entries[i].Index = l.Index
		if l.Type == raft.LogCommand {
			entries[i].Data = l.Data
			if l.Data == nil {
				// Not nil, so that an empty command is refused as Apply does.
				entries[i].Data = []byte{}
			}
		}
	}
	return f.ApplyEntries(entries)
}
