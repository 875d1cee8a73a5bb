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
	// AllocsForNode lists the caller's node's allocations with their task
	// groups; those not changed after since come bare (they become stubs).
	AllocsForNode(c nodes.Caller, ws memdb.WatchSet, nodeID string, since uint64) (index uint64, allocs []*state.ClientAlloc, err error)
	// AllocsIndexForNode is AllocsForNode's index alone (cheap: what a
	// node's blocking read waits on).
	AllocsIndexForNode(c nodes.Caller, ws memdb.WatchSet, nodeID string) (uint64, error)
	// LogsGrant authorizes reading a task stream of an allocation and
	// mints the grant its node checks.
	LogsGrant(c nodes.Caller, allocID, task, stream string) (*nodes.LogsTarget, error)
	// Grant authorizes one operation on a node's API (files, stats,
	// restart, signal) and mints the grant its node checks.
	Grant(c nodes.Caller, g api.Grant) (*nodes.LogsTarget, error)
}
