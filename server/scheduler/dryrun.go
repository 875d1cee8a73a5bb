package scheduler

import (
	"fmt"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// DryRunOutcome is what an evaluation would do over a state, submitting
// nothing (Nomad's job plan).
type DryRunOutcome struct {
	Plan   *state.Plan
	Queued map[string]int
	// Failed is, per group not placed in full, its failed placement's metric.
	Failed map[string]*state.AllocMetric
	// CreatedEvals are the evaluations the run would create, as Nomad's
	// plan answers them: the follow-ups of delayed reschedules when there
	// are any, else a blocked evaluation when something could not be
	// placed (Nomad's GenericScheduler.process). None is written.
	CreatedEvals []*state.Evaluation
}

// DryRunEvals is DryRunMetrics that also answers the evaluations the run
// would create.
func DryRunEvals(snap State, eval *state.Evaluation, view UsageSource, now time.Time) (*DryRunOutcome, error) {
	res, err := compute(snap, eval, view, now)
	if err != nil {
		return nil, fmt.Errorf("evaluation %s: %w", eval.ID, err)
	}
	out := &DryRunOutcome{Plan: res.plan, Queued: res.queued, Failed: res.failed}
	// Nomad delays instead of blocking when a reschedule is delayed and
	// the evaluation itself is not a delayed one.
	if len(res.plan.FollowupEvals) > 0 && eval.WaitUntil == 0 {
		out.CreatedEvals = append(out.CreatedEvals, res.plan.FollowupEvals...)
	} else if len(res.failed) > 0 && eval.Status != state.EvalStatusBlocked {
		out.CreatedEvals = append(out.CreatedEvals, planBlockedEval(eval, res, now))
	}
	return out, nil
}

// planBlockedEval is the blocked evaluation Nomad's createBlockedEval
// makes (Evaluation.CreateBlockedEval): the classes' eligibility only when
// the job did not escape them, and the failed groups' metrics.
func planBlockedEval(eval *state.Evaluation, res *result, now time.Time) *state.Evaluation {
	var elig map[string]bool
	escaped := false
	if res.placer != nil {
		elig, escaped = res.placer.classEligibility()
		if escaped {
			elig = nil
		}
	}
	typ := eval.Type
	if typ == "" {
		typ = state.JobTypeService
	}
	at := now.UnixNano()
	return &state.Evaluation{
		ID:                   uuid.NewString(),
		Namespace:            eval.Namespace,
		Priority:             eval.Priority,
		Type:                 typ,
		TriggeredBy:          state.EvalTriggerQueuedAllocs,
		JobID:                eval.JobID,
		JobModifyIndex:       eval.JobModifyIndex,
		Status:               state.EvalStatusBlocked,
		StatusDescription:    descBlockedPlacements,
		PreviousEval:         eval.ID,
		FailedTGAllocs:       res.failed,
		ClassEligibility:     elig,
		EscapedComputedClass: escaped,
		CreateTime:           at,
		ModifyTime:           at,
	}
}
