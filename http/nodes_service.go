package http

import (
	"github.com/ctlplane/ctlplane/api"
	"time"

	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// NodeService is what the nodes endpoints, the client protocol and the
// logs proxy call (implemented by server/nodes). Each call takes the
// caller as resolved here and checks it itself.
type NodeService interface {
	// Register registers or re-registers a node and makes it ready; it
	// answers the node's ID, its secret (once, when minted), the
	// heartbeat TTL and the write's index.
	Register(c nodes.Caller, node *state.Node) (*nodes.Registration, error)
	// Heartbeat keeps the caller's node alive (a down node becomes ready again).
	Heartbeat(c nodes.Caller, nodeID string) (ttl time.Duration, index uint64, err error)
	// UpdateAllocs applies a batch of the caller's node's allocation reports.
	UpdateAllocs(c nodes.Caller, nodeID string, updates []*state.AllocClientUpdate) (index uint64, err error)
	// AllocChangesForNode reads what changed in the caller's node's list
	// of allocations (with their task groups) after index since (0: all).
	AllocChangesForNode(c nodes.Caller, nodeID string, since uint64) (*state.ClientAllocChanges, error)
	// AllocsIndexForNode is AllocChangesForNode's index alone (kept from
	// the commits: what a node's blocking read waits on).
	AllocsIndexForNode(c nodes.Caller, ws memdb.WatchSet, nodeID string) (uint64, error)
	// Grant authorizes one operation on a node's API (logs, files, stats,
	// restart, signal) and mints the grant its node checks.
	Grant(c nodes.Caller, g api.Grant) (*nodes.LogsTarget, error)
}
