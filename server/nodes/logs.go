package nodes

import (
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// LogsTarget is the node a call goes to and the grant that lets the
// servers make it there (logs, files, stats, restart, signal).
type LogsTarget struct {
	AllocID  string
	NodeID   string
	NodeName string
	// HTTPAddr is the node's own API ("" when it registered none, or the
	// node is gone).
	HTTPAddr string
	Grant    string
	Expires  time.Time
}

// LogsGrant authorizes a caller to read one task stream of an allocation
// (node:read and read-logs in the allocation's namespace, as Nomad's
// logs endpoint) and mints a grant for that allocation, task and stream
// under the node's secret, valid api.GrantTTL to start the stream.
func (s *Service) LogsGrant(c Caller, allocID, task, stream string) (*LogsTarget, error) {
	return s.Grant(c, api.LogsGrantFor(allocID, task, stream))
}
