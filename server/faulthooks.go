package server

import (
	"io"

	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/raft"
)

// Hooks for fault-injection tests (Config.WrapRaftStores, Config.FSMObserver):
// the tests fail or stall the stores under Raft and check, on every server,
// what the FSM applies.

// RaftStores are the stores Raft keeps its log, its term and vote, and its
// snapshots in.
type RaftStores struct {
	Logs      raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
}

// FSMObserver hears, on Raft's FSM goroutine and after the fact, of every
// batch of entries the FSM applied and of every snapshot it restored, with
// the state it then holds.
type FSMObserver interface {
	Applied(logs []*raft.Log, st *state.Store)
	Restored(st *state.Store)
}

// observedFSM is the FSM telling an FSMObserver what it does.
type observedFSM struct {
	*raftfsm.FSM
	obs FSMObserver
}

var _ raft.BatchingFSM = (*observedFSM)(nil)

func (f *observedFSM) Apply(l *raft.Log) any {
	out := f.FSM.Apply(l)
	f.obs.Applied([]*raft.Log{l}, f.State())
	return out
}

func (f *observedFSM) ApplyBatch(logs []*raft.Log) []any {
	out := f.FSM.ApplyBatch(logs)
	f.obs.Applied(logs, f.State())
	return out
}

func (f *observedFSM) Restore(rc io.ReadCloser) error {
	if err := f.FSM.Restore(rc); err != nil {
		return err
	}
	f.obs.Restored(f.State())
	return nil
}
