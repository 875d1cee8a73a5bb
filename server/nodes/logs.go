package nodes

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// LogsTarget is where an allocation's task logs are read and the grant
// that lets the servers read them there.
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

var errLogsDenied = forbidden("Permission denied")

// LogsGrant authorizes a caller to read one task stream of an allocation
// (node:read and read-logs in the allocation's namespace, as Nomad's
// logs endpoint) and mints a grant for that allocation, task and stream
// under the node's secret, valid api.LogsGrantTTL to start the stream.
func (s *Service) LogsGrant(c Caller, allocID, task, stream string) (*LogsTarget, error) {
	if c.ACL == nil || !c.ACL.NodeRead() {
		return nil, errLogsDenied
	}
	if !uuidRE.MatchString(allocID) {
		return nil, invalid("Invalid allocation ID %q: a 36-character UUID is required", allocID)
	}
	allocID = strings.ToLower(allocID)
	if task == "" {
		return nil, invalid("must include task name: ?task=NAME")
	}
	if strings.ContainsAny(task, "/\\\x00") || task == "." || task == ".." || len(task) > 128 {
		return nil, invalid("invalid task name %q", task)
	}
	if stream != "stdout" && stream != "stderr" {
		return nil, invalid("invalid log type %q: must be stdout or stderr", stream)
	}
	store := s.deps.State()
	_, a, err := store.Alloc(nil, allocID)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, &state.Error{Code: state.ErrNotFound, Msg: fmt.Sprintf("Unknown allocation %q", allocID)}
	}
	if !c.ACL.NamespaceCapability(a.Namespace, acl.CapReadLogs) {
		return nil, errLogsDenied
	}
	t := &LogsTarget{AllocID: allocID, NodeID: a.NodeID}
	_, n, err := store.Node(nil, a.NodeID)
	if err != nil {
		return nil, err
	}
	if n == nil || n.SecretID == "" {
		// Gone, or registered before node secrets: it could not verify a grant.
		return t, nil
	}
	t.NodeName, t.HTTPAddr = n.Name, n.HTTPAddr
	// Wall-clock time, not deps.Now (a test's clock): the node checks
	// the expiry against its own clock.
	t.Expires = time.Now().Add(api.LogsGrantTTL)
	t.Grant = api.SignLogsGrant(n.SecretID, allocID, task, stream, t.Expires)
	return t, nil
}
