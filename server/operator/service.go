// Package operator is the domain side of the operator endpoints: Raft's
// configuration and peers, snapshots of the whole state, and the reads of
// the agent itself (its metrics and description). Each operation takes the
// acl.Caller and decides first, as the other services do.
package operator

import (
	"io"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
)

// Cluster is what the operations act on: the server's Raft and its
// snapshots.
type Cluster interface {
	// RaftConfiguration is the Raft configuration and the log index it is from.
	RaftConfiguration() ([]svc.RaftPeer, uint64, error)
	RemoveServer(id string) error
	// SnapshotSave writes a snapshot archive; SnapshotRestore restores one
	// onto the whole cluster.
	SnapshotSave(w io.Writer) error
	SnapshotRestore(r io.Reader) error
}

// Service runs the operator operations over a cluster.
type Service struct {
	cluster Cluster
}

// New returns the operator service over cluster.
func New(cluster Cluster) *Service { return &Service{cluster: cluster} }

// RaftReader is the Raft configuration, for a caller who may read it.
type RaftReader struct{ cluster Cluster }

// Raft refuses unless c holds operator:read, and then answers the reads
// of Raft's configuration. The refusal comes before the caller's read is
// checked for consistency (and before any wait), as before.
func (s *Service) Raft(c acl.Caller) (*RaftReader, error) {
	if err := c.RequireOperatorRead(); err != nil {
		return nil, err
	}
	return &RaftReader{cluster: s.cluster}, nil
}

// Configuration is the Raft configuration and the log index it is from.
func (r *RaftReader) Configuration() ([]svc.RaftPeer, uint64, error) {
	return r.cluster.RaftConfiguration()
}

// RemoveServer removes server id from Raft's configuration: operator:write,
// then an id is required.
func (s *Service) RemoveServer(c acl.Caller, id string) error {
	if err := c.RequireRaftWrite(); err != nil {
		return err
	}
	if id == "" {
		return state.NewError(state.ErrInvalid, "Must specify ?id with the ID of the server to remove")
	}
	return s.cluster.RemoveServer(id)
}

// Snapshots are the snapshot operations, for a management caller.
type Snapshots struct{ cluster Cluster }

// Snapshots refuses unless c is management, and then saves and restores
// snapshots (the refusal first: before the save's read is checked).
func (s *Service) Snapshots(c acl.Caller) (*Snapshots, error) {
	if err := c.RequireManagement(); err != nil {
		return nil, err
	}
	return &Snapshots{cluster: s.cluster}, nil
}

// Save writes a snapshot archive of the whole state to w.
func (s *Snapshots) Save(w io.Writer) error { return s.cluster.SnapshotSave(w) }

// Restore restores the archive r onto the whole cluster.
func (s *Snapshots) Restore(r io.Reader) error { return s.cluster.SnapshotRestore(r) }

// ReadAgent refuses unless c may read the agent itself, its metrics and
// its description: operator:read (ctlplane's policy language has no agent
// rule; Nomad asks agent:read).
func (s *Service) ReadAgent(c acl.Caller) error { return c.RequireOperatorRead() }
