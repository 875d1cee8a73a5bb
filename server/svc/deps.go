// Package svc holds what every domain package below server/ (jobs,
// deployments, nodes, the scheduler's leader side) is built from: the
// current state store, the Raft log to write through, a clock and a logger.
// Domain packages never see Raft or HTTP types.
package svc

import (
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
)

// Deps are a domain package's dependencies.
type Deps struct {
	// State is the current state store (it is replaced by a snapshot restore).
	State func() *state.Store
	// Raft commits typed log entries: fsm.Apply(d.Raft, fsm.SomeCommand, req).
	Raft fsm.Applier
	// Now is the clock; tests pass a fake one.
	Now    func() time.Time
	Logger hclog.Logger
}

// NowNanos is the clock's time as Unix nanoseconds, the form stored in log entries.
func (d Deps) NowNanos() int64 { return d.Now().UnixNano() }

// RaftPeer is one server of the Raft configuration.
type RaftPeer struct {
	ID      string
	Address string
	Voter   bool
}
