package scheduler

import (
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// Disconnected clients (Nomad's texts).
const (
	allocUnknown           = "alloc is unknown since its node is disconnected"
	allocReconnected       = "alloc not needed due to disconnected client reconnect"
	descFollowupDisconnect = "created for delayed disconnect timeout"
)

// taint is what a node's status (and the allocation's own history) makes
// of an allocation that is still meant to run: Nomad's filterByTainted.
type taint int

const (
	taintNone taint = iota
	// taintLost: its node is down or gone, or disconnected without
	// MaxClientDisconnect, or it was unknown for longer than that.
	taintLost
	// taintDisconnecting: running on a disconnected node whose group has
	// MaxClientDisconnect: it becomes unknown now.
	taintDisconnecting
	// taintUnknown: unknown, within its MaxClientDisconnect.
	taintUnknown
	// taintReconnecting: unknown (or reported again) and its node is back.
	taintReconnecting
)

// maxDisconnect is the MaxClientDisconnect of the allocation's own job
// version's group (Nomad reads it from the allocation's job).
func (r *reconciler) maxDisconnect(a *state.Allocation) *time.Duration {
	job := r.job
	if a.JobVersion != r.job.Version {
		if j, err := r.version(a.JobVersion); err == nil && j != nil {
			job = j
		}
	}
	if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
		return tg.MaxClientDisconnect
	}
	return nil
}

// taintOf classifies an allocation desired to run whose client has not
// ended it (or that failed while its node was disconnected).
func (r *reconciler) taintOf(a *state.Allocation) taint {
	mcd := r.maxDisconnect(a)
	supports := mcd != nil
	reconnect, expired := false, false
	switch a.ClientStatus {
	case state.AllocClientStatusUnknown, state.AllocClientStatusRunning, state.AllocClientStatusFailed:
		if supports && a.NeedsToReconnect() {
			reconnect, expired = true, a.Expired(mcd, r.now)
		}
	}
	if reconnect && a.ClientStatus == state.AllocClientStatusFailed {
		return taintReconnecting
	}
	n := r.nodes[a.NodeID]
	if n != nil {
		switch n.Status {
		case state.NodeStatusDisconnected:
			switch {
			case !supports:
				return taintLost
			case a.ClientStatus == state.AllocClientStatusRunning:
				return taintDisconnecting
			case a.ClientStatus == state.AllocClientStatusPending:
				return taintLost
			}
		case state.NodeStatusReady:
			if reconnect {
				if expired {
					return taintLost
				}
				return taintReconnecting
			}
		}
	}
	if supports && a.Expired(mcd, r.now) {
		return taintLost
	}
	if supports && a.ClientStatus == state.AllocClientStatusUnknown {
		return taintUnknown
	}
	if n == nil || n.Status == state.NodeStatusDown || n.Status == state.NodeStatusDisconnected {
		return taintLost
	}
	return taintNone
}

// reconcileReconnecting decides, before anything else of the group, which
// of an allocation whose node came back and its replacements stays
// (Nomad's reconcileReconnecting): one that failed meanwhile is stopped;
// one of an older version, or to be moved or rescheduled, is stopped; else
// the original is kept (Nomad's tie-break: no replacement has a better
// score here, nor a newer version), its replacements are stopped and it is
// no longer linked to them. A kept allocation its client reports running
// again gets that recorded.
func (r *reconciler) reconcileReconnecting(allocs []*state.Allocation, canaryIDs map[string]bool) {
	for _, a := range allocs {
		if canaryIDs[a.ID] || r.stopped[a.ID] || a.DesiredStatus != state.AllocDesiredStatusRun {
			continue
		}
		if a.ClientStatus != state.AllocClientStatusFailed && a.ClientTerminalStatus() {
			continue
		}
		if r.taintOf(a) != taintReconnecting {
			continue
		}
		if a.ClientStatus == state.AllocClientStatusFailed {
			r.stop(a, allocRescheduled, state.AllocClientStatusFailed)
			continue
		}
		t := a.DesiredTransition
		if t.ShouldMigrate() || t.ShouldReschedule() || t.ShouldForceReschedule() || a.JobVersion < r.job.Version {
			r.stop(a, allocNotNeeded, "")
			continue
		}
		kept := true
		for _, o := range allocs {
			if o.ID == a.ID || o.Name != a.Name || o.CreateIndex <= a.CreateIndex || o.DesiredStatus != state.AllocDesiredStatusRun || r.stopped[o.ID] {
				continue
			}
			if o.JobVersion > a.JobVersion {
				// A replacement of a newer version wins.
				kept = false
				r.stop(a, allocNotNeeded, "")
				break
			}
			r.stop(o, allocReconnected, "")
		}
		if !kept {
			continue
		}
		cs := &state.AllocClientState{AllocID: a.ID, Reconnected: a.NextAllocation != ""}
		if a.ClientStatus == state.AllocClientStatusRunning {
			cs.ClientStatus, cs.ClientDescription = a.ClientStatus, a.ClientDescription
		}
		if cs.ClientStatus != "" || cs.Reconnected {
			r.res.plan.ClientStates = append(r.res.plan.ClientStates, cs)
		}
	}
}

// replaceDisconnected says whether an allocation that becomes unknown is
// replaced at once: when its reschedule policy still allows a reschedule
// (its delay is not waited for, as Nomad 1.6 does not for a disconnect).
func (r *reconciler) replaceDisconnected(a *state.Allocation) bool {
	return a.RescheduleEligible(r.policyOf(a), r.now)
}

// markDisconnected records the group's allocations that become unknown, each
// with a follow-up evaluation at now + its MaxClientDisconnect that marks it
// lost if its node is not back by then; timeouts within followupBatch of a
// batch's first share one evaluation (Nomad's createTimeoutLaterEvals).
func (r *reconciler) markDisconnected(disconnecting []*state.Allocation) {
	if len(disconnecting) == 0 {
		return
	}
	var ts []delayedReschedule
	for _, a := range disconnecting {
		if r.stopped[a.ID] {
			continue
		}
		if mcd := r.maxDisconnect(a); mcd != nil {
			ts = append(ts, delayedReschedule{alloc: a, at: r.now.Add(*mcd)})
		}
	}
	r.batchFollowups(ts, state.EvalTriggerMaxDisconnect, descFollowupDisconnect, func(t delayedReschedule, eval *state.Evaluation) {
		r.res.plan.ClientStates = append(r.res.plan.ClientStates, &state.AllocClientState{
			AllocID: t.alloc.ID, ClientStatus: state.AllocClientStatusUnknown, ClientDescription: allocUnknown,
			FollowupEvalID: eval.ID, Time: r.now.UnixNano(),
		})
	})
}

// replaced says whether an unknown allocation was replaced: it no longer
// counts toward the group, whatever became of its replacement since (that
// one is rescheduled, updated or lost in its own right). A replacement a
// reconnect stopped does not count: the original was kept then.
func replaced(a *state.Allocation, allocs []*state.Allocation) bool {
	if a.NextAllocation == "" {
		return false
	}
	for _, o := range allocs {
		if o.ID == a.NextAllocation {
			return o.DesiredDescription != allocReconnected
		}
	}
	return true
}

// dropStoppedClientStates leaves out the client-status records of
// allocations the plan also stops (e.g. a kept reconnecting one the group
// no longer counts): a plan may not do both to one allocation.
func (r *reconciler) dropStoppedClientStates() {
	kept := r.res.plan.ClientStates[:0]
	for _, cs := range r.res.plan.ClientStates {
		if !r.stopped[cs.AllocID] {
			kept = append(kept, cs)
		}
	}
	r.res.plan.ClientStates = kept
}
