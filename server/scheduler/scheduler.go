// Package scheduler is ctlplane's service-job scheduler, shaped like Nomad's:
// it reads one point-in-time state, reconciles one job's allocations with
// its latest version and its deployment, and submits the result as one plan.
// It is pure: everything it changes goes through the Planner.
package scheduler

import (
	"fmt"
	"maps"
	"time"

	"github.com/ctlplane/ctlplane/server/scheduler/usage"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// State is what the scheduler reads: one point-in-time state, read only.
// (*state.Store's point-in-time copies are one.)
type State interface {
	usage.Source
	Job(ws memdb.WatchSet, ns, id string) (uint64, *state.Job, error)
	JobVersion(ws memdb.WatchSet, ns, id string, version uint64) (uint64, *state.Job, error)
	AllocsByJob(ws memdb.WatchSet, ns, jobID string) (uint64, []*state.Allocation, error)
	// AllocsByNode: the ports taken on a node a group with ports looks at.
	AllocsByNode(ws memdb.WatchSet, nodeID string) (uint64, []*state.Allocation, error)
	// Allocs of every namespace (state.AllNamespaces): the per-node usage
	// without a UsageSource.
	Allocs(ws memdb.WatchSet, ns string) (uint64, []*state.Allocation, error)
	DeploymentsByJob(ws memdb.WatchSet, ns, jobID string) (uint64, []*state.Deployment, error)
	Nodes(ws memdb.WatchSet) (uint64, []*state.Node, error)
	EvalsByJob(ws memdb.WatchSet, ns, jobID string) (uint64, []*state.Evaluation, error)
	NodesIndex() uint64
}

// Planner is what the scheduler writes through (the leader's plan applier
// and evaluation writer, or a test harness).
type Planner interface {
	// SubmitPlan commits the plan through Raft (the leader sets plan.Now). When the state moved on
	// (result.Refused != ""), it also returns a fresh state to recompute from, read only as
	// every state the scheduler reads.
	SubmitPlan(plan *state.Plan) (*state.PlanResult, State, error)
	UpdateEval(eval *state.Evaluation) error // e.g. mark complete/failed
	CreateEval(eval *state.Evaluation) error // follow-ups, blocked evals
}

// EvalPlanner is an optional Planner capability: SubmitPlanEvals commits
// the plan and, only when it is applied, evals with it in one Raft entry
// (the evaluation's outcome), as SubmitPlan otherwise.
type EvalPlanner interface {
	SubmitPlanEvals(plan *state.Plan, evals []*state.Evaluation) (*state.PlanResult, State, error)
}

// UsageSource is an optional Planner capability: the resources the live
// allocations use on each node as of snap, kept up to date incrementally,
// so that an evaluation need not walk every allocation of the cluster.
// (The plan applier checks room again, so a view slightly ahead of snap
// costs at most a refused plan.)
type UsageSource interface {
	NodeUsage(snap usage.Source) (map[string]state.Resources, error)
}

// NodeListSource is an optional capability of a UsageSource: the node
// list as of snap, shared by the evaluations that read the same nodes
// index (usage.View's).
type NodeListSource interface {
	NodeList(snap usage.NodeSource) (*usage.NodeList, error)
}

// PlacementLimiter is an optional capability of a UsageSource: whether
// placements without affinities or spreads score only a few nodes of a
// shuffled order, as Nomad's service stack (limit.go), rather than every
// feasible node for the tightest fit.
type PlacementLimiter interface {
	LimitedPlacement() bool
}

// Scheduler processes one evaluation.
type Scheduler interface {
	Process(eval *state.Evaluation) error
}

// maxPlanAttempts is how often a refused (stale) plan is recomputed, as Nomad's.
const maxPlanAttempts = 5

// Evaluation descriptions (Nomad's texts).
const (
	descMaxAttempts       = "maximum attempts reached (5)"
	descBlockedPlacements = "created to place remaining allocations"
	descBlockedConflicts  = "created due to placement conflicts"
)

type serviceScheduler struct {
	logger  hclog.Logger
	snap    State
	planner Planner
	now     func() time.Time
}

// NewServiceScheduler returns a scheduler for service jobs that reads snap
// (a point-in-time store) and writes through planner.
func NewServiceScheduler(logger hclog.Logger, snap State, planner Planner, now func() time.Time) Scheduler {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &serviceScheduler{logger: logger.Named("scheduler"), snap: snap, planner: planner, now: now}
}

// Process computes and submits the evaluation's plan, recomputing from fresh
// state when the plan is refused as stale, then records the outcome on the
// evaluation (and a blocked evaluation for what could not be placed).
func (s *serviceScheduler) Process(eval *state.Evaluation) error {
	snap := s.snap
	usage, _ := s.planner.(UsageSource)
	for attempt := 1; ; attempt++ {
		res, err := compute(snap, eval, usage, s.now())
		if err != nil {
			return fmt.Errorf("evaluation %s: %w", eval.ID, err)
		}
		if res.plan.IsNoOp() {
			return s.complete(snap, eval, res)
		}
		var pr *state.PlanResult
		var fresh State
		if ep, ok := s.planner.(EvalPlanner); ok {
			// The outcome rides with the plan: applied together or not at all.
			writes, err := s.completion(snap, eval, res)
			if err != nil {
				return err
			}
			evals := make([]*state.Evaluation, len(writes))
			for i, w := range writes {
				evals[i] = w.eval
			}
			if pr, fresh, err = ep.SubmitPlanEvals(res.plan, evals); err != nil {
				return fmt.Errorf("evaluation %s: submitting plan: %w", eval.ID, err)
			}
			if pr.Refused == "" {
				return nil
			}
		} else {
			if pr, fresh, err = s.planner.SubmitPlan(res.plan); err != nil {
				return fmt.Errorf("evaluation %s: submitting plan: %w", eval.ID, err)
			}
			if pr.Refused == "" {
				return s.complete(snap, eval, res)
			}
		}
		s.logger.Debug("plan refused", "eval", eval.ID, "job", eval.JobID, "attempt", attempt, "reason", pr.Refused)
		if attempt == maxPlanAttempts {
			return s.failAttempts(snap, eval)
		}
		if fresh != nil {
			snap = fresh
		}
	}
}

// evalWrite is one evaluation an outcome writes: created (a new blocked
// evaluation) or updated.
type evalWrite struct {
	eval   *state.Evaluation
	create bool
}

// complete marks the evaluation complete with what it could not place, and
// leaves a blocked evaluation behind when something was short of nodes,
// resources or drivers (one per job: an existing one is reused).
func (s *serviceScheduler) complete(snap State, eval *state.Evaluation, res *result) error {
	writes, err := s.completion(snap, eval, res)
	if err != nil {
		return err
	}
	for _, w := range writes {
		if w.create {
			if err := s.planner.CreateEval(w.eval); err != nil {
				return fmt.Errorf("evaluation %s: creating blocked evaluation: %w", eval.ID, err)
			}
			continue
		}
		if err := s.planner.UpdateEval(w.eval); err != nil {
			if w.eval.ID != eval.ID {
				return fmt.Errorf("evaluation %s: updating blocked evaluation: %w", eval.ID, err)
			}
			return fmt.Errorf("evaluation %s: marking complete: %w", eval.ID, err)
		}
	}
	return nil
}

// completion is what complete writes, in order: the blocked evaluation
// (created or updated) when there is one to write, then the evaluation
// itself, complete.
func (s *serviceScheduler) completion(snap State, eval *state.Evaluation, res *result) ([]evalWrite, error) {
	e := *eval
	e.Status = state.EvalStatusComplete
	e.StatusDescription = ""
	e.QueuedAllocations = res.queued
	e.FailedTGAllocs = res.failed
	e.ModifyTime = s.now().UnixNano()
	if res.deploymentID != "" {
		e.DeploymentID = res.deploymentID
	}
	var writes []evalWrite
	if res.blocked {
		w, id, err := s.blockedEval(snap, eval, res)
		if err != nil {
			return nil, err
		}
		if w != nil {
			writes = append(writes, *w)
		}
		e.BlockedEval = id
	}
	return append(writes, evalWrite{eval: &e}), nil
}

// blockedEval returns the job's blocked evaluation's ID, and what to write
// of it: nothing when it is as it should be, an update when this run
// learnt otherwise of the node classes, a new one when there is none (the
// broker re-runs it when the nodes change).
func (s *serviceScheduler) blockedEval(snap State, eval *state.Evaluation, res *result) (*evalWrite, string, error) {
	_, evals, err := snap.EvalsByJob(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return nil, "", err
	}
	var elig map[string]bool
	escaped := false
	if res.placer != nil {
		elig, escaped = res.placer.classEligibility()
	}
	for _, o := range evals {
		if o.Status == state.EvalStatusBlocked && o.ID != eval.ID {
			// What this run learnt of the node classes replaces what the
			// blocked evaluation knew (the job may have changed).
			if res.placer != nil && (o.EscapedComputedClass != escaped || !maps.Equal(o.ClassEligibility, elig)) {
				u := *o
				u.ClassEligibility, u.EscapedComputedClass, u.ModifyTime = elig, escaped, s.now().UnixNano()
				return &evalWrite{eval: &u}, o.ID, nil
			}
			return nil, o.ID, nil
		}
	}
	b := s.followUp(snap, eval, state.EvalTriggerQueuedAllocs, descBlockedPlacements)
	b.QueuedAllocations = res.queued
	b.ClassEligibility, b.EscapedComputedClass = elig, escaped
	return &evalWrite{eval: b, create: true}, b.ID, nil
}

// failAttempts marks the evaluation failed after too many refused plans,
// with a blocked evaluation to try again when the cluster changes (Nomad's).
func (s *serviceScheduler) failAttempts(snap State, eval *state.Evaluation) error {
	b := s.followUp(snap, eval, state.EvalTriggerMaxPlans, descBlockedConflicts)
	if err := s.planner.CreateEval(b); err != nil {
		return fmt.Errorf("evaluation %s: creating blocked evaluation: %w", eval.ID, err)
	}
	e := *eval
	e.Status = state.EvalStatusFailed
	e.StatusDescription = descMaxAttempts
	e.BlockedEval = b.ID
	e.ModifyTime = s.now().UnixNano()
	if err := s.planner.UpdateEval(&e); err != nil {
		return fmt.Errorf("evaluation %s: marking failed: %w", eval.ID, err)
	}
	return nil
}

func (s *serviceScheduler) followUp(snap State, eval *state.Evaluation, trigger, desc string) *state.Evaluation {
	now := s.now().UnixNano()
	typ := eval.Type
	if typ == "" {
		typ = state.JobTypeService
	}
	return &state.Evaluation{
		ID:                uuid.NewString(),
		Namespace:         eval.Namespace,
		Priority:          eval.Priority,
		Type:              typ,
		TriggeredBy:       trigger,
		JobID:             eval.JobID,
		JobModifyIndex:    eval.JobModifyIndex,
		Status:            state.EvalStatusBlocked,
		StatusDescription: desc,
		PreviousEval:      eval.ID,
		SnapshotIndex:     snap.NodesIndex(),
		CreateTime:        now,
		ModifyTime:        now,
	}
}

// DryRun computes the plan the evaluation would make over snap and submits
// nothing (what Nomad's job plan shows): the plan's Annotations say, per
// group, what it would do, and queued what no node could take. view may
// be nil (the walk over every allocation); now is the time reschedule
// delays are counted to.
func DryRun(snap State, eval *state.Evaluation, view UsageSource, now time.Time) (plan *state.Plan, queued map[string]int, err error) {
	plan, queued, _, err = DryRunMetrics(snap, eval, view, now)
	return plan, queued, err
}

// DryRunMetrics is DryRun that also answers, per group that could not be
// placed in full, its failed placement's metric (Nomad's FailedTGAllocs).
func DryRunMetrics(snap State, eval *state.Evaluation, view UsageSource, now time.Time) (*state.Plan, map[string]int, map[string]*state.AllocMetric, error) {
	res, err := compute(snap, eval, view, now)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("evaluation %s: %w", eval.ID, err)
	}
	return res.plan, res.queued, res.failed, nil
}
