package nodes

import (
	"encoding/json"
	"fmt"

	"github.com/ctlplane/ctlplane/state"
)

// Registration caps (README, caps table).
const (
	// DefaultMaxNodes is Config.MaxNodes' default: ten times the largest
	// simulated cluster measured (README, Orchestrator scale).
	DefaultMaxNodes = 10000
	// MaxNodeRecordSize caps a node's record as JSON: a real node's is a
	// few KiB, and every server keeps every node in memory.
	MaxNodeRecordSize = 64 << 10
)

// validNode checks a registration's fields (n is the service's copy; a
// missing datacenter becomes dc1).
func (s *Service) validNode(n *state.Node) error {
	if n.Name == "" {
		return invalid("Node Name is required")
	}
	if !nameRE.MatchString(n.Name) {
		return invalid("Node Name %q is invalid: letters, digits, '.', '_' and '-', at most 128 characters", n.Name)
	}
	if n.Datacenter == "" {
		n.Datacenter = "dc1"
	}
	if !nameRE.MatchString(n.Datacenter) {
		return invalid("Node Datacenter %q is invalid: letters, digits, '.', '_' and '-', at most 128 characters", n.Datacenter)
	}
	if n.ID != "" && !uuidRE.MatchString(n.ID) {
		return invalid("Node ID %q is invalid: a 36-character UUID is required", n.ID)
	}
	// 0 would read as unlimited to nobody and as full to the scheduler.
	if n.Resources.CPU <= 0 {
		return invalid("Node Resources.CPU must be greater than 0 (MHz), got %d", n.Resources.CPU)
	}
	if n.Resources.MemoryMB <= 0 {
		return invalid("Node Resources.MemoryMB must be greater than 0, got %d", n.Resources.MemoryMB)
	}
	if n.HTTPAddr != "" {
		// The logs proxy refuses to dial them anyway (http/client_fs.go);
		// refused here too, the mistake is seen at once.
		_, servers, err := s.deps.State().Servers(nil)
		if err != nil {
			return err
		}
		for _, srv := range servers {
			if n.HTTPAddr == srv.HTTPAddr || n.HTTPAddr == srv.RaftAddr {
				return invalid("Node HTTPAddr %q is the address of server %s: a node must register its own", n.HTTPAddr, srv.Name)
			}
		}
	}
	buf, err := json.Marshal(n)
	if err != nil {
		return invalid("Node cannot be encoded: %v", err)
	}
	if len(buf) > MaxNodeRecordSize {
		return invalid("Node is %d bytes as JSON: the limit is %d (Attributes, Meta, Drivers)", len(buf), MaxNodeRecordSize)
	}
	return nil
}

// checkNodeCount refuses a new node when the cluster has MaxNodes.
func (s *Service) checkNodeCount(store *state.Store) error {
	n, err := store.NodeCount()
	if err != nil {
		return err
	}
	if n >= s.maxNodes {
		return invalid("Too many nodes: %d are registered, the limit is %d (server -max-nodes); remove down nodes (system gc) or raise it", n, s.maxNodes)
	}
	return nil
}

// checkOwnReports refuses a report that names an allocation placed on
// another node, and client-reported health of a group whose health is set
// by hand (health_check = "manual"), as the allocation-health endpoint's
// rule read the other way round. It answers the allocations reported on,
// as stored (nil: gone).
func checkOwnReports(store *state.Store, nodeID string, updates []*state.AllocClientUpdate) ([]*state.Allocation, error) {
	allocs := make([]*state.Allocation, len(updates))
	for i, u := range updates {
		_, a, err := store.Alloc(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue // gone (collected): dropped
		}
		if a.NodeID != nodeID {
			return nil, forbidden("Permission denied: allocation %s is not placed on node %s; the report was refused as a whole", u.ID, nodeID)
		}
		allocs[i] = a
		if u.DeploymentStatus == nil || u.DeploymentStatus.Healthy == nil {
			continue
		}
		_, job, err := store.JobVersion(nil, a.Namespace, a.JobID, a.JobVersion)
		if err != nil {
			return nil, err
		}
		if hc := healthCheck(job, a.TaskGroup); hc == state.UpdateHealthManual {
			return nil, &state.Error{Code: state.ErrConflict, Msg: fmt.Sprintf(
				"Task group %q of alloc %q uses health_check = %q: allocation health can only be set by hand (deployment allocation-health), not reported by its client",
				a.TaskGroup, a.ID, hc)}
		}
	}
	return allocs, nil
}

// healthCheck is the group's health_check (its update block's, else the
// job's), as the deployments service reads it.
func healthCheck(job *state.Job, group string) string {
	if job == nil {
		return ""
	}
	u := job.Update
	if tg := job.LookupTaskGroup(group); tg != nil && tg.Update != nil {
		u = tg.Update
	}
	if u == nil {
		return ""
	}
	return u.HealthCheck
}
