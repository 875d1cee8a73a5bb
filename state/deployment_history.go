package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const deploymentHistoryTable = "deployment_history"

// DeploymentEvent is one change of a deployment's status or description:
// no upstream keeps this, and it answers "why did it end there?".
type DeploymentEvent struct {
	DeploymentID string
	// Index is the Raft index of the change; Time its Unix nanoseconds.
	Index          uint64
	Time           int64
	OldStatus      string
	NewStatus      string
	OldDescription string
	Description    string
	Cause          DeploymentCause
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: deploymentHistoryTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "DeploymentID"},
				&memdb.UintFieldIndex{Field: "Index"},
			}}},
		},
	}, func() any { return new(DeploymentEvent) })
}

// DeploymentHistory lists a deployment's events, oldest first. The index is
// the history table's.
func (s *Store) DeploymentHistory(ws memdb.WatchSet, deploymentID string) (uint64, []*DeploymentEvent, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out, err := listTxn[DeploymentEvent](txn, ws, deploymentHistoryTable, "id_prefix", deploymentID)
	if err != nil {
		return 0, nil, err
	}
	return maxIndex(txn, deploymentHistoryTable), out, nil
}

// addHistoryTxn records the change from old (nil: created) to cur when its
// status or description changed.
func addHistoryTxn(txn *memdb.Txn, idx uint64, old, cur *Deployment, cause DeploymentCause, now int64) error {
	ev := &DeploymentEvent{
		DeploymentID: cur.ID,
		Index:        idx,
		Time:         now,
		NewStatus:    cur.Status,
		Description:  cur.StatusDescription,
		Cause:        cause,
	}
	if old != nil {
		if old.Status == cur.Status && old.StatusDescription == cur.StatusDescription {
			return nil
		}
		ev.OldStatus, ev.OldDescription = old.Status, old.StatusDescription
	}
	if err := txn.Insert(deploymentHistoryTable, ev); err != nil {
		return fmt.Errorf("failed recording deployment history: %w", err)
	}
	return setIndex(txn, deploymentHistoryTable, idx)
}
