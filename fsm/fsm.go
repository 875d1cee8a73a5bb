// Package fsm applies committed Raft log entries to the state store, and
// snapshots and restores that store.
package fsm

import (
	"errors"
	"fmt"
	"github.com/ctlplane/ctlplane/fsm/telemetry"
	"io"
	"sync"
	"time"

	metrics "github.com/armon/go-metrics"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// FSM is the raft.FSM of ctlplane. It is the only writer of the state store.
type FSM struct {
	logger hclog.Logger

	mu    sync.RWMutex // guards state: a restore swaps it
	state *state.Store

	prep preparedSlot // see PrepareRestore

	events EventSink // nil: no event stream (see SetEventSink)
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

// applyTimer: the FSM's apply time per message type.
var applyTimer = telemetry.NewTimer("ctlplane.fsm.apply", "FSM apply time per message type.", "type")

// ApplyEntry applies one committed log entry at its Raft index. The
// returned value is what the writer's apply future sees: the stored object,
// or an error.
func (f *FSM) ApplyEntry(index uint64, data []byte) any {
	cmd, data, skip, ok := f.lookup(index, data)
	if !ok {
		return skip
	}
	start := time.Now()
	defer func() { applyTimer.Observe(time.Since(start), cmd.name) }()
	s := f.State()
	resp, err := cmd.apply(s, index, data)
	if err != nil {
		return f.undecodable(cmd, index, err)
	}
	f.publish(index, cmd.typ, s.TakeChanges())
	return resp
}

// undecodable is the answer to an entry whose payload does not decode: an
// error, and nothing applied. Every server decodes the same bytes with the
// same code, so every server (and this one again after a restart) answers
// the same error and the states stay equal; stopping instead (as this did)
// left the entry in the log to stop every server again at every start.
func (f *FSM) undecodable(cmd command, index uint64, err error) error {
	f.logger.Error("log entry does not decode: not applied", "type", cmd.name, "index", index, "error", err)
	return state.NewError(state.ErrInvalid, "failed to decode %s at index %d: %v", cmd.name, index, err)
}

// Entry is one committed log entry; Data nil is an entry that is not the
// FSM's (e.g. a Raft configuration change), answered with nil.
type Entry struct {
	Index uint64
	Data  []byte
}

// ApplyEntries applies consecutive committed entries and returns one answer
// per entry, as ApplyEntry would. Runs of entries whose writes can share a
// transaction are applied in one (state.Batch): one memdb commit, one index
// row write per table and one wake-up of the watchers per run; any other
// entry is applied on its own, in order, between runs.
func (f *FSM) ApplyEntries(entries []Entry) []any {
	out := make([]any, len(entries))
	var b *state.Batch
	var pending []entryChanges // of the open batch, published once it commits
	defer func() {
		if b != nil {
			b.Abort() // only on a panic
		}
	}()
	flush := func() {
		if b == nil {
			return
		}
		if err := b.Commit(); err != nil {
			// The index table takes any row: a failure is a broken store.
			panic(fmt.Errorf("failed to commit a batch of entries: %w", err))
		}
		b = nil
		for _, p := range pending {
			f.publish(p.index, p.typ, p.changes)
		}
		pending = pending[:0]
	}
	for i, e := range entries {
		if e.Data == nil {
			continue
		}
		cmd, data, skip, ok := f.lookup(e.Index, e.Data)
		if !ok {
			out[i] = skip
			continue
		}
		if cmd.batch == nil {
			flush()
			out[i] = f.ApplyEntry(e.Index, e.Data)
			continue
		}
		if b == nil {
			b = f.State().NewEntriesBatch()
		}
		start := time.Now()
		resp, err := cmd.batch(b, e.Index, data)
		if err != nil {
			// The decoder failed before the entry wrote anything to b.
			out[i] = f.undecodable(cmd, e.Index, err)
			continue
		}
		applyTimer.Observe(time.Since(start), cmd.name)
		out[i] = resp
		if f.events != nil {
			pending = append(pending, entryChanges{e.Index, cmd.typ, b.TakeEntryChanges()})
		}
	}
	flush()
	return out
}

// lookup finds the command of an entry and returns it with the entry's
// payload; when ok is false the entry is not applied and skip is its answer
// (an empty entry, or an unknown type flagged as ignorable).
func (f *FSM) lookup(index uint64, data []byte) (cmd command, payload []byte, skip any, ok bool) {
	if len(data) == 0 {
		return command{}, nil, fmt.Errorf("empty log entry at index %d", index), false
	}
	t := MessageType(data[0])
	// The flag lets an older server skip a type it does not know; a server
	// that knows the type applies it.
	ignoreUnknown := t&IgnoreUnknownTypeFlag != 0
	t &^= IgnoreUnknownTypeFlag
	cmd, known := commands[t]
	if !known {
		if ignoreUnknown {
			f.logger.Warn("ignoring unknown message type, upgrade to a newer version", "type", t, "index", index)
			return command{}, nil, nil, false
		}
		// Skipping it without an answer would hide that this server
		// diverges from those that know the type; stopping (as this did)
		// stopped it again at every start, the entry being in its log.
		// The error is what the entry's writer sees; the log says why.
		f.logger.Error("unknown message type: not applied, upgrade this server", "type", t, "index", index)
		return command{}, nil, state.NewError(state.ErrInvalid, "failed to apply request: unknown message type %d at index %d", t, index), false
	}
	return cmd, data[1:], nil, true
}

// Snapshot captures the store in O(1); Stream writes it later.
func (f *FSM) Snapshot() *Snapshot {
	return &Snapshot{snap: f.State().Snapshot()}
}

// Snapshot is a point-in-time capture of the state, to be streamed.
type Snapshot struct {
	snap *state.Snapshot
}

// Stream writes the snapshot stream: a (table name, row) record for every
// row of every table, then an end record ("", number of rows) so that a
// stream cut anywhere is detected.
func (s *Snapshot) Stream(w io.Writer) error {
	defer metrics.MeasureSince([]string{"fsm", "persist"}, time.Now())
	return s.write(w)
}

func (s *Snapshot) write(w io.Writer) error {
	enc := codec.NewEncoder(w, msgpackHandle)
	var rows uint64
	for _, table := range state.Tables() {
		// Row by row from the snapshot's iterator: no list of the table.
		err := s.snap.Each(table, func(row any) error {
			if err := enc.Encode(table); err != nil {
				return err
			}
			if err := enc.Encode(row); err != nil {
				return err
			}
			rows++
			return nil
		})
		if err != nil {
			return fmt.Errorf("failed writing %s to the snapshot: %w", table, err)
		}
	}
	if err := enc.Encode(""); err != nil {
		return err
	}
	return enc.Encode(rows)
}

// Release frees the capture.
func (s *Snapshot) Release() { s.snap.Close() }

// Restore replaces the whole state with the snapshot's, atomically: the new
// store is built aside and swapped in, then the old one is abandoned so that
// blocking queries wake and re-read. A stream that fails to decode changes
// nothing.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	defer metrics.MeasureSince([]string{"fsm", "restore"}, time.Now())
	var fresh *state.Store
	var err error
	if p := f.takePrepared(); p != nil {
		fresh, err = restorePrepared(p, rc)
	} else {
		fresh, err = DecodeSnapshot(rc)
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	old := f.state
	f.state = fresh
	if f.events != nil {
		fresh.TrackChanges()
		f.events.Reset(errRestored)
	}
	f.mu.Unlock()
	old.Abandon()
	return nil
}

// RowSink takes the rows of a snapshot stream: a state.Restore builds a
// store of them, a state.Verifier only checks them.
type RowSink interface {
	Insert(table string, row any) error
}

// ReadSnapshot decodes a snapshot stream into restore. Decoding and
// inserting are pipelined: a goroutine decodes the rows, in batches, while
// this one inserts them in stream order, so that a restore uses two cores.
// The result is that of doing one after the other: the first error in stream
// order (a row that does not decode, or that restore refuses), and restore
// sees no row after it.
func ReadSnapshot(r io.Reader, restore RowSink) error {
	batches := make(chan []record, 4)
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(batches)
		errc <- decodeRecords(r, batches, stop)
	}()
	done := false
	defer func() {
		if !done {
			// Stop the decoder and wait until it no longer reads r.
			close(stop)
			for range batches {
			}
		}
	}()
	for batch := range batches {
		for _, rec := range batch {
			if err := restore.Insert(rec.table, rec.row); err != nil {
				return err
			}
		}
	}
	done = true
	return <-errc
}

// record is one row of a snapshot stream.
type record struct {
	table string
	row   any
}

// recordBatch is how many rows the decoder hands over at once.
const recordBatch = 256

// errStopped: the reader of the records stopped taking them.
var errStopped = errors.New("snapshot decoding stopped")

// decodeRecords decodes a snapshot stream and sends its rows to out in
// batches, in order, until the end record (nil) or the first error. The rows
// decoded before an error are sent first. It returns errStopped once stop is
// closed.
func decodeRecords(r io.Reader, out chan<- []record, stop <-chan struct{}) error {
	dec := codec.NewDecoder(r, snapshotHandle)
	var rows uint64
	batch := make([]record, 0, recordBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case out <- batch:
			batch = make([]record, 0, recordBatch)
			return nil
		case <-stop:
			return errStopped
		}
	}
	fail := func(err error) error {
		if ferr := flush(); ferr != nil {
			return ferr
		}
		return err
	}
	for {
		select {
		case <-stop:
			return errStopped
		default:
		}
		// Pointers, so that a msgpack nil (which decodes as "" or 0) is not
		// taken for the end record's "" or its count.
		var name *string
		if err := dec.Decode(&name); err != nil {
			if err == io.EOF {
				return fail(fmt.Errorf("snapshot is truncated: it ends after %d rows without its end record", rows))
			}
			return fail(fmt.Errorf("failed reading snapshot record: %w", err))
		}
		if name == nil {
			return fail(fmt.Errorf("snapshot record after %d rows has no table name", rows))
		}
		table := *name
		if table == "" {
			var want *uint64
			if err := dec.Decode(&want); err != nil {
				return fail(fmt.Errorf("failed reading snapshot end record: %w", err))
			}
			if want == nil {
				return fail(fmt.Errorf("snapshot end record has no row count"))
			}
			if *want != rows {
				return fail(fmt.Errorf("snapshot has %d rows, its end record says %d", rows, *want))
			}
			// The decoder reads nothing past the value it decodes, so any
			// byte left in r follows the end record. (Decoding one more
			// value instead would report a partial one as io.EOF.)
			var extra [1]byte
			switch _, err := io.ReadFull(r, extra[:]); err {
			case io.EOF:
				return flush()
			case nil:
				return fail(fmt.Errorf("snapshot has data after its end record"))
			default:
				return fail(fmt.Errorf("failed reading snapshot after its end record: %w", err))
			}
		}
		row := state.NewRow(table)
		if row == nil {
			return fail(fmt.Errorf("unknown snapshot table %q", table))
		}
		if err := dec.Decode(row); err != nil {
			return fail(fmt.Errorf("failed reading a row of %s: %w", table, err))
		}
		batch = append(batch, record{table, row})
		rows++
		if len(batch) == recordBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// VerifySnapshot reads a whole snapshot stream and checks every record and
// row as DecodeSnapshot would, holding one row at a time, and returns the
// number of rows of each table.
func VerifySnapshot(r io.Reader) (map[string]int, error) {
	v := state.NewVerifier()
	if err := ReadSnapshot(r, v); err != nil {
		return nil, err
	}
	return v.Counts(), nil
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
