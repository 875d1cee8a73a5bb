package state

import "fmt"

// AllocDescMigrating is the desired description of an allocation stopped
// by `nomad alloc stop` (Nomad's: the allocation is migrated, the
// scheduler places its replacement).
const AllocDescMigrating = "alloc is being migrated"

// AllocStop marks an allocation to migrate at idx and inserts the
// evaluation that replaces it, in one transaction, as Nomad's Alloc.Stop
// (an AllocUpdateDesiredTransition): the allocation keeps running until
// the scheduler stops it in the plan that places its replacement, so that
// the two are linked (PreviousAllocation, NextAllocation). It answers the
// allocation as it was. (The time argument is kept for the Raft entry's
// shape; Nomad leaves ModifyTime as it was.)
func (s *Store) AllocStop(idx uint64, allocID string, eval *Evaluation, _ int64) (*Allocation, error) {
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
	c := a.Copy()
	migrate := true
	c.DesiredTransition.Migrate = &migrate
	// Nomad's UpdateAllocDesiredTransitionTxn: both indexes, not the time.
	c.ModifyIndex, c.AllocModifyIndex = idx, idx
	if err := txn.Insert(allocsTable, c); err != nil {
		return nil, fmt.Errorf("failed updating allocation: %w", err)
	}
	if err := setIndex(txn, allocsTable, idx); err != nil {
		return nil, err
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
