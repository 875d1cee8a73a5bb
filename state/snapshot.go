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
	store   *Store
	txn     *memdb.Txn
	strings restoreStrings
}

// NewRestore starts filling a fresh store.
func NewRestore() *Restore {
	s := NewStore()
	return &Restore{store: s, txn: s.db.Txn(true), strings: restoreStrings{}}
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
	r.strings = nil
	if err := rebuildSummariesTxn(r.txn); err != nil {
		// Only a broken schema fails here, as in commitOrch.
		panic(fmt.Sprintf("state: rebuilding job summaries: %v", err))
	}
	if err := r.store.usage.rebuild(r.txn); err != nil {
		panic(fmt.Sprintf("state: summing the nodes' allocations: %v", err))
	}
	if err := r.store.nodeAllocs.rebuild(r.txn); err != nil {
		panic(fmt.Sprintf("state: indexing the nodes' allocations: %v", err))
	}
	if err := rebuildRuleMethods(r.txn); err != nil {
		panic(fmt.Sprintf("state: counting the binding rules per auth method: %v", err))
	}
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

// Each calls fn with every row of a table, in its ID order, one at a time,
// and stops at fn's first error.
func (s *Snapshot) Each(table string, fn func(row any) error) error {
	iter, err := s.txn.Get(table, "id")
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if err := fn(raw); err != nil {
			return err
		}
	}
	return nil
}

// NewRow returns an empty row of table to decode into, or nil for an
// unknown table.
func NewRow(table string) any {
	if f := newRow[table]; f != nil {
		return f()
	}
	return nil
}

// Insert restores one row of a table as it was (its repeated strings shared
// with the rows restored before it).
func (r *Restore) Insert(table string, row any) error {
	r.prepare(row)
	if err := r.txn.Insert(table, row); err != nil {
		return fmt.Errorf("failed restoring a row of %s: %w", table, err)
	}
	return nil
}

// prepare readies a restored row for the store: its repeated strings
// shared, a rule's own strings packed, a node's class computed.
func (r *Restore) prepare(row any) {
	if ss, ok := row.(stringSharer); ok {
		ss.shareStrings(r.strings.share)
	}
	switch row := row.(type) {
	case *Node:
		row.class = row.computeClass()
	case *BindingRule:
		row.packStrings(false)
	}
}

// Verifier checks snapshot rows as a Restore takes them (the table exists
// and every index value of the row builds) and counts them, without
// building a store: a snapshot is checked holding one row at a time.
type Verifier struct {
	counts map[string]int
}

// NewVerifier starts checking rows.
func NewVerifier() *Verifier {
	v := &Verifier{counts: map[string]int{}}
	for name := range tableSchemas {
		if name != indexTable && !derivedTables[name] {
			v.counts[name] = 0
		}
	}
	return v
}

// Insert checks one row of a table, with the errors Restore.Insert gives.
func (v *Verifier) Insert(table string, row any) error {
	ts, ok := tableSchemas[table]
	if !ok || derivedTables[table] {
		return fmt.Errorf("failed restoring a row of %s: invalid table '%s'", table, table)
	}
	// The primary index first, as memdb's Insert checks it.
	ok, _, err := ts.Indexes["id"].Indexer.(memdb.SingleIndexer).FromObject(row)
	if err != nil {
		return fmt.Errorf("failed restoring a row of %s: failed to build primary index: %v", table, err)
	}
	if !ok {
		return fmt.Errorf("failed restoring a row of %s: object missing primary index", table)
	}
	for name, is := range ts.Indexes {
		var ok bool
		var err error
		switch ix := is.Indexer.(type) {
		case memdb.SingleIndexer:
			ok, _, err = ix.FromObject(row)
		case memdb.MultiIndexer:
			ok, _, err = ix.FromObject(row)
		}
		switch {
		case err != nil:
			return fmt.Errorf("failed restoring a row of %s: failed to build index '%s': %v", table, name, err)
		case !ok && !is.AllowMissing:
			return fmt.Errorf("failed restoring a row of %s: missing value for index '%s'", table, name)
		}
	}
	if table != indexTable {
		v.counts[table]++
	}
	return nil
}

// Counts returns how many rows of each table were checked (the index table
// aside), as Store.Counts of the restored store would.
func (v *Verifier) Counts() map[string]int { return v.counts }
