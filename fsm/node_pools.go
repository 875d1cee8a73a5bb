package fsm

import "github.com/ctlplane/ctlplane/state"

// Message types of Nomad's node pools (70–79 are theirs).
const (
	NodePoolUpsertType MessageType = 70
	NodePoolDeleteType MessageType = 71
)

// NodePoolUpsertRequest creates or replaces node pools.
type NodePoolUpsertRequest struct {
	NodePools []*state.NodePool
}

// NodePoolDeleteRequest deletes node pools, all or none. Region is named in
// the refusal of a pool still in use (Nomad lists regions).
type NodePoolDeleteRequest struct {
	Names  []string
	Region string
}

// The commands of node pools.
var (
	NodePoolUpsert = define(NodePoolUpsertType, "node pool upsert", func(s *state.Store, idx uint64, r *NodePoolUpsertRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.NodePoolUpsert(idx, r.NodePools)
	})
	NodePoolDelete = define(NodePoolDeleteType, "node pool delete", func(s *state.Store, idx uint64, r *NodePoolDeleteRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.NodePoolDelete(idx, r.Names, r.Region)
	})
)
