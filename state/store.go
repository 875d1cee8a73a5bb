// Package state is the replicated state of ctlplane: go-memdb tables written
// only by the FSM, each write at the Raft index it is applied at, and read by
// the HTTP layer through watch sets that drive blocking queries.
package state

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-memdb"
)

// indexTable maps a table name to the highest Raft index that touched it.
const indexTable = "index"

// IndexEntry is one row of the index table.
type IndexEntry struct {
	Key   string
	Value uint64
}

// ErrorCode classifies a state-store error so that callers can pick a status.
type ErrorCode int

const (
	// ErrNotFound: the object the write refers to does not exist.
	ErrNotFound ErrorCode = iota + 1
	// ErrInvalid: the write is not valid against the current state.
	ErrInvalid
	// ErrConflict: the write collides with an existing object.
	ErrConflict
	// ErrForbidden: the write is not allowed any more (e.g. a second bootstrap).
	ErrForbidden
	// ErrUnavailable: no server can take the request now (no leader, a
	// write dropped by a snapshot restore); the client may retry.
	ErrUnavailable
)

// Error is a state-store rejection of a write. Its message is meant for the user.
type Error struct {
	Code ErrorCode
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// tableSchemas is filled by each table family's file from its init, with
// newRow, which makes an empty row of the table (for snapshot restore).
var (
	tableSchemas = map[string]*memdb.TableSchema{}
	newRow       = map[string]func() any{}
)

func init() {
	registerTable(&memdb.TableSchema{
		Name: indexTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		},
	}, func() any { return new(IndexEntry) })
}

func registerTable(s *memdb.TableSchema, row func() any) {
	tableSchemas[s.Name] = s
	newRow[s.Name] = row
}

// derivedTables are in the schema but in no snapshot: their rows are made
// by the writes of other tables, and a restored store starts them empty.
var derivedTables = map[string]bool{}

func registerDerivedTable(s *memdb.TableSchema) {
	tableSchemas[s.Name] = s
	derivedTables[s.Name] = true
}

// Tables lists every table name a snapshot holds, sorted, the index table
// first.
func Tables() []string {
	out := []string{indexTable}
	for name := range tableSchemas {
		if name != indexTable && !derivedTables[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out[1:])
	return out
}

// getOne reads the first row of table matching index = args, watching it,
// with the table's index.
func getOne[T any](s *Store, ws memdb.WatchSet, table, index string, args ...any) (uint64, *T, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return 0, nil, fmt.Errorf("failed %s lookup: %w", table, err)
	}
	ws.Add(ch)
	idx := maxIndex(txn, table)
	if raw == nil {
		return idx, nil, nil
	}
	return idx, raw.(*T), nil
}

// getAll lists the rows of table that keep accepts, in ID order.
func getAll[T any](s *Store, ws memdb.WatchSet, table string, keep func(*T) bool) (uint64, []*T, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(table, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("failed %s list: %w", table, err)
	}
	ws.Add(iter.WatchCh())
	out := []*T{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if row := raw.(*T); keep(row) {
			out = append(out, row)
		}
	}
	return maxIndex(txn, table), out, nil
}

// deleteOne deletes the row of table matching index = key at Raft index idx;
// a missing row is ErrNotFound with msg.
func deleteOne(s *Store, idx uint64, table, index, key, msg string) error {
	txn := s.writeTxn()
	defer txn.Abort()
	raw, err := txn.First(table, index, key)
	if err != nil {
		return fmt.Errorf("failed %s lookup: %w", table, err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "%s", msg)
	}
	if err := txn.Delete(table, raw); err != nil {
		return fmt.Errorf("failed deleting from %s: %w", table, err)
	}
	if err := setIndex(txn, table, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: tableSchemas}
}

// Store holds the tables. A Store is replaced whole on snapshot restore; its
// abandon channel then closes so that every blocking query re-reads.
type Store struct {
	db *memdb.MemDB

	abandonOnce sync.Once
	abandonCh   chan struct{}

	changes changeLog // what committed writes changed, for the event stream
	// nodeAllocs wakes nodes' blocking reads (shared with point-in-time copies).
	nodeAllocs *nodeAllocWatch
	// usage: what each node's live allocations hold, for the plan check
	// (shared with point-in-time copies, which never read it).
	usage *nodeUsage
}

// NewStore returns an empty store.
func NewStore() *Store {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		// The schema is static: a failure here is a programming error.
		panic(fmt.Sprintf("state: invalid schema: %v", err))
	}
	return &Store{db: db, abandonCh: make(chan struct{}), nodeAllocs: &nodeAllocWatch{}, usage: newNodeUsage()}
}

// AbandonCh is closed when this store has been replaced by a restore.
func (s *Store) AbandonCh() <-chan struct{} { return s.abandonCh }

// Abandon marks the store as replaced and wakes everything watching it.
func (s *Store) Abandon() {
	s.abandonOnce.Do(func() {
		close(s.abandonCh)
		s.nodeAllocs.abandon()
	})
}

// maxIndex is the highest index of the given tables, never below 1 so that a
// blocking client never sees index 0 and busy-loops.
func maxIndex(txn *memdb.Txn, tables ...string) uint64 {
	var max uint64 = 1
	for _, t := range tables {
		raw, err := txn.First(indexTable, "id", t)
		if err != nil {
			panic(fmt.Sprintf("state: index lookup of %q: %v", t, err))
		}
		if raw != nil && raw.(*IndexEntry).Value > max {
			max = raw.(*IndexEntry).Value
		}
	}
	return max
}

// watchTableIndex adds the watch channel of a table's index row to ws: it
// fires on any write to that table.
func watchTableIndex(txn *memdb.Txn, ws memdb.WatchSet, table string) {
	if ws == nil {
		return // nothing watches (a write's checks)
	}
	ch, _, err := txn.FirstWatch(indexTable, "id", table)
	if err != nil {
		panic(fmt.Sprintf("state: index watch of %q: %v", table, err))
	}
	ws.Add(ch)
}

// setIndex records that table was written at idx.
func setIndex(txn *memdb.Txn, table string, idx uint64) error {
	if err := txn.Insert(indexTable, &IndexEntry{Key: table, Value: idx}); err != nil {
		return fmt.Errorf("failed updating index of %s: %w", table, err)
	}
	return nil
}

// TableIndex is the current max index of a table (1 when it was never written).
func (s *Store) TableIndex(table string) uint64 {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return maxIndex(txn, table)
}

// Counts returns how many objects each table holds (the index table aside).
func (s *Store) Counts() map[string]int {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out := map[string]int{}
	for name := range tableSchemas {
		if name == indexTable || derivedTables[name] {
			continue
		}
		iter, err := txn.Get(name, "id")
		if err != nil {
			panic(fmt.Sprintf("state: listing %q: %v", name, err))
		}
		n := 0
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			n++
		}
		out[name] = n
	}
	return out
}

// HashOf is a content hash of an object's fields, shown as its Hash so that
// clients can tell whether it changed.
func HashOf(fields ...string) []byte {
	h := sha256.New()
	for _, f := range fields {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// PointInTime returns a read-only copy of the store as it is now, in O(1)
// (memdb is an immutable radix tree): the scheduler computes a plan from one
// consistent view while writes go on.
func (s *Store) PointInTime() *Store {
	return &Store{db: s.db.Snapshot(), abandonCh: s.abandonCh, nodeAllocs: s.nodeAllocs, usage: s.usage}
}
