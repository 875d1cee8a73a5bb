// Package evals runs evaluations on the leader: a broker that hands every
// pending evaluation to a scheduler worker (at most one in flight per job),
// and the planner through which schedulers commit their plans to Raft.
package evals

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/groupcommit"
	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/server/scheduler/usage"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// Scheduler processes one evaluation (server/scheduler's service scheduler).
type Scheduler interface {
	Process(eval *state.Evaluation) error
}

// Planner is what a scheduler commits its decisions through.
type Planner interface {
	SubmitPlan(plan *state.Plan) (*state.PlanResult, scheduler.State, error)
	UpdateEval(eval *state.Evaluation) error
	CreateEval(eval *state.Evaluation) error
}

// Factory makes a scheduler for one evaluation over a point-in-time state.
type Factory func(logger hclog.Logger, snap *state.Store, planner Planner, now func() time.Time) Scheduler

// maxAttempts is how often an evaluation whose processing fails is tried
// before it is marked failed.
const maxAttempts = 3

// Broker is the leader routine that runs evaluations.
type Broker struct {
	deps    svc.Deps
	factory Factory
	workers int
	logger  hclog.Logger

	usage usage.View
	// batcher writes the workers' evaluation updates, many per Raft entry.
	batcher *groupcommit.Committer[*state.Evaluation, struct{}]
	// limited: placements as Nomad's limited stack (scheduler/limit.go).
	limited bool

	processed atomic.Uint64
	failed    atomic.Uint64
	plans     atomic.Uint64
	refused   atomic.Uint64
}

// Option tunes a broker.
type Option func(*Broker)

// LimitedPlacement makes the schedulers place as Nomad's service stack
// does: a few nodes of a shuffled order scored per placement, not every
// feasible node (server -limited-placement).
func LimitedPlacement(on bool) Option { return func(b *Broker) { b.limited = on } }

// New returns a broker running evaluations on workers goroutines.
func New(deps svc.Deps, factory Factory, workers int, opts ...Option) *Broker {
	if workers < 1 {
		workers = 1
	}
	b := &Broker{deps: deps, factory: factory, workers: workers, logger: deps.Logger.Named("evals"),
		batcher: newEvalBatcher(deps.Raft)}
	for _, o := range opts {
		o(b)
	}
	return b
}

// AllocsDeleted tells the broker that allocations were deleted at index
// idx (a garbage collection): its usage view rebuilds once it reads a
// state that far.
func (b *Broker) AllocsDeleted(idx uint64) { b.usage.ResetFrom(idx) }

// Stats are counters since the process started.
type Stats struct {
	Processed, Failed, PlansApplied, PlansRefused uint64
}

// Stats returns the broker's counters.
func (b *Broker) Stats() Stats {
	return Stats{Processed: b.processed.Load(), Failed: b.failed.Load(), PlansApplied: b.plans.Load(), PlansRefused: b.refused.Load()}
}

type jobKey struct{ ns, id string }

type outcome struct {
	eval *state.Evaluation
	err  error
}

// Run hands pending evaluations to the workers until ctx ends (leadership
// is lost). It follows the evaluations table with watch sets, so a pending
// evaluation written by anyone (a job registration, the deployment watcher,
// a node going down) is picked up without polling. It returns an error when
// it cannot read the state (the leader restarts it), after the workers
// finished what they hold, so that no evaluation runs twice at once.
func (b *Broker) Run(ctx context.Context) error {
	// Another leader may have deleted allocations meanwhile (garbage
	// collection): the usage view rebuilds from the state as it is now.
	b.usage.ResetFrom(b.deps.State().AllocsIndex())
	work := make(chan *state.Evaluation)
	done := make(chan outcome, b.workers)
	for i := 0; i < b.workers; i++ {
		go func() {
			for ev := range work {
				done <- outcome{ev, b.process(ev)}
			}
		}()
	}
	defer close(work)

	idle := b.workers
	// drain waits for the workers to finish what they hold.
	drain := func() {
		for idle < b.workers {
			<-done
			idle++
		}
	}
	inflight := map[jobKey]bool{}
	// handled are pending evaluations already given to a worker (or done)
	// whose new status is not in the state yet.
	handled := map[string]bool{}
	attempts := map[string]int{}
	queue := newPendingQueue()
	var nodesIndex, allocsIndex uint64
	// judged: blocked evaluations found, at that nodes index, to have
	// nothing new to run on.
	judged := map[string]uint64{}
	for {
		st := b.deps.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		if err := queue.refresh(st, ws); err != nil {
			drain()
			return fmt.Errorf("reading pending evaluations: %w", err)
		}
		for id := range handled {
			if queue.pending[id] == nil {
				delete(handled, id)
				delete(attempts, id)
			} else if !inflight[jobKey{queue.pending[id].Namespace, queue.pending[id].JobID}] && queue.gone(st, id) {
				// Finished and garbage-collected before the queue read
				// its last status.
				delete(handled, id)
				delete(attempts, id)
			}
		}
		// Allocations that ended free capacity on their nodes: blocked
		// evaluations that could use those nodes' classes run again.
		if ai := st.AllocsIndex(); ai != allocsIndex {
			if allocsIndex != 0 {
				b.unblockFreed(st, allocsIndex)
			}
			allocsIndex = ai
		}
		idx, err := st.NodesIndexWatch(ws)
		if err != nil {
			drain()
			return fmt.Errorf("reading nodes: %w", err)
		}
		if idx != nodesIndex {
			// New nodes or capacity: blocked evaluations may place now.
			if nodesIndex != 0 {
				b.unblock(st, nodesIndex)
			}
			clear(judged)
			nodesIndex = idx
		} else {
			// A blocked evaluation computed before the latest node change
			// (which came too early to wake it) runs again at once, when
			// a node changed since may help it.
			var stale []*state.Evaluation
			for _, ev := range queue.blocked {
				if ev.SnapshotIndex < idx && judged[ev.ID] != idx {
					judged[ev.ID] = idx
					if mayHelp(ev, readyClassesSince(st, ev.SnapshotIndex)) {
						stale = append(stale, ev)
					}
				}
			}
			b.setPending(stale)
		}

		now := b.deps.NowNanos()
		var nextWake int64
		for idle > 0 {
			ev := queue.pop(func(ev *state.Evaluation) bool {
				if handled[ev.ID] || inflight[jobKey{ev.Namespace, ev.JobID}] {
					return false
				}
				if ev.WaitUntil > now {
					if nextWake == 0 || ev.WaitUntil < nextWake {
						nextWake = ev.WaitUntil
					}
					return false
				}
				return true
			})
			if ev == nil {
				break
			}
			inflight[jobKey{ev.Namespace, ev.JobID}] = true
			handled[ev.ID] = true
			idle--
			work <- ev
		}

		var timer <-chan time.Time
		var t *time.Timer
		if nextWake != 0 {
			t = time.NewTimer(time.Duration(nextWake - now))
			timer = t.C
		}
		watchCtx, cancel := context.WithCancel(ctx)
		changed := ws.WatchCh(watchCtx)
		select {
		case <-ctx.Done():
			cancel()
			if t != nil {
				t.Stop()
			}
			// Let the workers finish what they hold before returning.
			drain()
			return nil
		case o := <-done:
			idle++
			delete(inflight, jobKey{o.eval.Namespace, o.eval.JobID})
			if o.err != nil && b.retryOrFail(o.eval, o.err, handled, attempts) {
				queue.requeue(o.eval)
			}
		case <-changed:
		case <-timer:
		}
		cancel()
		if t != nil {
			t.Stop()
		}
	}
}

// retryOrFail lets a failed evaluation be picked up again (true), or marks
// it failed after maxAttempts.
func (b *Broker) retryOrFail(ev *state.Evaluation, cause error, handled map[string]bool, attempts map[string]int) bool {
	attempts[ev.ID]++
	b.logger.Warn("evaluation failed", "eval", ev.ID, "job", ev.JobID, "attempt", attempts[ev.ID], "error", cause)
	if attempts[ev.ID] < maxAttempts {
		delete(handled, ev.ID)
		return true
	}
	failed := *ev
	failed.Status = state.EvalStatusFailed
	failed.StatusDescription = fmt.Sprintf("evaluation failed after %d attempts: %v", maxAttempts, cause)
	failed.ModifyTime = b.deps.NowNanos()
	if _, err := fsm.Apply(b.deps.Raft, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: []*state.Evaluation{&failed}}); err != nil {
		b.logger.Error("failed to mark evaluation failed", "eval", ev.ID, "error", err)
		delete(handled, ev.ID)
		return true
	}
	b.failed.Add(1)
	return false
}

// unblock marks pending again the blocked evaluations that a node
// changed since index since may help: one that became or stays ready, of
// a computed class the evaluation found eligible or never saw (any, when
// its constraints escaped the classes), as Nomad's BlockedEvals.Unblock.
func (b *Broker) unblock(st *state.Store, since uint64) {
	_, blocked, err := st.EvalsByStatus(memdb.NewWatchSet(), state.EvalStatusBlocked)
	if err != nil || len(blocked) == 0 {
		return
	}
	classes := readyClassesSince(st, since)
	var wake []*state.Evaluation
	for _, ev := range blocked {
		if mayHelp(ev, classes) {
			wake = append(wake, ev)
		}
	}
	b.setPending(wake)
}

// unblockFreed wakes the blocked evaluations that the nodes of the
// allocations ended since index since may now take (Nomad unblocks the
// node's class when its allocations end).
func (b *Broker) unblockFreed(st *state.Store, since uint64) {
	_, blocked, err := st.EvalsByStatus(memdb.NewWatchSet(), state.EvalStatusBlocked)
	if err != nil || len(blocked) == 0 {
		return
	}
	changed, err := st.AllocsModifiedSince(since)
	if err != nil {
		return
	}
	classes := map[string]bool{}
	for _, a := range changed {
		if !a.TerminalStatus() {
			continue
		}
		if _, n, err := st.Node(nil, a.NodeID); err == nil && n != nil && n.Ready() {
			classes[n.ComputedClass()] = true
		}
	}
	var wake []*state.Evaluation
	for _, ev := range blocked {
		if mayHelp(ev, classes) {
			wake = append(wake, ev)
		}
	}
	b.setPending(wake)
}

// readyClassesSince are the computed classes of the ready nodes changed
// after index since (nil: none, or the nodes could not be read — then
// every class is assumed, as "" stands for any).
func readyClassesSince(st *state.Store, since uint64) map[string]bool {
	_, nodes, err := st.Nodes(memdb.NewWatchSet())
	if err != nil {
		return map[string]bool{"": true}
	}
	var classes map[string]bool
	for _, n := range nodes {
		if n.ModifyIndex > since && n.Ready() {
			if classes == nil {
				classes = map[string]bool{}
			}
			classes[n.ComputedClass()] = true
		}
	}
	return classes
}

// mayHelp says whether nodes of these classes may place what ev could not.
func mayHelp(ev *state.Evaluation, classes map[string]bool) bool {
	if len(classes) == 0 {
		return false
	}
	if ev.EscapedComputedClass || ev.ClassEligibility == nil {
		return true
	}
	for c := range classes {
		if ok, seen := ev.ClassEligibility[c]; !seen || ok {
			return true
		}
	}
	return false
}

// setPending writes blocked evaluations back as pending.
func (b *Broker) setPending(blocked []*state.Evaluation) {
	if len(blocked) == 0 {
		return
	}
	now := b.deps.NowNanos()
	out := make([]*state.Evaluation, 0, len(blocked))
	for _, ev := range blocked {
		c := *ev
		c.Status = state.EvalStatusPending
		c.ModifyTime = now
		out = append(out, &c)
	}
	if _, err := fsm.Apply(b.deps.Raft, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: out}); err != nil {
		b.logger.Warn("failed to unblock evaluations", "error", err)
	}
}

// process runs one evaluation through a new scheduler.
func (b *Broker) process(ev *state.Evaluation) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("scheduler panicked: %v", p)
		}
	}()
	snap := b.deps.State().PointInTime()
	s := b.factory(b.logger, snap, &planner{broker: b}, b.deps.Now)
	if err := s.Process(ev); err != nil {
		return err
	}
	b.processed.Add(1)
	return nil
}

// planner commits a scheduler's decisions through Raft.
type planner struct{ broker *Broker }

func (p *planner) SubmitPlan(plan *state.Plan) (*state.PlanResult, scheduler.State, error) {
	return p.SubmitPlanEvals(plan, nil)
}

// SubmitPlanEvals makes the planner a scheduler.EvalPlanner: the plan and
// the evaluation's outcome in one Raft entry.
func (p *planner) SubmitPlanEvals(plan *state.Plan, evals []*state.Evaluation) (*state.PlanResult, scheduler.State, error) {
	b := p.broker
	plan.Now = b.deps.NowNanos()
	var res *state.PlanResult
	var err error
	if len(evals) == 0 {
		res, err = fsm.Apply(b.deps.Raft, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: plan})
	} else {
		res, err = fsm.Apply(b.deps.Raft, fsm.PlanApplyEvals, &fsm.PlanApplyEvalsRequest{Plan: plan, Evals: evals})
	}
	if err != nil {
		return nil, nil, err
	}
	if res.Refused != "" {
		b.refused.Add(1)
		return res, b.deps.State().PointInTime(), nil
	}
	b.plans.Add(1)
	return res, nil, nil
}

// NodeUsage makes the planner the scheduler's UsageSource.
func (p *planner) NodeUsage(snap usage.Source) (map[string]state.Resources, error) {
	return p.broker.usage.NodeUsage(snap)
}

// NodeList makes the planner the scheduler's NodeListSource: evaluations
// share the ready nodes until a node changes.
func (p *planner) NodeList(snap usage.NodeSource) (*usage.NodeList, error) {
	return p.broker.usage.NodeList(snap)
}

// LimitedPlacement makes the planner the scheduler's PlacementLimiter.
func (p *planner) LimitedPlacement() bool { return p.broker.limited }

func (p *planner) UpdateEval(eval *state.Evaluation) error { return p.upsert(eval) }
func (p *planner) CreateEval(eval *state.Evaluation) error { return p.upsert(eval) }

func (p *planner) upsert(eval *state.Evaluation) error {
	b := p.broker
	if eval.ModifyTime == 0 {
		eval.ModifyTime = b.deps.NowNanos()
	}
	_, err := b.batcher.Write(eval)
	return err
}
