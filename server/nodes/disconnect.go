package nodes

import (
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// heartbeatMissed writes the status of a node that missed its heartbeat:
// disconnected while one of its allocations may outlive the disconnect
// (its group has MaxClientDisconnect and it has not been unknown for that
// long), else down (Nomad's disconnectState). A change of status comes
// with a node-update evaluation for every job with a live allocation on
// the node, in the same Raft entry; the scheduler decides what becomes of
// them. It answers the node's status ("" when it is gone or already down).
func (s *Service) heartbeatMissed(nodeID string) (string, error) {
	store := s.deps.State()
	_, n, err := store.Node(nil, nodeID)
	if err != nil || n == nil || n.Status == state.NodeStatusDown {
		return "", err
	}
	status, err := s.missedStatus(store, n)
	if err != nil {
		return "", err
	}
	if status == n.Status {
		return status, nil
	}
	if status == state.NodeStatusDisconnected {
		s.deps.Logger.Warn("node missed its heartbeat, marking it disconnected", "node", nodeID, "name", n.Name)
	} else {
		s.deps.Logger.Warn("node missed its heartbeat, marking it down", "node", nodeID, "name", n.Name)
	}
	return status, s.setStatus(store, n, status, heartbeatMissed)
}

// missedStatus is disconnected or down, for a node that is neither.
func (s *Service) missedStatus(store *state.Store, n *state.Node) (string, error) {
	if n.Status == state.NodeStatusInit {
		return state.NodeStatusDown, nil
	}
	_, allocs, err := store.AllocsByNode(nil, n.ID)
	if err != nil {
		return "", err
	}
	now := s.deps.Now()
	groups := map[[3]any]*time.Duration{}
	for _, a := range allocs {
		k := [3]any{a.Namespace, a.JobID, a.JobVersion}
		mcd, ok := groups[k]
		if !ok {
			_, job, err := store.JobVersion(nil, a.Namespace, a.JobID, a.JobVersion)
			if err != nil {
				return "", err
			}
			if job != nil {
				if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
					mcd = tg.MaxClientDisconnect
				}
			}
			groups[k] = mcd
		}
		// (A zero MaxClientDisconnect allows no disconnect, as Nomad's
		// DisconnectTimeout.)
		if mcd != nil && *mcd > 0 && a.DesiredStatus == state.AllocDesiredStatusRun && !a.Expired(mcd, now) {
			return state.NodeStatusDisconnected, nil
		}
	}
	return state.NodeStatusDown, nil
}

// setStatus writes the node's new status, with a node-update evaluation
// for every job that has a live allocation on it when the change is one
// the scheduler must look at: to or from disconnected, to down, or back
// to ready from down (Nomad's nodeStatusTransitionRequiresEval).
func (s *Service) setStatus(store *state.Store, n *state.Node, status, description string) error {
	now := s.deps.Now()
	var evals []*state.Evaluation
	if needsEvals(n.Status, status) {
		_, allocs, err := store.AllocsByNode(nil, n.ID)
		if err != nil {
			return err
		}
		seen := map[[2]string]bool{}
		for _, a := range allocs {
			k := [2]string{a.Namespace, a.JobID}
			if a.ClientTerminalStatus() || seen[k] {
				continue
			}
			seen[k] = true
			_, job, err := store.Job(nil, a.Namespace, a.JobID)
			if err != nil {
				return err
			}
			if job != nil {
				evals = append(evals, newEval(job, state.EvalTriggerNodeUpdate, n.ID, now))
			}
		}
	}
	req := &fsm.NodeStatusRequest{NodeID: n.ID, Status: status, Description: description, Evals: evals, Now: now.UnixNano()}
	_, err := fsm.Apply(s.deps.Raft, fsm.NodeStatus, req)
	return err
}

func needsEvals(from, to string) bool {
	switch {
	case from == to:
		return false
	case to == state.NodeStatusDown, to == state.NodeStatusDisconnected, from == state.NodeStatusDisconnected:
		return true
	case to == state.NodeStatusReady:
		return from == state.NodeStatusDown || from == state.NodeStatusInit
	}
	return false
}

// markReady makes a node that heartbeats again ready (a no-op when it is).
func (s *Service) markReady(nodeID string) error {
	store := s.deps.State()
	_, n, err := store.Node(nil, nodeID)
	if err != nil || n == nil || n.Status == state.NodeStatusReady {
		return err
	}
	return s.setStatus(store, n, state.NodeStatusReady, "")
}

// evalTrigger is the trigger of the evaluation a client report causes, ""
// for none, as Nomad 1.6's Node.UpdateAlloc decides it: a report about an
// unknown allocation (its node is back) is a reconnect for the scheduler
// to reconcile; a newly failed allocation with no follow-up evaluation
// yet, whose group's reschedule policy (the job's current version) still
// allows a reschedule at now, is an alloc-failure. Nothing else (a
// completed allocation, a failure the policy does not reschedule) makes an
// evaluation.
func evalTrigger(a *state.Allocation, status string, tg *state.TaskGroup, now time.Time) string {
	switch {
	case a.ClientStatus == state.AllocClientStatusUnknown:
		return state.EvalTriggerReconnect
	case status == state.AllocClientStatusFailed && a.ClientStatus != state.AllocClientStatusFailed &&
		a.FollowupEvalID == "" && a.RescheduleEligible(tg.ReschedulePolicy, now):
		return state.EvalTriggerRetryFailedAlloc
	}
	return ""
}
