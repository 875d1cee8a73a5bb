package nodes

import (
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// UpdateDrain starts, updates or (spec nil) cancels a node's drain, as
// Nomad's Node.UpdateDrain: the caller needs node:write; a drain makes the
// node ineligible, its deadline counts from now (negative: at once, 0:
// none) and an ongoing drain keeps its start; cancelling with
// markEligible makes the node eligible again, with node-update
// evaluations of the jobs on it. One Raft entry.
func (s *Service) UpdateDrain(caller acl.Caller, nodeID string, spec *state.DrainSpec, markEligible bool, meta map[string]string) (*state.NodeDrainResult, error) {
	if err := caller.RequireNodeWrite(); err != nil {
		return nil, err
	}
	_, node, err := s.deps.State().Node(nil, nodeID)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, &state.Error{Code: state.ErrNotFound, Msg: "node not found"}
	}
	now := s.deps.Now().UTC()
	u := &state.NodeDrainUpdate{NodeID: nodeID, MarkEligible: markEligible, Meta: meta, AccessorID: caller.AccessorID, UpdatedAt: now.UnixNano()}
	if spec != nil {
		d := &state.DrainStrategy{DrainSpec: *spec, StartedAt: now}
		if node.DrainStrategy != nil {
			d.StartedAt = node.DrainStrategy.StartedAt
		}
		if spec.Deadline > 0 {
			d.ForceDeadline = now.Add(spec.Deadline)
		}
		u.DrainStrategy = d
	}
	if spec == nil && markEligible && node.SchedulingEligibility == state.NodeSchedulingIneligible {
		if u.Evals, err = s.nodeEvals(nodeID); err != nil {
			return nil, err
		}
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.NodeUpdateDrain, u)
	if err != nil {
		return nil, err
	}
	return drainResult(res.Index, u.Evals), nil
}

// UpdateEligibility sets a node's scheduling eligibility, as Nomad's
// Node.UpdateEligibility: node:write; a draining node cannot be made
// eligible; no change writes nothing; becoming eligible evaluates the jobs
// on the node.
func (s *Service) UpdateEligibility(caller acl.Caller, nodeID, eligibility string) (*state.NodeDrainResult, error) {
	if err := caller.RequireNodeWrite(); err != nil {
		return nil, err
	}
	switch eligibility {
	case state.NodeSchedulingEligible, state.NodeSchedulingIneligible:
	default:
		return nil, invalid("invalid scheduling eligibility %q", eligibility)
	}
	_, node, err := s.deps.State().Node(nil, nodeID)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, &state.Error{Code: state.ErrNotFound, Msg: "node not found"}
	}
	if node.DrainStrategy != nil && eligibility == state.NodeSchedulingEligible {
		return nil, invalid("can not set node's scheduling eligibility to eligible while it is draining")
	}
	if node.SchedulingEligibility == eligibility {
		return &state.NodeDrainResult{Index: node.ModifyIndex}, nil
	}
	req := &fsm.NodeUpdateEligibilityRequest{NodeID: nodeID, Eligibility: eligibility}
	if eligibility == state.NodeSchedulingEligible {
		if req.Evals, err = s.nodeEvals(nodeID); err != nil {
			return nil, err
		}
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.NodeUpdateEligibility, req)
	if err != nil {
		return nil, err
	}
	return drainResult(res.Index, req.Evals), nil
}

func drainResult(index uint64, evals []*state.Evaluation) *state.NodeDrainResult {
	r := &state.NodeDrainResult{NodeModifyIndex: index, Index: index}
	for _, e := range evals {
		r.EvalIDs = append(r.EvalIDs, e.ID)
	}
	if len(evals) > 0 {
		r.EvalCreateIndex = index
	}
	return r
}

// nodeEvals are node-update evaluations of the jobs with allocations on
// the node (Nomad's createNodeEvals, for the service jobs served here).
func (s *Service) nodeEvals(nodeID string) ([]*state.Evaluation, error) {
	store := s.deps.State()
	_, allocs, err := store.AllocsByNode(nil, nodeID)
	if err != nil {
		return nil, err
	}
	now := s.deps.Now()
	seen := map[[2]string]bool{}
	var evals []*state.Evaluation
	for _, a := range allocs {
		k := [2]string{a.Namespace, a.JobID}
		if seen[k] {
			continue
		}
		seen[k] = true
		_, job, err := store.Job(nil, a.Namespace, a.JobID)
		if err != nil {
			return nil, err
		}
		if job == nil || job.Stop {
			continue
		}
		evals = append(evals, newEval(job, state.EvalTriggerNodeUpdate, nodeID, now))
	}
	return evals, nil
}
