// Package fsm applies committed Raft log entries to the state store, and
// snapshots and restores that store.
package fsm

import (
	"fmt"
	"io"
	"sync"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// FSM is the raft.FSM of ctlplane. It is the only writer of the state store.
type FSM struct {
	logger hclog.Logger

	mu    sync.RWMutex // guards state: a restore swaps it
	state *state.Store
}

// New returns an FSM over an empty store.
func New(logger hclog.Logger) *FSM {
	return &FSM{logger: logger.Named("fsm"), state: state.NewStore()}
}

// State is the current store. Callers must fetch it again after a restore
// abandons it (its AbandonCh closes).
func (f *FSM) State() *state.Store {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state
}

// Apply applies one committed entry. The returned value is what the writer's
// raft.ApplyFuture.Response sees: the stored object, or an error.
func (f *FSM) Apply(l *raft.Log) any {
	if len(l.Data) == 0 {
		return fmt.Errorf("empty log entry at index %d", l.Index)
	}
	t := MessageType(l.Data[0])
	// The flag lets an older server skip a type it does not know; a server
	// that knows the type applies it.
	ignoreUnknown := t&IgnoreUnknownTypeFlag != 0
	t &^= IgnoreUnknownTypeFlag
	buf := l.Data[1:]
	s := f.State()
	switch t {
	case BindingRuleSetType:
		var req BindingRuleSetRequest
		if err := decode(buf, &req); err != nil {
			panic(fmt.Errorf("failed to decode binding rule set at index %d: %w", l.Index, err))
		}
		rule, err := s.BindingRuleSet(l.Index, &req.Rule, req.Create)
		if err != nil {
			return err
		}
		return rule
	case BindingRuleDeleteType:
		var req BindingRuleDeleteRequest
		if err := decode(buf, &req); err != nil {
			panic(fmt.Errorf("failed to decode binding rule delete at index %d: %w", l.Index, err))
		}
		return s.BindingRuleDelete(l.Index, req.ID, req.Namespace)
	case ServerRegisterType:
		var req ServerRegisterRequest
		if err := decode(buf, &req); err != nil {
			panic(fmt.Errorf("failed to decode server register at index %d: %w", l.Index, err))
		}
		return s.ServerSet(l.Index, &req.Server)
	case ServerDeregisterType:
		var req ServerDeregisterRequest
		if err := decode(buf, &req); err != nil {
			panic(fmt.Errorf("failed to decode server deregister at index %d: %w", l.Index, err))
		}
		return s.ServerDelete(l.Index, req.ID)
	}
	if ignoreUnknown {
		f.logger.Warn("ignoring unknown message type, upgrade to a newer version", "type", t, "index", l.Index)
		return nil
	}
	// Skipping it would silently diverge from the servers that know it.
	panic(fmt.Errorf("failed to apply request: unknown message type %d at index %d", t, l.Index))
}

// snapshot record types.
type recordType uint8

const (
	indexRecord       recordType = 1
	bindingRuleRecord recordType = 2
	serverRecord      recordType = 3
)

// Snapshot captures the store in O(1); Persist streams it later.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.State().Snapshot()}, nil
}

type fsmSnapshot struct {
	snap *state.Snapshot
}

// Persist writes (type, object) records for every table.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(w io.Writer) error {
	enc := codec.NewEncoder(w, msgpackHandle)
	record := func(t recordType, obj any) error {
		if err := enc.Encode(t); err != nil {
			return err
		}
		return enc.Encode(obj)
	}
	indexes, err := s.snap.Indexes()
	if err != nil {
		return err
	}
	for _, e := range indexes {
		if err := record(indexRecord, e); err != nil {
			return err
		}
	}
	rules, err := s.snap.BindingRules()
	if err != nil {
		return err
	}
	for _, r := range rules {
		if err := record(bindingRuleRecord, r); err != nil {
			return err
		}
	}
	servers, err := s.snap.Servers()
	if err != nil {
		return err
	}
	for _, srv := range servers {
		if err := record(serverRecord, srv); err != nil {
			return err
		}
	}
	return nil
}

func (s *fsmSnapshot) Release() { s.snap.Close() }

// Restore replaces the whole state with the snapshot's, atomically: the new
// store is built aside and swapped in, then the old one is abandoned so that
// blocking queries wake and re-read.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	fresh, err := DecodeSnapshot(rc)
	if err != nil {
		return err
	}

	f.mu.Lock()
	old := f.state
	f.state = fresh
	f.mu.Unlock()
	old.Abandon()
	return nil
}

// ReadSnapshot decodes a snapshot stream into restore.
func ReadSnapshot(r io.Reader, restore *state.Restore) error {
	dec := codec.NewDecoder(r, msgpackHandle)
	for {
		var t recordType
		if err := dec.Decode(&t); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("failed reading snapshot record type: %w", err)
		}
		var err error
		switch t {
		case indexRecord:
			var e state.IndexEntry
			if err = dec.Decode(&e); err == nil {
				err = restore.Index(&e)
			}
		case bindingRuleRecord:
			var rule state.BindingRule
			if err = dec.Decode(&rule); err == nil {
				err = restore.BindingRule(&rule)
			}
		case serverRecord:
			var srv state.ServerInfo
			if err = dec.Decode(&srv); err == nil {
				err = restore.Server(&srv)
			}
		default:
			return fmt.Errorf("unknown snapshot record type %d", t)
		}
		if err != nil {
			return fmt.Errorf("failed restoring snapshot record of type %d: %w", t, err)
		}
	}
}

// DecodeSnapshot reads a whole snapshot stream into a new, detached store:
// a stream that does not decode to the end is refused before it is used.
func DecodeSnapshot(r io.Reader) (*state.Store, error) {
	restore := state.NewRestore()
	if err := ReadSnapshot(r, restore); err != nil {
		restore.Abort()
		return nil, err
	}
	return restore.Commit(), nil
}
