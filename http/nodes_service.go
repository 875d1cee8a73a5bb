package http

import (
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// NodeService is what the nodes endpoints and the client protocol call
// (implemented by server/nodes).
type NodeService interface {
	// Register registers or re-registers a node and makes it ready; it
	// answers the node's ID, the heartbeat TTL and the write's index.
	Register(node *state.Node) (nodeID string, ttl time.Duration, index uint64, err error)
	// Heartbeat keeps a node alive (a down node becomes ready again).
	Heartbeat(nodeID string) (ttl time.Duration, index uint64, err error)
	// UpdateAllocs applies a batch of the node's allocation reports.
	UpdateAllocs(nodeID string, updates []*state.AllocClientUpdate) (index uint64, err error)
	// AllocsForNode lists the node's allocations with their task groups.
	AllocsForNode(ws memdb.WatchSet, nodeID string) (index uint64, allocs []*state.ClientAlloc, err error)
	// AllocsIndexForNode is AllocsForNode's index alone (cheap: what a
	// node's blocking read waits on).
	AllocsIndexForNode(ws memdb.WatchSet, nodeID string) (uint64, error)
}
