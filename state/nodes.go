package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const nodesTable = "nodes"

// Node statuses and scheduling eligibility (Nomad's values).
const (
	NodeStatusInit  = "initializing"
	NodeStatusReady = "ready"
	NodeStatusDown  = "down"
	// NodeStatusDisconnected: it missed its heartbeat while some of its
	// allocations may outlive that (their group has MaxClientDisconnect).
	NodeStatusDisconnected = "disconnected"

	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Node is a client node that runs allocations.
type Node struct {
	ID string
	// SecretID is the node's secret (Nomad's Node.SecretID): minted by the
	// server at the node's first registration, stored as ACL token secrets
	// are, presented by the node's client on every client-protocol call.
	// Never answered on reads (http sanitizes it).
	SecretID   string
	Name       string
	Datacenter string
	HTTPAddr   string
	Drivers    map[string]*DriverInfo
	Resources  Resources
	Attributes map[string]string
	Meta       map[string]string
	// MinDynamicPort..MaxDynamicPort is the node's dynamic port range
	// (0: Nomad's default 20000–32000); ReservedPorts are host ports the
	// node keeps for itself (Nomad's reserved.reserved_ports).
	MinDynamicPort int
	MaxDynamicPort int
	ReservedPorts  []int

	// NodeClass and NodePool are the node's class and pool ("default"
	// when the client names none), as its configuration says.
	NodeClass string
	NodePool  string

	Status                string
	StatusDescription     string
	SchedulingEligibility string
	// Drain is DrainStrategy != nil (Nomad's api still shows both).
	Drain           bool
	DrainStrategy   *DrainStrategy
	LastDrain       *DrainMetadata
	StatusUpdatedAt int64
	CreateIndex     uint64
	ModifyIndex     uint64

	// class caches ComputedClass: set when the node is written (nodes in
	// the store are never changed in place), so that a scheduler looking
	// at every node does not hash each one anew. Not stored or encoded.
	class string
}

// DriverInfo says whether a driver was found on the node and works.
type DriverInfo struct {
	Detected bool
	Healthy  bool
}

// Ready says whether the scheduler may place allocations on the node.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && n.SchedulingEligibility != NodeSchedulingIneligible
}

// HasDriver says whether the node can run tasks of the driver.
func (n *Node) HasDriver(name string) bool {
	d := n.Drivers[name]
	return d != nil && d.Detected && d.Healthy
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: nodesTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.UUIDFieldIndex{Field: "ID"}},
			// Nodes registered before node secrets existed have none.
			"secret": {Name: "secret", Unique: true, AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "SecretID"}},
		},
	}, func() any { return new(Node) })
}

// Node returns the node with that ID, or nil.
func (s *Store) Node(ws memdb.WatchSet, id string) (uint64, *Node, error) {
	return getOneOrWatchTable[Node](s, ws, nodesTable, id)
}

// NodeBySecret returns the node whose SecretID is secret, or nil.
func (s *Store) NodeBySecret(secret string) (*Node, error) {
	if secret == "" {
		return nil, nil
	}
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := txn.First(nodesTable, "secret", secret)
	if err != nil {
		return nil, fmt.Errorf("failed node lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Node), nil
}

// Nodes lists every node by ID.
func (s *Store) Nodes(ws memdb.WatchSet) (uint64, []*Node, error) {
	return getAll(s, ws, nodesTable, func(*Node) bool { return true })
}

// NodeRegister inserts or replaces a node at idx, keeping its CreateIndex;
// evals (when given) are inserted in the same transaction.
func (s *Store) NodeRegister(idx uint64, node *Node, evals []*Evaluation) error {
	txn := s.orchTxn()
	defer txn.Abort()
	stored := *node
	raw, err := txn.First(nodesTable, "id", node.ID)
	if err != nil {
		return fmt.Errorf("failed node lookup: %w", err)
	}
	if raw != nil {
		old := raw.(*Node)
		// A node's secret never changes once minted (two first
		// registrations racing: the second one loses).
		if old.SecretID != "" && old.SecretID != node.SecretID {
			return errorf(ErrForbidden, "node secret ID does not match")
		}
		stored.CreateIndex = old.CreateIndex
		// A drain is the operator's and the drainer's: re-registering
		// does not end it.
		stored.Drain, stored.DrainStrategy, stored.LastDrain = old.Drain, old.DrainStrategy, old.LastDrain
		if old.DrainStrategy != nil {
			stored.SchedulingEligibility = NodeSchedulingIneligible
		}
	} else {
		stored.CreateIndex = idx
	}
	if err := ensureNodePoolTxn(txn, idx, stored.NodePool); err != nil {
		return err
	}
	if err := putNodeTxn(txn, idx, &stored, evals); err != nil {
		return err
	}
	s.commitOrch(txn, idx)
	return nil
}

// putNodeTxn writes a node at idx, with the evaluations that go with the
// change.
func putNodeTxn(txn *memdb.Txn, idx uint64, n *Node, evals []*Evaluation) error {
	n.ModifyIndex = idx
	n.class = n.computeClass()
	if err := txn.Insert(nodesTable, n); err != nil {
		return fmt.Errorf("failed writing node: %w", err)
	}
	if err := setIndex(txn, nodesTable, idx); err != nil {
		return err
	}
	for _, e := range evals {
		if err := upsertEvalTxn(txn, idx, e); err != nil {
			return err
		}
	}
	return nil
}

// NodeUpdateStatus sets a node's status at idx and inserts evals (the
// node-update evaluations of the jobs on it) with it. What becomes of the
// node's allocations is the scheduler's decision (Nomad's), not this one's.
func (s *Store) NodeUpdateStatus(idx uint64, nodeID, status, description string, evals []*Evaluation, now int64) error {
	txn := s.orchTxn()
	defer txn.Abort()
	raw, err := txn.First(nodesTable, "id", nodeID)
	if err != nil {
		return fmt.Errorf("failed node lookup: %w", err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "node %s not found", nodeID)
	}
	n := *raw.(*Node)
	n.Status = status
	n.StatusDescription = description
	n.StatusUpdatedAt = now
	if err := putNodeTxn(txn, idx, &n, evals); err != nil {
		return err
	}
	s.commitOrch(txn, idx)
	return nil
}

// NodesIndexWatch is the nodes table's index; ws fires on its next write.
func (s *Store) NodesIndexWatch(ws memdb.WatchSet) (uint64, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	watchTableIndex(txn, ws, nodesTable)
	return maxIndex(txn, nodesTable), nil
}

// NodeCount is how many nodes are registered.
func (s *Store) NodeCount() (int, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(nodesTable, "id")
	if err != nil {
		return 0, fmt.Errorf("failed nodes list: %w", err)
	}
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n++
	}
	return n, nil
}
