package fsm

import "github.com/ctlplane/ctlplane/state"

// Message types of node drain and eligibility (numbered apart, see
// AllocDesiredTransitionType).
const (
	NodeUpdateDrainType       MessageType = 41
	NodeUpdateEligibilityType MessageType = 42
	NodesDrainCompleteType    MessageType = 43
)

// NodeUpdateEligibilityRequest sets a node's scheduling eligibility, with
// the evaluations that go with it.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	Evals       []*state.Evaluation
}

// NodesDrainCompleteRequest ends the drains of nodes (the drainer's write).
type NodesDrainCompleteRequest struct {
	NodeIDs   []string
	UpdatedAt int64
}

// The drain commands.
var (
	NodeUpdateDrain = define(NodeUpdateDrainType, "node update drain", func(s *state.Store, idx uint64, r *state.NodeDrainUpdate) (Indexed, error) {
		return Indexed{Index: idx}, s.NodeUpdateDrain(idx, r)
	})
	NodeUpdateEligibility = define(NodeUpdateEligibilityType, "node update eligibility", func(s *state.Store, idx uint64, r *NodeUpdateEligibilityRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.NodeUpdateEligibility(idx, r.NodeID, r.Eligibility, r.Evals)
	})
	NodesDrainComplete = define(NodesDrainCompleteType, "nodes drain complete", func(s *state.Store, idx uint64, r *NodesDrainCompleteRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.NodesDrainComplete(idx, r.NodeIDs, r.UpdatedAt)
	})
)
