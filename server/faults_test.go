package server_test

// The fault suite's tools: a disk that the nemesis fails or stalls under
// Raft (server.Config.WrapRaftStores), and an invariant checker fed by
// every server's FSM (server.Config.FSMObserver).

import (
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/raft"
)

var errDiskFault = errors.New("injected disk fault")

// diskFaults is one incarnation of one server's disk. The nemesis makes
// its log writes (StoreLogs, DeleteRange) or snapshot writes fail, after
// an optional stall, once or for a while; crash freezes it: nothing
// written after that is kept.
type diskFaults struct {
	mu            sync.Mutex
	failLogs      int       // log writes left to fail at once
	logsUntil     time.Time // fail every log write until then
	snapsUntil    time.Time // fail every snapshot write until then
	stall         time.Duration
	onFail        func() // run as the one-time fault returns its error
	frozen        bool
	failed        atomic.Int64 // writes failed (for the report)
	snapshots     atomic.Int64 // snapshots written
	droppedStable atomic.Int64 // stable-store writes dropped after the freeze
}

// failLogWrite fails the next append after a stall, and runs then (if
// not nil) as it fails.
func (d *diskFaults) failLogWrite(stall time.Duration, then func()) {
	d.mu.Lock()
	d.failLogs, d.stall, d.onFail = 1, stall, then
	d.mu.Unlock()
}

// disarm drops a one-time fault that has not fired.
func (d *diskFaults) disarm() {
	d.mu.Lock()
	d.failLogs, d.onFail = 0, nil
	d.mu.Unlock()
}

// failLogWritesFor fails every log write for a while.
func (d *diskFaults) failLogWritesFor(dur, stall time.Duration) {
	d.mu.Lock()
	d.logsUntil, d.stall = time.Now().Add(dur), stall
	d.mu.Unlock()
}

// failSnapshotWritesFor fails every snapshot write for a while.
func (d *diskFaults) failSnapshotWritesFor(dur time.Duration) {
	d.mu.Lock()
	d.snapsUntil = time.Now().Add(dur)
	d.mu.Unlock()
}

// freeze is the crash: from now on no write reaches the disk.
func (d *diskFaults) freeze() {
	d.mu.Lock()
	d.frozen = true
	d.mu.Unlock()
}

func (d *diskFaults) isFrozen() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.frozen
}

// logWrite says whether a log write fails, stalling first if it does; a
// one-time fault is for appends only.
func (d *diskFaults) logWrite(appending bool) error {
	d.mu.Lock()
	fail := d.frozen || time.Now().Before(d.logsUntil)
	var then func()
	if !fail && appending && d.failLogs > 0 {
		d.failLogs--
		fail, then, d.onFail = true, d.onFail, nil
	}
	stall := d.stall
	d.mu.Unlock()
	if !fail {
		return nil
	}
	if stall > 0 {
		time.Sleep(stall)
	}
	d.failed.Add(1)
	if then != nil {
		then()
	}
	return errDiskFault
}

func (d *diskFaults) snapshotWrite() error {
	d.mu.Lock()
	fail := d.frozen || time.Now().Before(d.snapsUntil)
	d.mu.Unlock()
	if fail {
		d.failed.Add(1)
		return errDiskFault
	}
	return nil
}

// wrap is the server.Config.WrapRaftStores of this disk.
func (d *diskFaults) wrap(s server.RaftStores) server.RaftStores {
	return server.RaftStores{
		Logs:      &faultyLogStore{LogStore: s.Logs, d: d},
		Stable:    &faultyStableStore{StableStore: s.Stable, d: d},
		Snapshots: &faultySnapshots{SnapshotStore: s.Snapshots, d: d},
	}
}

type faultyLogStore struct {
	raft.LogStore
	d *diskFaults
}

func (s *faultyLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *faultyLogStore) StoreLogs(logs []*raft.Log) error {
	if err := s.d.logWrite(true); err != nil {
		return err
	}
	return s.LogStore.StoreLogs(logs)
}

func (s *faultyLogStore) DeleteRange(min, max uint64) error {
	if err := s.d.logWrite(false); err != nil {
		return err
	}
	return s.LogStore.DeleteRange(min, max)
}

// IsMonotonic passes on the wrapped store's (raft.MonotonicLogStore).
func (s *faultyLogStore) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// faultyStableStore drops the writes made after the crash: Raft panics on
// a failed term or vote write, and a crashed process writes nothing.
type faultyStableStore struct {
	raft.StableStore
	d *diskFaults
}

func (s *faultyStableStore) Set(k, v []byte) error {
	if s.d.isFrozen() {
		s.d.droppedStable.Add(1)
		return nil
	}
	return s.StableStore.Set(k, v)
}

func (s *faultyStableStore) SetUint64(k []byte, v uint64) error {
	if s.d.isFrozen() {
		s.d.droppedStable.Add(1)
		return nil
	}
	return s.StableStore.SetUint64(k, v)
}

type faultySnapshots struct {
	raft.SnapshotStore
	d *diskFaults
}

func (s *faultySnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	if err := s.d.snapshotWrite(); err != nil {
		return nil, err
	}
	sink, err := s.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	return &faultySink{SnapshotSink: sink, d: s.d}, nil
}

type faultySink struct {
	raft.SnapshotSink
	d *diskFaults
}

func (s *faultySink) Write(p []byte) (int, error) {
	if err := s.d.snapshotWrite(); err != nil {
		return 0, err
	}
	return s.SnapshotSink.Write(p)
}

// Close fails, and drops the snapshot, when the disk fails at that moment.
func (s *faultySink) Close() error {
	if err := s.d.snapshotWrite(); err != nil {
		s.SnapshotSink.Cancel()
		return err
	}
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	s.d.snapshots.Add(1)
	return nil
}

// invariants checks what every server's FSM does: on each server (each
// incarnation of it: a restart replays from its snapshot), the applied
// index only grows and the state's index never goes back, and no two
// servers ever apply different entries at the same index.
type invariants struct {
	mu         sync.Mutex
	entries    map[uint64]appliedEntry
	violations []string
	applied    atomic.Int64 // entries applied, all servers
	restores   atomic.Int64 // snapshots restored, all servers
}

type appliedEntry struct {
	term uint64
	typ  raft.LogType
	sum  uint64
	by   string
}

func newInvariants() *invariants { return &invariants{entries: map[uint64]appliedEntry{}} }

func (inv *invariants) violate(format string, args ...any) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if len(inv.violations) < 20 {
		inv.violations = append(inv.violations, fmt.Sprintf(format, args...))
	}
}

// Violations returns what was found so far.
func (inv *invariants) Violations() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return append([]string(nil), inv.violations...)
}

// observer returns the server.FSMObserver of one incarnation of a server.
func (inv *invariants) observer(name string) *fsmObserver {
	return &fsmObserver{inv: inv, name: name}
}

var crcTable = crc64.MakeTable(crc64.ECMA)

type fsmObserver struct {
	inv      *invariants
	name     string
	restores atomic.Int64 // snapshots this incarnation restored
	// Only the FSM goroutine of one server touches these.
	lastApplied, lastState uint64
}

func (o *fsmObserver) Applied(logs []*raft.Log, st *state.Store) {
	for _, l := range logs {
		if l.Index <= o.lastApplied {
			o.inv.violate("%s applied index %d after %d: its applied index went back", o.name, l.Index, o.lastApplied)
		}
		o.lastApplied = l.Index
		e := appliedEntry{term: l.Term, typ: l.Type, sum: crc64.Checksum(l.Data, crcTable), by: o.name}
		o.inv.mu.Lock()
		prev, seen := o.inv.entries[l.Index]
		if !seen {
			o.inv.entries[l.Index] = e
		}
		o.inv.mu.Unlock()
		if seen && (prev.term != e.term || prev.typ != e.typ || prev.sum != e.sum) {
			o.inv.violate("index %d: %s applied term %d %v (crc %x), %s applied term %d %v (crc %x): two servers applied different entries at one index",
				l.Index, prev.by, prev.term, prev.typ, prev.sum, o.name, e.term, e.typ, e.sum)
		}
	}
	o.inv.applied.Add(int64(len(logs)))
	o.checkState("applying", st)
}

func (o *fsmObserver) Restored(st *state.Store) {
	o.inv.restores.Add(1)
	o.restores.Add(1)
	o.checkState("restoring a snapshot", st)
}

// checkState: the state's index (the highest index that wrote any table)
// never goes back on one server.
func (o *fsmObserver) checkState(what string, st *state.Store) {
	idx := stateIndex(st)
	if idx < o.lastState {
		o.inv.violate("%s: state index %d after %s, was %d (applied index %d): its state went back", o.name, idx, what, o.lastState, o.lastApplied)
	}
	o.lastState = max(o.lastState, idx)
}

func stateIndex(st *state.Store) uint64 {
	snap := st.Snapshot()
	defer snap.Close()
	rows, err := snap.Indexes()
	if err != nil {
		panic(fmt.Sprintf("reading the index table: %v", err))
	}
	var out uint64
	for _, r := range rows {
		out = max(out, r.Value)
	}
	return out
}

var _ io.Writer = (*faultySink)(nil)
