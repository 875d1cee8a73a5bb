package deployments

import (
	"context"
	"fmt"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// Watcher is the deployment watcher, a leader routine. For every active
// deployment it fails it on unhealthy allocations or a missed progress
// deadline (with the rollback rule), promotes auto-promoting canaries once
// they are healthy, and asks the scheduler to go on (an evaluation) when
// allocations become healthy. It follows the state through memdb watch
// sets; the only timers are for deadlines and for batching evaluations.
type Watcher struct {
	deps svc.Deps
	ops  *Service
	// At fires once the deps.Now clock reaches a time (progress deadlines,
	// evaluation batches); tests replace it with their fake clock's. It
	// takes a point in time, not a duration, so that the clock moving on
	// between the watcher reading it and arming the timer cannot push the
	// timer out.
	At func(time.Time) <-chan time.Time
	// EvalBatch is how long (of the deps.Now clock) the health reports of
	// one job are gathered into one evaluation (default PerJobEvalBatch).
	EvalBatch time.Duration
}

// PerJobEvalBatch is Nomad's perJobEvalBatchPeriod (its deployment
// watcher's createBatchedUpdate): a deployment whose allocations turn
// healthy gets at most one evaluation a second. A 1,000-allocation job
// reconciles all of them per evaluation; at 100 ms, 100 jobs placed at
// once made 580–720 such evaluations.
const PerJobEvalBatch = time.Second

// NewWatcher returns a watcher over deps; run it with Run while this node leads.
func NewWatcher(deps svc.Deps) *Watcher {
	if deps.Logger == nil {
		deps.Logger = hclog.NewNullLogger()
	}
	w := &Watcher{deps: deps, ops: New(deps), EvalBatch: PerJobEvalBatch}
	w.At = func(t time.Time) <-chan time.Time { return time.After(t.Sub(w.deps.Now())) }
	return w
}

// Rules of the watcher, as recorded in a deployment's history.
const (
	RuleUnhealthy   = "unhealthy-allocations"
	RuleDeadline    = "progress-deadline"
	RuleAutoPromote = "auto-promote"
	RuleHealthy     = "allocations-healthy"
)

// retryDelay is when a write that failed without the state changing (a
// lost Raft round, say) is tried again; a change wakes the watcher sooner.
const retryDelay = 5 * time.Second

func watcherCause(rule string) state.DeploymentCause {
	return state.DeploymentCause{Kind: "watcher", Rule: rule}
}

// Run watches until ctx is cancelled (leadership ended). It returns an
// error when it cannot list the deployments (it would have nothing to
// watch): the leader restarts it.
func (w *Watcher) Run(ctx context.Context) error {
	log := w.deps.Logger.Named("deployment_watcher")
	// Evaluations waiting for their batch to close, by deployment.
	pending := map[string]time.Time{}
	// Deployments whose progress deadline has passed (Nomad's deadlineHit).
	hit := map[string]bool{}
	// A deployment is checked again when it changed (every rule reads
	// what its allocations' reports count into it) or its next deadline
	// came, not on every change of any deployment: with thousands in
	// progress that was thousands of checks per write. Nor is every one in
	// progress listed per write: checked is the highest ModifyIndex
	// checked, and a pass reads only the deployments changed after it.
	var checked uint64
	deadlines := newDeadlines()
	var last *state.Store
	for {
		st := w.deps.State()
		if st != last {
			// A restored store: its indexes owe nothing to the old one's.
			last, checked = st, 0
			deadlines = newDeadlines()
			clear(hit)
		}
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		_, changed, err := st.DeploymentsChangedSince(ws, checked)
		if err != nil {
			return fmt.Errorf("listing deployments: %w", err)
		}
		now := w.deps.Now()
		for _, d := range changed {
			checked = max(checked, d.ModifyIndex)
			if !d.Active() {
				deadlines.drop(d.ID)
				delete(pending, d.ID)
				delete(hit, d.ID)
				continue
			}
			deadlines.set(d.ID, w.check(st, d, now, pending, hit, log))
		}
		for _, id := range deadlines.due(now) {
			_, d, err := st.Deployment(nil, id)
			if err != nil {
				return fmt.Errorf("reading deployment %s: %w", id, err)
			}
			if d == nil || !d.Active() {
				continue // deleted or finished since (a job purged, say)
			}
			deadlines.set(id, w.check(st, d, now, pending, hit, log))
		}
		deadline := deadlines.next()
		for id, at := range pending {
			if !now.Before(at) {
				delete(pending, id)
				if err := w.healthEval(st, id); err != nil {
					log.Warn("creating evaluation for healthy allocations", "deployment", id, "error", err)
					pending[id] = now.Add(retryDelay)
				}
			}
			if at := pending[id]; !at.IsZero() && (deadline.IsZero() || at.Before(deadline)) {
				deadline = at
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		wake := ws.WatchCh(wctx)
		var timer <-chan time.Time
		if !deadline.IsZero() {
			timer = w.At(deadline)
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-timer:
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
	}
}

type logger interface {
	Warn(msg string, args ...any)
}

// check applies the rules to one active deployment and returns when to
// check it again (zero: no deadline to wait for).
//
// Nomad's deadlineHit: once the progress deadline of a group that is not
// done has passed, even when that did not fail the deployment (paused, or
// canaries healthy and waiting for a manual promotion), any later failure
// of the deployment is described as a progress-deadline failure; Nomad's
// watcher never resets the flag.
func (w *Watcher) check(st *state.Store, d *state.Deployment, now time.Time, pending map[string]time.Time, hit map[string]bool, log logger) time.Time {
	if d.Status != state.DeploymentStatusRunning && d.Status != state.DeploymentStatusPaused {
		return time.Time{}
	}
	cutoff := progressCutoff(d)
	if !cutoff.IsZero() && !now.Before(cutoff) {
		hit[d.ID] = true
	}
	next := w.checkRules(st, d, now, pending, hit[d.ID], log)
	if !hit[d.ID] && !cutoff.IsZero() && (next.IsZero() || cutoff.Before(next)) {
		next = cutoff // to notice the deadline passing
	}
	return next
}

// progressCutoff is Nomad's getDeploymentProgressCutoff: the earliest
// progress deadline of the groups not done (canaries not promoted, or
// fewer healthy allocations than the group's total).
func progressCutoff(d *state.Deployment) time.Time {
	var cutoff time.Time
	for _, g := range d.TaskGroups {
		done := !(g.DesiredCanaries > 0 && !g.Promoted) && g.HealthyAllocs >= g.DesiredTotal
		if g.RequireProgressBy == nil || done {
			continue
		}
		if cutoff.IsZero() || g.RequireProgressBy.Before(cutoff) {
			cutoff = *g.RequireProgressBy
		}
	}
	return cutoff
}

// checkRules applies the rules to one running or paused deployment and
// returns its next progress deadline (zero: none to wait for). deadlineHit
// describes an unhealthy failure as a progress-deadline one (see check).
func (w *Watcher) checkRules(st *state.Store, d *state.Deployment, now time.Time, pending map[string]time.Time, deadlineHit bool, log logger) time.Time {
	// An unhealthy allocation fails the deployment at once in a group
	// without a progress deadline, or when its group's reschedule policy
	// has no attempt left for it (Nomad's shouldFailEarly); otherwise it
	// is marked for rescheduling and the deadline decides.
	unhealthy := map[string]bool{}
	progressBased := false
	for name, g := range d.TaskGroups {
		if g.UnhealthyAllocs == 0 {
			continue
		}
		if g.ProgressDeadline == 0 {
			unhealthy[name] = true
		} else {
			progressBased = true
		}
	}
	if len(unhealthy) == 0 && progressBased {
		marks, spent, err := w.sortUnhealthy(st, d, now)
		if err == nil && len(spent) == 0 {
			err = w.allowReplacements(st, d, marks)
		}
		if err != nil {
			log.Warn("marking unhealthy allocations for rescheduling", "deployment", d.ID, "error", err)
			return now.Add(retryDelay)
		}
		unhealthy = spent
	}
	if len(unhealthy) > 0 {
		desc := state.DeploymentStatusDescriptionFailedAllocations
		if deadlineHit {
			desc = state.DeploymentStatusDescriptionProgressDeadline
		}
		if err := w.fail(st, d, desc, unhealthy, RuleUnhealthy); err != nil {
			log.Warn("failing deployment on unhealthy allocations", "deployment", d.ID, "error", err)
			return now.Add(retryDelay)
		}
		return time.Time{}
	}
	if d.Status == state.DeploymentStatusPaused {
		return time.Time{}
	}
	// The progress deadline: the earliest of the groups still short of healthy.
	var deadline time.Time
	short := map[string]bool{}
	for name, g := range d.TaskGroups {
		if g.RequireProgressBy == nil || !groupShort(g) {
			continue
		}
		short[name] = true
		if deadline.IsZero() || g.RequireProgressBy.Before(deadline) {
			deadline = *g.RequireProgressBy
		}
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		if err := w.fail(st, d, state.DeploymentStatusDescriptionProgressDeadline, short, RuleDeadline); err != nil {
			log.Warn("failing deployment on its progress deadline", "deployment", d.ID, "error", err)
			return now.Add(retryDelay)
		}
		return time.Time{}
	}
	if w.canAutoPromote(st, d) {
		if _, err := w.ops.promote(st, d, true, nil, watcherCause(RuleAutoPromote)); err != nil {
			log.Warn("auto-promoting deployment", "deployment", d.ID, "error", err)
			if retry := now.Add(retryDelay); deadline.IsZero() || retry.Before(deadline) {
				return retry
			}
		}
		return deadline
	}
	if _, ok := pending[d.ID]; !ok {
		fresh, err := w.newlyHealthy(st, d)
		if err != nil {
			log.Warn("reading the allocations' health", "deployment", d.ID, "error", err)
			if retry := now.Add(retryDelay); deadline.IsZero() || retry.Before(deadline) {
				return retry
			}
		}
		if fresh {
			pending[d.ID] = now.Add(w.EvalBatch)
		}
	}
	return deadline
}

// sortUnhealthy goes through the unhealthy allocations of d's
// progress-based groups: spent are the groups with one that its reschedule
// policy (of the deployment's job version) allows no more attempts at now,
// marks the others not yet marked for rescheduling. As Nomad's
// handleAllocUpdate, every allocation of the deployment counts for spent,
// and only those still desired to run are marked.
func (w *Watcher) sortUnhealthy(st *state.Store, d *state.Deployment, now time.Time) (marks []string, spent map[string]bool, err error) {
	_, job, err := st.JobVersion(nil, d.Namespace, d.JobID, d.JobVersion)
	if err != nil {
		return nil, nil, err
	}
	_, allocs, err := st.AllocsByDeployment(nil, d.ID)
	if err != nil {
		return nil, nil, err
	}
	spent = map[string]bool{}
	for _, a := range allocs {
		g := d.TaskGroups[a.TaskGroup]
		if g == nil || g.ProgressDeadline == 0 || !a.DeploymentStatus.IsUnhealthy() {
			continue
		}
		// A job version collected since leaves the deadline to decide.
		if job != nil {
			if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil && !a.RescheduleEligible(tg.ReschedulePolicy, now) {
				spent[a.TaskGroup] = true
				continue
			}
		}
		if a.DesiredStatus == state.AllocDesiredStatusRun && !a.DesiredTransition.ShouldReschedule() {
			marks = append(marks, a.ID)
		}
	}
	return marks, spent, nil
}

// allowReplacements marks allocations of d for rescheduling
// (DesiredTransition.Reschedule), with an evaluation for the scheduler to
// act, in one Raft entry (Nomad's deployment watcher does the same with
// allowReplacements).
func (w *Watcher) allowReplacements(st *state.Store, d *state.Deployment, allocIDs []string) error {
	if len(allocIDs) == 0 {
		return nil
	}
	reschedule := true
	marks := make(map[string]state.DesiredTransition, len(allocIDs))
	for _, id := range allocIDs {
		marks[id] = state.DesiredTransition{Reschedule: &reschedule}
	}
	eval, err := newEval(st, d, w.deps.NowNanos())
	if err != nil {
		return err
	}
	_, err = fsm.Apply(w.deps.Raft, fsm.AllocDesiredTransition, &fsm.AllocDesiredTransitionRequest{Transitions: marks, Evals: []*state.Evaluation{eval}})
	return err
}

// groupShort says whether a group has fewer healthy allocations than it
// needs now: its canaries while they are not promoted, else its total.
func groupShort(g *state.DeploymentState) bool {
	if g.DesiredCanaries > 0 && !g.Promoted {
		return g.HealthyAllocs < g.DesiredCanaries
	}
	return g.HealthyAllocs < g.DesiredTotal
}

// fail fails the deployment with base and the rollback rule (AutoRevert of
// the failing groups, and "no stable job version" said when there is none).
func (w *Watcher) fail(st *state.Store, d *state.Deployment, base string, groups map[string]bool, rule string) error {
	desc, job, err := rollback(st, d, base, autoRevert(d, groups), true)
	if err != nil {
		return err
	}
	eval, err := newEval(st, d, w.deps.NowNanos())
	if err != nil {
		return err
	}
	_, err = w.ops.setStatus(d, state.DeploymentStatusFailed, desc, job, eval, watcherCause(rule))
	return err
}

// canAutoPromote: running, every group with canaries auto-promotes, some
// is not promoted yet, and each has placed its canaries and they are healthy.
func (w *Watcher) canAutoPromote(st *state.Store, d *state.Deployment) bool {
	if !d.HasAutoPromote() || !d.RequiresPromotion() {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && len(g.PlacedCanaries) < g.DesiredCanaries {
			return false
		}
	}
	return len(state.PromotionErrors(d, allocLookup(st), true, nil)) == 0
}

// newlyHealthy says whether an allocation of d became healthy after the
// job's latest evaluation was created, so the scheduler has not seen it.
// The evaluations first: the allocations' walk stops at the first such one.
func (w *Watcher) newlyHealthy(st *state.Store, d *state.Deployment) (bool, error) {
	_, evals, err := st.EvalsByJob(nil, d.Namespace, d.JobID)
	if err != nil {
		return false, err
	}
	var latest uint64
	for _, e := range evals {
		latest = max(latest, e.CreateIndex)
	}
	_, allocs, err := st.AllocsByDeployment(nil, d.ID)
	if err != nil {
		return false, err
	}
	for _, a := range allocs {
		if a.DeploymentStatus.IsHealthy() && a.DeploymentStatus.ModifyIndex > latest {
			return true, nil
		}
	}
	return false, nil
}

// healthEval writes the batched evaluation of a deployment whose
// allocations became healthy, if it still needs one.
func (w *Watcher) healthEval(st *state.Store, id string) error {
	_, d, err := st.Deployment(nil, id)
	if err != nil || d == nil || !d.Active() {
		return err
	}
	if fresh, err := w.newlyHealthy(st, d); err != nil || !fresh {
		return err
	}
	eval, err := newEval(st, d, w.deps.NowNanos())
	if err != nil {
		return err
	}
	_, err = fsm.Apply(w.deps.Raft, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: []*state.Evaluation{eval}})
	return err
}
