package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"
)

const nodePoolsTable = "node_pools"

// The built-in node pools (Nomad's): every node is in "all"; a node that
// names no pool is in "default". Neither can be changed or deleted.
const (
	NodePoolAll     = "all"
	NodePoolDefault = "default"
)

// NodePool is one of Nomad 1.6's node pools.
type NodePool struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration *NodePoolSchedulerConfiguration `json:",omitempty"`
	CreateIndex            uint64
	ModifyIndex            uint64
}

// NodePoolSchedulerConfiguration is a pool's scheduler settings, kept as
// given (ctlplane's scheduler has one algorithm and no oversubscription).
type NodePoolSchedulerConfiguration struct {
	SchedulerAlgorithm            string `json:",omitempty"`
	MemoryOversubscriptionEnabled *bool  `json:",omitempty"`
}

// IsBuiltInNodePool says whether name is "all" or "default".
func IsBuiltInNodePool(name string) bool { return name == NodePoolAll || name == NodePoolDefault }

func init() {
	registerTable(&memdb.TableSchema{
		Name: nodePoolsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}, func() any { return new(NodePool) })
}

// builtInNodePools always exist: a store without their rows answers them
// as created at index 1, as Nomad creates them when its state starts.
func builtInNodePools() []*NodePool {
	return []*NodePool{
		{Name: NodePoolAll, Description: "Node pool with all nodes in the cluster.", Meta: map[string]string{}, CreateIndex: 1, ModifyIndex: 1},
		{Name: NodePoolDefault, Description: "Default node pool.", Meta: map[string]string{}, CreateIndex: 1, ModifyIndex: 1},
	}
}

func nodePoolTxn(txn *memdb.Txn, name string) (<-chan struct{}, *NodePool, error) {
	ch, raw, err := txn.FirstWatch(nodePoolsTable, "id", name)
	if err != nil {
		return nil, nil, fmt.Errorf("failed node pool lookup: %w", err)
	}
	if raw != nil {
		return ch, raw.(*NodePool), nil
	}
	for _, p := range builtInNodePools() {
		if p.Name == name {
			return ch, p, nil
		}
	}
	return ch, nil, nil
}

// NodePoolByName returns a node pool, or nil, with the node pools' index.
func (s *Store) NodePoolByName(ws memdb.WatchSet, name string) (uint64, *NodePool, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, p, err := nodePoolTxn(txn, name)
	if err != nil {
		return 0, nil, err
	}
	ws.Add(ch)
	if p == nil {
		watchTableIndex(txn, ws, nodePoolsTable)
	}
	return maxIndex(txn, nodePoolsTable), p, nil
}

// NodePools lists the node pools whose name starts with prefix, by name,
// the built-ins included.
func (s *Store) NodePools(ws memdb.WatchSet, prefix string) (uint64, []*NodePool, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(nodePoolsTable, "id_prefix", prefix)
	if err != nil {
		return 0, nil, fmt.Errorf("failed node pool list: %w", err)
	}
	ws.Add(iter.WatchCh())
	out := []*NodePool{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*NodePool))
	}
	for _, p := range builtInNodePools() {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return maxIndex(txn, nodePoolsTable), out, nil
}

// NodePoolUpsert creates or replaces node pools at idx (CreateIndex kept).
// The built-ins cannot be changed (Nomad's text).
func (s *Store) NodePoolUpsert(idx uint64, pools []*NodePool) error {
	txn := s.writeTxn()
	defer txn.Abort()
	for _, p := range pools {
		if IsBuiltInNodePool(p.Name) {
			return errorf(ErrInvalid, "modifying node pool %q is not allowed", p.Name)
		}
		_, cur, err := nodePoolTxn(txn, p.Name)
		if err != nil {
			return err
		}
		c := *p
		c.CreateIndex, c.ModifyIndex = idx, idx
		if cur != nil {
			c.CreateIndex = cur.CreateIndex
		}
		if err := txn.Insert(nodePoolsTable, &c); err != nil {
			return fmt.Errorf("failed inserting node pool: %w", err)
		}
	}
	if err := setIndex(txn, nodePoolsTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// ensureNodePoolTxn creates the pool a registering node names when it does
// not exist (Nomad does), with the node's index.
func ensureNodePoolTxn(txn *memdb.Txn, idx uint64, name string) error {
	if name == "" || IsBuiltInNodePool(name) {
		return nil
	}
	_, cur, err := nodePoolTxn(txn, name)
	if err != nil || cur != nil {
		return err
	}
	if err := txn.Insert(nodePoolsTable, &NodePool{Name: name, Meta: map[string]string{}, CreateIndex: idx, ModifyIndex: idx}); err != nil {
		return fmt.Errorf("failed inserting node pool: %w", err)
	}
	return setIndex(txn, nodePoolsTable, idx)
}

// NodePoolDelete deletes node pools at idx, all or none: not the
// built-ins, nor a pool that nodes or jobs that are not dead use. The
// texts and their order are Nomad 1.6's: its RPC refuses a pool in use
// (jobs, then nodes, in one multierror), then its state store a pool that
// does not exist or is built in; region is the cluster's, as Nomad lists
// the regions.
func (s *Store) NodePoolDelete(idx uint64, names []string, region string) error {
	txn := s.writeTxn()
	defer txn.Abort()
	var inUse []string
	for _, name := range names {
		jobs, err := txn.Get(jobsTable, "id")
		if err != nil {
			return fmt.Errorf("failed job lookup: %w", err)
		}
		for j := jobs.Next(); j != nil; j = jobs.Next() {
			if job := j.(*Job); job.NodePool == name && job.Status != JobStatusDead {
				inUse = append(inUse, fmt.Sprintf("node pool %q has non-terminal jobs in regions: [%s]", name, region))
				break
			}
		}
		nodes, err := txn.Get(nodesTable, "id")
		if err != nil {
			return fmt.Errorf("failed node lookup: %w", err)
		}
		for n := nodes.Next(); n != nil; n = nodes.Next() {
			if n.(*Node).NodePool == name {
				inUse = append(inUse, fmt.Sprintf("node pool %q has nodes in regions: [%s]", name, region))
				break
			}
		}
	}
	if len(inUse) > 0 {
		return errorf(ErrConflict, "%s", MultiErrorText(inUse))
	}
	for _, name := range names {
		// Nomad looks the pool up first, but its built-ins always exist.
		if IsBuiltInNodePool(name) {
			return errorf(ErrInvalid, "deleting node pool %q is not allowed", name)
		}
		raw, err := txn.First(nodePoolsTable, "id", name)
		if err != nil {
			return fmt.Errorf("failed node pool lookup: %w", err)
		}
		if raw == nil {
			return errorf(ErrNotFound, "node pool %s not found", name)
		}
		if err := txn.Delete(nodePoolsTable, raw); err != nil {
			return fmt.Errorf("failed deleting node pool: %w", err)
		}
	}
	if err := setIndex(txn, nodePoolsTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// requireNodePoolTxn refuses a job whose node pool does not exist, with
// Nomad's text.
func requireNodePoolTxn(txn *memdb.Txn, job *Job) error {
	pool := job.NodePool
	if pool == "" {
		pool = NodePoolDefault
	}
	_, p, err := nodePoolTxn(txn, pool)
	if err != nil {
		return err
	}
	if p == nil {
		return errorf(ErrInvalid, "job %q is in nonexistent node pool %q", job.ID, pool)
	}
	return nil
}

// InNodePool says whether a node is in pool: every node is in "all"; a
// node that names no pool is in "default".
func InNodePool(n *Node, pool string) bool {
	switch pool {
	case NodePoolAll:
		return true
	case "":
		pool = NodePoolDefault
	}
	np := n.NodePool
	if np == "" {
		np = NodePoolDefault
	}
	return np == pool
}
