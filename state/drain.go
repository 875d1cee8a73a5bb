package state

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Drain statuses of Node.LastDrain (Nomad's values).
const (
	DrainStatusDraining = "draining"
	DrainStatusComplete = "complete"
	DrainStatusCanceled = "canceled"
)

// DrainSpec is what an operator asks of a drain: a deadline after which
// what is left on the node is stopped (negative: at once; 0: none).
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// DrainStrategy is a node's ongoing drain.
type DrainStrategy struct {
	DrainSpec
	// ForceDeadline is when what is left is stopped (zero: no deadline).
	ForceDeadline time.Time
	StartedAt     time.Time
}

// DeadlineTime says whether the drain has a deadline and when it is (a
// negative Deadline forces the drain at once: the zero time).
func (d *DrainStrategy) DeadlineTime() (bool, time.Time) {
	switch {
	case d == nil || d.Deadline == 0:
		return false, time.Time{}
	case d.Deadline < 0:
		return true, time.Time{}
	}
	return true, d.ForceDeadline
}

// DrainMetadata is the record of a node's latest drain.
type DrainMetadata struct {
	StartedAt  time.Time
	UpdatedAt  time.Time
	Status     string
	AccessorID string
	Meta       map[string]string
}

// NodeDrainUpdate is one drain change of a node: a new or updated strategy,
// or nil to cancel (MarkEligible then makes the node eligible again).
type NodeDrainUpdate struct {
	NodeID        string
	DrainStrategy *DrainStrategy
	MarkEligible  bool
	Meta          map[string]string
	AccessorID    string
	// UpdatedAt is the operation's time, Unix nanoseconds.
	UpdatedAt int64
	Evals     []*Evaluation
}

// NodeDrainResult is the answer of a drain or eligibility change (Nomad's
// NodeDrainUpdateResponse and NodeEligibilityUpdateResponse).
type NodeDrainResult struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	Index           uint64
}

// NodeUpdateDrain sets or cancels a node's drain at idx (Nomad's
// updateNodeDrainImpl): a drain makes the node ineligible and keeps
// LastDrain up to date. Evals are inserted in the same transaction.
func (s *Store) NodeUpdateDrain(idx uint64, u *NodeDrainUpdate) error {
	txn := s.orchTxn()
	defer txn.Abort()
	if err := nodeDrainTxn(txn, idx, u, false); err != nil {
		return err
	}
	for _, e := range u.Evals {
		if err := upsertEvalTxn(txn, idx, e); err != nil {
			return err
		}
	}
	s.commitOrch(txn, idx)
	return nil
}

// NodesDrainComplete ends the drains of nodes at idx (the drainer's
// verdict): the strategy is cleared, LastDrain is complete and the nodes
// stay ineligible. A node no longer draining (cancelled meanwhile) or gone
// is left alone.
func (s *Store) NodesDrainComplete(idx uint64, nodeIDs []string, updatedAt int64) error {
	txn := s.orchTxn()
	defer txn.Abort()
	for _, id := range nodeIDs {
		raw, err := txn.First(nodesTable, "id", id)
		if err != nil {
			return fmt.Errorf("failed node lookup: %w", err)
		}
		if raw == nil || raw.(*Node).DrainStrategy == nil {
			continue
		}
		if err := nodeDrainTxn(txn, idx, &NodeDrainUpdate{NodeID: id, UpdatedAt: updatedAt}, true); err != nil {
			return err
		}
	}
	s.commitOrch(txn, idx)
	return nil
}

func nodeDrainTxn(txn *memdb.Txn, idx uint64, u *NodeDrainUpdate, completed bool) error {
	raw, err := txn.First(nodesTable, "id", u.NodeID)
	if err != nil {
		return fmt.Errorf("failed node lookup: %w", err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "node not found")
	}
	old := raw.(*Node)
	n := *old
	n.DrainStrategy = u.DrainStrategy
	n.Drain = u.DrainStrategy != nil
	if u.DrainStrategy != nil {
		n.SchedulingEligibility = NodeSchedulingIneligible
	} else if u.MarkEligible {
		n.SchedulingEligibility = NodeSchedulingEligible
	}
	// LastDrain records drains only: neither before nor after is no drain.
	if old.DrainStrategy != nil || n.DrainStrategy != nil {
		at := time.Unix(0, u.UpdatedAt).UTC().Truncate(time.Second)
		var last DrainMetadata
		switch {
		case old.DrainStrategy == nil:
			last = DrainMetadata{StartedAt: at, Meta: u.Meta}
		case old.LastDrain != nil:
			last = *old.LastDrain
		default:
			last = DrainMetadata{StartedAt: old.DrainStrategy.StartedAt.Truncate(time.Second), Meta: u.Meta}
		}
		last.UpdatedAt = at
		// Completion brings neither metadata nor an accessor: keep the operator's.
		if len(u.Meta) != 0 {
			last.Meta = u.Meta
		}
		if u.AccessorID != "" {
			last.AccessorID = u.AccessorID
		}
		switch {
		case n.DrainStrategy != nil:
			last.Status = DrainStatusDraining
		case completed:
			last.Status = DrainStatusComplete
		default:
			last.Status = DrainStatusCanceled
		}
		n.LastDrain = &last
	}
	return putNodeTxn(txn, idx, &n, nil)
}

// NodeUpdateEligibility sets a node's scheduling eligibility at idx; a
// draining node cannot be made eligible (Nomad's text).
func (s *Store) NodeUpdateEligibility(idx uint64, nodeID, eligibility string, evals []*Evaluation) error {
	if eligibility != NodeSchedulingEligible && eligibility != NodeSchedulingIneligible {
		return errorf(ErrInvalid, "invalid scheduling eligibility %q", eligibility)
	}
	txn := s.orchTxn()
	defer txn.Abort()
	raw, err := txn.First(nodesTable, "id", nodeID)
	if err != nil {
		return fmt.Errorf("failed node lookup: %w", err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "node not found")
	}
	n := *raw.(*Node)
	if n.DrainStrategy != nil && eligibility == NodeSchedulingEligible {
		return errorf(ErrInvalid, "can not set node's scheduling eligibility to eligible while it is draining")
	}
	n.SchedulingEligibility = eligibility
	if err := putNodeTxn(txn, idx, &n, evals); err != nil {
		return err
	}
	s.commitOrch(txn, idx)
	return nil
}
