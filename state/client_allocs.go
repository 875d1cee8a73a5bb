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

// ClientAllocs lists a node's allocations with their task groups, by ID,
// read in one transaction. The index is the highest AllocModifyIndex among
// them (at least 1): it moves when the servers change what the node should
// run (a placement, a stop, an in-place update), not when the client
// reports, so a node's blocking read does not wake on its own reports.
// The allocations whose AllocModifyIndex is at most since (0: none) come
// without their task group: the client has them as they are.
func (s *Store) ClientAllocs(ws memdb.WatchSet, nodeID string, since uint64) (uint64, []*ClientAlloc, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	allocs, err := listTxn[Allocation](txn, ws, allocsTable, "node", nodeID)
	if err != nil {
		return 0, nil, err
	}
	type key struct {
		ns, id  string
		version uint64
	}
	jobs := map[key]*Job{}
	out := make([]*ClientAlloc, 0, len(allocs))
	for _, a := range allocs {
		if a.AllocModifyIndex <= since {
			out = append(out, &ClientAlloc{Allocation: a})
			continue
		}
		k := key{a.Namespace, a.JobID, a.JobVersion}
		job, ok := jobs[k]
		if !ok {
			raw, err := txn.First(jobVersionsTable, "id", a.Namespace, a.JobID, a.JobVersion)
			if err != nil {
				return 0, nil, err
			}
			if raw != nil {
				job = raw.(*Job)
			}
			jobs[k] = job
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
		out = append(out, ca)
	}
	idx := uint64(1)
	for _, a := range allocs {
		idx = max(idx, a.AllocModifyIndex)
	}
	return idx, out, nil
}

// NodesIndex and AllocsIndex are the current max indexes of those tables.
func (s *Store) NodesIndex() uint64  { return s.TableIndex(nodesTable) }
func (s *Store) AllocsIndex() uint64 { return s.TableIndex(allocsTable) }

// ClientAllocsIndex is ClientAllocs' index alone: cheap enough to run on
// every wake-up of a node's blocking read (most are its own reports).
//
// ws fires when the servers change one of the node's allocations (not on
// the client's own reports): the channel is taken before the read, so a
// change committed in between wakes it at once.
func (s *Store) ClientAllocsIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	if ws != nil {
		ws.Add(s.nodeAllocs.ch(nodeID))
	}
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(allocsTable, "node", nodeID)
	if err != nil {
		return 0, fmt.Errorf("failed allocs list: %w", err)
	}
	idx := uint64(1)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		idx = max(idx, raw.(*Allocation).AllocModifyIndex)
	}
	return idx, nil
}
