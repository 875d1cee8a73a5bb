package scheduler

import (
	"sort"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// Nomad's reschedule constants (scheduler/reconcile.go, structs.go).
const (
	// rescheduleWindow: a failed allocation due this close is replaced now.
	rescheduleWindow = time.Second
	// followupBatch: failures due within this of each other share one
	// follow-up evaluation.
	followupBatch = 5 * time.Second
	// maxPastRescheduleEvents is how many events an unlimited policy's
	// tracker carries over.
	maxPastRescheduleEvents = 5
	descFollowupReschedule  = "created for delayed rescheduling"
)

// delayedReschedule is a failed allocation to replace at a later time.
type delayedReschedule struct {
	alloc *state.Allocation
	at    time.Time
}

// policyOf is the reschedule policy of the allocation's own job version
// (Nomad's Allocation.ReschedulePolicy), else the current version's.
func (r *reconciler) policyOf(a *state.Allocation) *state.ReschedulePolicy {
	job := r.job
	if a.JobVersion != r.job.Version {
		if j, err := r.version(a.JobVersion); err == nil && j != nil {
			job = j
		}
	}
	if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
		return tg.ReschedulePolicy
	}
	return nil
}

// reschedulable is Nomad's updateByReschedulable for a failed allocation
// that is still desired to run: replace it now, or later (at), or neither
// (it stays, failed, counting toward the group's Count).
func (r *reconciler) reschedulable(a *state.Allocation) (now, later bool, at time.Time) {
	// Inside an active deployment only what the deployment watcher marked.
	if d := r.deployment; d != nil && a.DeploymentID == d.ID && d.Active() && !a.DesiredTransition.ShouldReschedule() {
		return false, false, time.Time{}
	}
	if a.DesiredTransition.ShouldForceReschedule() {
		return true, false, r.now
	}
	at, eligible := nextRescheduleTime(a, r.policyOf(a))
	if eligible && (a.FollowupEvalID == r.eval.ID || at.Sub(r.now) <= rescheduleWindow) {
		return true, false, at
	}
	return false, eligible && a.FollowupEvalID == "", at
}

// nextRescheduleTime is when a failed allocation may be replaced, and
// whether its policy allows it at all (Nomad's Allocation.NextRescheduleTime).
func nextRescheduleTime(a *state.Allocation, p *state.ReschedulePolicy) (time.Time, bool) {
	failTime := a.LastEventTime()
	if p == nil || a.DesiredStatus == state.AllocDesiredStatusStop || a.ClientStatus != state.AllocClientStatusFailed || failTime.IsZero() {
		return time.Time{}, false
	}
	delay := nextDelay(a, p)
	eligible := p.Unlimited || (p.Attempts > 0 && a.RescheduleTracker == nil)
	if p.Attempts > 0 && a.RescheduleTracker != nil {
		eligible = a.RescheduleTracker.AttemptsWithin(p, failTime) < p.Attempts && delay < p.Interval
	}
	return failTime.Add(delay), eligible
}

// nextDelay is the delay before the allocation's replacement, grown from
// its tracker's last by the policy's function and capped (Nomad's NextDelay).
func nextDelay(a *state.Allocation, p *state.ReschedulePolicy) time.Duration {
	if p == nil {
		return 0
	}
	delay := p.Delay
	if a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return delay
	}
	events := a.RescheduleTracker.Events
	last := events[len(events)-1]
	switch p.DelayFunction {
	case "exponential":
		delay = last.Delay * 2
	case "fibonacci":
		if len(events) >= 2 {
			n1, n2 := last.Delay, events[len(events)-2].Delay
			if n2 == p.MaxDelay && n1 == p.Delay {
				// The ceiling was reset: a new series starts.
				delay = n1
			} else {
				delay = n1 + n2
			}
		}
	default:
		return delay
	}
	if p.MaxDelay > 0 && delay > p.MaxDelay {
		delay = p.MaxDelay
		// A failure long after the last reschedule starts over.
		if a.LastEventTime().UnixNano()-last.RescheduleTime > delay.Nanoseconds() {
			delay = p.Delay
		}
	}
	return delay
}

// rescheduleTracker is the tracker of prev's replacement: prev's recent
// events and one for this reschedule (Nomad's updateRescheduleTracker).
func rescheduleTracker(prev *state.Allocation, p *state.ReschedulePolicy, now time.Time) *state.RescheduleTracker {
	var events []*state.RescheduleEvent
	if old := prev.RescheduleTracker; old != nil && p != nil {
		if p.Attempts > 0 {
			for _, e := range old.Events {
				if p.Interval > 0 && now.UnixNano()-e.RescheduleTime <= p.Interval.Nanoseconds() {
					c := *e
					events = append(events, &c)
				}
			}
		} else {
			for _, e := range old.Events[max(0, len(old.Events)-maxPastRescheduleEvents):] {
				c := *e
				events = append(events, &c)
			}
		}
	}
	events = append(events, &state.RescheduleEvent{
		RescheduleTime: now.UnixNano(), PrevAllocID: prev.ID, PrevNodeID: prev.NodeID, Delay: nextDelay(prev, p),
	})
	return &state.RescheduleTracker{Events: events}
}

// penaltyNodes are the nodes a replacement should avoid: where its
// predecessor failed and where the ones before it ran (Nomad's).
func penaltyNodes(prev *state.Allocation) map[string]bool {
	out := map[string]bool{}
	if prev.ClientStatus == state.AllocClientStatusFailed {
		out[prev.NodeID] = true
	}
	if prev.RescheduleTracker != nil {
		for _, e := range prev.RescheduleTracker.Events {
			out[e.PrevNodeID] = true
		}
	}
	return out
}

// createFollowups writes the follow-up evaluations of the failed
// allocations to replace later and links each allocation to its evaluation
// (Nomad's createRescheduleLaterEvals).
func (r *reconciler) createFollowups(later []delayedReschedule) {
	r.batchFollowups(later, state.EvalTriggerRetryFailedAlloc, descFollowupReschedule, func(l delayedReschedule, eval *state.Evaluation) {
		r.res.plan.Followups = append(r.res.plan.Followups, &state.AllocFollowup{AllocID: l.alloc.ID, FollowupEvalID: eval.ID})
	})
}

// batchFollowups writes follow-up evaluations for allocations to act on
// later: one per batch of those due within followupBatch of the batch's
// first, each waiting until then (Nomad's createLostLaterEvals); link gets
// each allocation with its evaluation.
func (r *reconciler) batchFollowups(items []delayedReschedule, trigger, desc string, link func(delayedReschedule, *state.Evaluation)) {
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	var eval *state.Evaluation
	for _, l := range items {
		if eval == nil || l.at.Sub(time.Unix(0, eval.WaitUntil)) >= followupBatch {
			typ := r.eval.Type
			if typ == "" {
				typ = state.JobTypeService
			}
			eval = &state.Evaluation{
				ID:                uuid.NewString(),
				Namespace:         r.job.Namespace,
				Priority:          r.eval.Priority,
				Type:              typ,
				TriggeredBy:       trigger,
				JobID:             r.job.ID,
				JobModifyIndex:    r.job.ModifyIndex, // Nomad's (not JobModifyIndex)
				Status:            state.EvalStatusPending,
				StatusDescription: desc,
				WaitUntil:         l.at.UnixNano(),
				PreviousEval:      r.eval.ID,
			}
			r.res.plan.FollowupEvals = append(r.res.plan.FollowupEvals, eval)
		}
		link(l, eval)
	}
}
