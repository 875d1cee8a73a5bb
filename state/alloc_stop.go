package state

import "fmt"

// AllocDescMigrating is the desired description of an allocation stopped
// by `nomad alloc stop` (Nomad's: the allocation is migrated, the
// scheduler places its replacement).
const AllocDescMigrating = "alloc is being migrated"

// AllocStop tells an allocation to stop at idx and inserts the evaluation
// that replaces it, in one transaction. It answers the allocation as it was.
func (s *Store) AllocStop(idx uint64, allocID string, eval *Evaluation, now int64) (*Allocation, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	raw, err := txn.First(allocsTable, "id", allocID)
	if err != nil {
		return nil, fmt.Errorf("failed allocation lookup: %w", err)
	}
	if raw == nil {
		return nil, errorf(ErrNotFound, "Unknown allocation %q", allocID)
	}
	a := raw.(*Allocation)
	if a.DesiredStatus == AllocDesiredStatusRun {
		c := a.Copy()
		c.DesiredStatus = AllocDesiredStatusStop
		c.DesiredDescription = AllocDescMigrating
		migrate := true
		c.DesiredTransition.Migrate = &migrate // as Nomad records it
		c.ModifyIndex, c.AllocModifyIndex, c.ModifyTime = idx, idx, now
		if err := txn.Insert(allocsTable, c); err != nil {
			return nil, fmt.Errorf("failed updating allocation: %w", err)
		}
		if err := setIndex(txn, allocsTable, idx); err != nil {
			return nil, err
		}
	}
	if err := upsertEvalTxn(txn, idx, eval); err != nil {
		return nil, err
	}
	if err := refreshJobStatusTxn(txn, idx, a.Namespace, a.JobID); err != nil {
		return nil, err
	}
	s.commitOrch(txn, idx)
	return a, nil
}
