package state

import (
	"github.com/hashicorp/go-memdb"
)

// Batch is one memdb write transaction over many Raft log entries: the FSM
// applies a whole batch of committed entries in it, so that memdb commits
// (and wakes watchers) once per batch and each table's index row is written
// once, at the highest index that changed it. Every Batch write checks
// everything before it changes anything, so a write that returns an error
// has changed nothing and the rest of the batch goes on.
type Batch struct {
	txn     *memdb.Txn
	indexes map[string]uint64 // table -> highest index written in the batch

	// explicit: the batch spans entries, so its writes record their changes
	// per entry (record) instead of memdb tracking the whole transaction.
	explicit bool
	entry    []memdb.Change

	// ruleMethods: how the batch moved each auth method's binding-rule
	// count; its rows are written once, at Commit (ruleMethodChanged).
	ruleMethods map[string]int
}

// NewBatch opens a write transaction. Only one can be open at a time (the
// FSM is the only writer): Commit or Abort it before any other write.
func (s *Store) NewBatch() *Batch {
	return &Batch{txn: s.writeTxn(), indexes: map[string]uint64{}}
}

// touch records that table changed at idx.
func (b *Batch) touch(table string, idx uint64) {
	if idx > b.indexes[table] {
		b.indexes[table] = idx
	}
}

// ruleMethod records a write of a rule of method that moved its count by
// delta (0 for an update).
func (b *Batch) ruleMethod(method string, delta int) {
	if b.ruleMethods == nil {
		b.ruleMethods = map[string]int{}
	}
	b.ruleMethods[method] += delta
}

// Commit writes the derived and the index rows and makes the batch's
// writes visible.
func (b *Batch) Commit() error {
	for method, delta := range b.ruleMethods {
		if err := ruleMethodChanged(b.txn, method, delta); err != nil {
			b.txn.Abort()
			return err
		}
	}
	for table, idx := range b.indexes {
		if err := setIndex(b.txn, table, idx); err != nil {
			b.txn.Abort()
			return err
		}
	}
	b.txn.Commit()
	return nil
}

// Abort drops the batch's writes; after Commit it does nothing.
func (b *Batch) Abort() { b.txn.Abort() }

// inBatch runs one write in a batch of its own.
func inBatch[T any](s *Store, write func(b *Batch) (T, error)) (T, error) {
	b := s.NewBatch()
	defer b.Abort()
	out, err := write(b)
	if err != nil {
		return out, err
	}
	if err := b.Commit(); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}
