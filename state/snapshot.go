package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// Snapshot is a point-in-time, read-only view of the whole store. Taking one
// is O(1) (memdb is an immutable radix tree), so it never blocks writes.
type Snapshot struct {
	txn *memdb.Txn
}

// Snapshot returns a consistent view of every table.
func (s *Store) Snapshot() *Snapshot { return &Snapshot{txn: s.db.Txn(false)} }

// Close releases the snapshot.
func (s *Snapshot) Close() { s.txn.Abort() }

// Indexes returns every row of the index table.
func (s *Snapshot) Indexes() ([]*IndexEntry, error) {
	iter, err := s.txn.Get(indexTable, "id")
	if err != nil {
		return nil, err
	}
	var out []*IndexEntry
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*IndexEntry))
	}
	return out, nil
}

// Restore fills a new, empty store inside one write transaction; nothing is
// visible until Commit.
type Restore struct {
	store *Store
	txn   *memdb.Txn
}

// NewRestore starts filling a fresh store.
func NewRestore() *Restore {
	s := NewStore()
	return &Restore{store: s, txn: s.db.Txn(true)}
}

// Index restores one row of the index table.
func (r *Restore) Index(e *IndexEntry) error {
	if err := r.txn.Insert(indexTable, e); err != nil {
		return fmt.Errorf("failed restoring index %q: %w", e.Key, err)
	}
	return nil
}

// Commit finishes the restore and returns the filled store.
func (r *Restore) Commit() *Store {
	r.txn.Commit()
	return r.store
}

// Abort drops the half-filled store.
func (r *Restore) Abort() { r.txn.Abort() }

// Rows returns every row of a table, in its ID order.
func (s *Snapshot) Rows(table string) ([]any, error) {
	iter, err := s.txn.Get(table, "id")
	if err != nil {
		return nil, err
	}
	var out []any
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw)
	}
	return out, nil
}

// NewRow returns an empty row of table to decode into, or nil for an
// unknown table.
func NewRow(table string) any {
	if f := newRow[table]; f != nil {
		return f()
	}
	return nil
}

// Insert restores one row of a table as it was.
func (r *Restore) Insert(table string, row any) error {
	if err := r.txn.Insert(table, row); err != nil {
		return fmt.Errorf("failed restoring a row of %s: %w", table, err)
	}
	return nil
}
