package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// ClientAlloc is an allocation as its node's client receives it: with the
// task group of its job version, so that the client knows what to run.
type ClientAlloc struct {
	Allocation *Allocation
	// TaskGroup is the group's definition in the allocation's job version,
	// its update strategy resolved from the job's when the group has none
	// (nil when that job version is gone).
	TaskGroup *TaskGroup
}

// ClientAllocChanges is what changed in a node's list of allocations after
// an index: the list is the node's allocations that have not ended on the
// client (complete, failed or lost), without the task states the client
// reported (its own news) and the scheduler's metrics (what it saw
// placing them: nothing to run by, and most of an answer's bytes).
type ClientAllocChanges struct {
	// Index is the node's index when the read began: the next read asks for
	// the changes after it.
	Index uint64
	// Full: Allocs is the whole list (asked for from index 0, or from an
	// index older than what the store can answer).
	Full bool
	// Allocs are the listed allocations the servers changed after the index
	// (AllocModifyIndex), with their task groups.
	Allocs []*ClientAlloc
	// Removed are the IDs of the allocations that left the list after the
	// index: deleted, or ended on the client. It may name some the client
	// never had, or already dropped.
	Removed []string
	// Count is the length of the whole list.
	Count int
}

// ClientAllocChanges reads what changed in the node's list after index
// since (0: the whole list) in one pass over the node's allocations, the
// job version looked up only for those sent. The node's index and the
// horizon come from the commits (nodeAllocWatch), not from a walk: the
// index is read before the transaction (so nothing after it is missed), the
// deletions after it (so none it does not show are missed).
func (s *Store) ClientAllocChanges(nodeID string, since uint64) (*ClientAllocChanges, error) {
	for {
		out := &ClientAllocChanges{Index: s.nodeAllocs.index(nodeID)}
		txn := s.db.Txn(false)
		raw, err := txn.First(nodesTable, "id", nodeID)
		if err != nil {
			txn.Abort()
			return nil, fmt.Errorf("failed node lookup: %w", err)
		}
		// An index from before the node was registered is another node's
		// (deleted since, with its tombstones), unless it is 1: the index
		// of a node that never had an allocation, which has nothing to miss.
		out.Full = since == 0 || raw == nil || (since > 1 && since < raw.(*Node).CreateIndex)
		out.Full = out.Full || !s.nodeAllocs.answers(nodeID, since)
		err = clientAllocChangesTxn(txn, nodeID, since, out)
		txn.Abort()
		if err != nil {
			return nil, err
		}
		if out.Full {
			return out, nil
		}
		removed, ok := s.nodeAllocs.removedSince(nodeID, since)
		if !ok {
			continue // tombstones dropped meanwhile: read the whole list
		}
		out.Removed = append(out.Removed, removed...)
		return out, nil
	}
}

func clientAllocChangesTxn(txn *memdb.Txn, nodeID string, since uint64, out *ClientAllocChanges) error {
	iter, err := txn.Get(allocsTable, "node", nodeID)
	if err != nil {
		return fmt.Errorf("failed allocs list: %w", err)
	}
	type key struct {
		ns, id  string
		version uint64
	}
	var jobs map[key]*Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*Allocation)
		if a.ClientTerminalStatus() {
			// A client's report moves ModifyIndex only: it left the list
			// then or later.
			if !out.Full && a.ModifyIndex > since {
				out.Removed = append(out.Removed, a.ID)
			}
			continue
		}
		out.Count++
		if !out.Full && a.AllocModifyIndex <= since {
			continue // the client has it as it is
		}
		k := key{a.Namespace, a.JobID, a.JobVersion}
		job, ok := jobs[k]
		if !ok {
			raw, err := txn.First(jobVersionsTable, "id", a.Namespace, a.JobID, a.JobVersion)
			if err != nil {
				return fmt.Errorf("failed job version lookup: %w", err)
			}
			if raw != nil {
				job = raw.(*Job)
			}
			if jobs == nil {
				jobs = map[key]*Job{}
			}
			jobs[k] = job
		}
		if a.TaskStates != nil || a.Metrics != nil {
			c := *a
			c.TaskStates, c.Metrics = nil, nil
			a = &c
		}
		ca := &ClientAlloc{Allocation: a}
		if job != nil {
			if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
				if tg.Update == nil && job.Update != nil {
					c := *tg
					c.Update = job.Update
					tg = &c
				}
				ca.TaskGroup = tg
			}
		}
		out.Allocs = append(out.Allocs, ca)
	}
	return nil
}

// NodesIndex and AllocsIndex are the current max indexes of those tables.
func (s *Store) NodesIndex() uint64  { return s.TableIndex(nodesTable) }
func (s *Store) AllocsIndex() uint64 { return s.TableIndex(allocsTable) }

// ClientAllocsIndex is the node's index (ClientAllocChanges'), kept from
// the commits: a node's blocking read waits on it.
//
// ws fires when the servers change or delete one of the node's allocations
// (not on the client's own reports): the channel is taken with the index,
// so a change committed after it wakes it at once.
func (s *Store) ClientAllocsIndex(ws memdb.WatchSet, nodeID string) uint64 {
	if ws == nil {
		return s.nodeAllocs.index(nodeID)
	}
	ch, idx := s.nodeAllocs.watch(nodeID)
	ws.Add(ch)
	return idx
}
