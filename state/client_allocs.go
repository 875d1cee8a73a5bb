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

// allocsNodeModifyIndex orders a node's allocations by ModifyIndex.
const allocsNodeModifyIndex = "node_modify"

// ClientAllocChanges reads what changed in the node's list after index
// since (0: the whole list). An incremental read visits only the node's
// allocations written after since (their ModifyIndex: a change of the
// servers moves AllocModifyIndex with it, a client's report ModifyIndex
// alone), the job version looked up only for those sent; the node's index,
// count and deletions come from the commits (nodeAllocWatch), read with the
// transaction under the watch's read lock, so all are of the same commit.
func (s *Store) ClientAllocChanges(nodeID string, since uint64) (*ClientAllocChanges, error) {
	w := s.nodeAllocs
	w.mu.RLock()
	defer w.mu.RUnlock()
	txn := s.db.Txn(false)
	defer txn.Abort()
	out := &ClientAllocChanges{Index: w.indexLocked(nodeID)}
	raw, err := txn.First(nodesTable, "id", nodeID)
	if err != nil {
		return nil, fmt.Errorf("failed node lookup: %w", err)
	}
	// An index from before the node was registered is another node's
	// (deleted since, with its tombstones), unless it is 1: the index of a
	// node that never had an allocation, which has nothing to miss.
	out.Full = since == 0 || raw == nil || (since > 1 && since < raw.(*Node).CreateIndex) || !w.answersLocked(nodeID, since)
	var iter memdb.ResultIterator
	if out.Full {
		iter, err = txn.Get(allocsTable, allocsNodeModifyIndex+"_prefix", nodeID+"\x00")
	} else {
		iter, err = txn.LowerBound(allocsTable, allocsNodeModifyIndex, nodeID, since+1)
		out.Removed = w.removedSinceLocked(nodeID, since)
		out.Count = w.listedLocked(nodeID)
	}
	if err != nil {
		return nil, fmt.Errorf("failed allocs list: %w", err)
	}
	versions := jobVersionCache{txn: txn}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*Allocation)
		if a.NodeID != nodeID {
			break // past the node's allocations (LowerBound)
		}
		if !listed(a) {
			// Ended on the client (its report moved ModifyIndex): it left
			// the list then or later.
			if !out.Full {
				out.Removed = append(out.Removed, a.ID)
			}
			continue
		}
		if out.Full {
			out.Count++
		} else if a.AllocModifyIndex <= since {
			continue // the client has it as it is
		}
		ca, err := versions.clientAlloc(a)
		if err != nil {
			return nil, err
		}
		out.Allocs = append(out.Allocs, ca)
	}
	return out, nil
}

// jobVersionCache looks up the job versions of the allocations sent, each
// version once.
type jobVersionCache struct {
	txn  *memdb.Txn
	jobs map[jobVersionKey]*Job
}

type jobVersionKey struct {
	ns, id  string
	version uint64
}

// clientAlloc is a as its client receives it: with its task group, without
// the task states it reported and the scheduler's metrics.
func (c *jobVersionCache) clientAlloc(a *Allocation) (*ClientAlloc, error) {
	k := jobVersionKey{a.Namespace, a.JobID, a.JobVersion}
	job, ok := c.jobs[k]
	if !ok {
		raw, err := c.txn.First(jobVersionsTable, "id", a.Namespace, a.JobID, a.JobVersion)
		if err != nil {
			return nil, fmt.Errorf("failed job version lookup: %w", err)
		}
		if raw != nil {
			job = raw.(*Job)
		}
		if c.jobs == nil {
			c.jobs = map[jobVersionKey]*Job{}
		}
		c.jobs[k] = job
	}
	if a.TaskStates != nil || a.Metrics != nil {
		cp := *a
		cp.TaskStates, cp.Metrics = nil, nil
		a = &cp
	}
	ca := &ClientAlloc{Allocation: a}
	if job != nil {
		if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
			if tg.Update == nil && job.Update != nil {
				cp := *tg
				cp.Update = job.Update
				tg = &cp
			}
			ca.TaskGroup = tg
		}
	}
	return ca, nil
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
