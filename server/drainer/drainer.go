// Package drainer is the leader routine that carries out node drains, as
// Nomad's nomad/drainer: it marks the allocations of draining nodes
// DesiredTransition.Migrate a few at a time per task group (the group's
// migrate block), with a node-drain evaluation per job for the scheduler
// to move them; at a drain's deadline it marks everything left; and it
// completes a drain once nothing is left running on the node.
package drainer

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// Drainer is the node drainer; run it with Run while this server leads.
type Drainer struct {
	deps svc.Deps
	// At fires once the deps.Now clock reaches t (drain deadlines); tests
	// replace it with their fake clock's.
	At func(t time.Time) <-chan time.Time
}

// New returns a drainer over deps.
func New(deps svc.Deps) *Drainer {
	if deps.Logger == nil {
		deps.Logger = hclog.NewNullLogger()
	}
	d := &Drainer{deps: deps}
	d.At = func(t time.Time) <-chan time.Time { return time.After(t.Sub(d.deps.Now())) }
	return d
}

// Run drains until ctx is cancelled (leadership ended). It follows the
// nodes and the allocations of the jobs on draining nodes through memdb
// watch sets, and wakes at the earliest drain deadline. A failed read or
// write returns the error: the leader restarts it with backoff.
func (d *Drainer) Run(ctx context.Context) error {
	for {
		st := d.deps.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		next, err := d.Step(st, ws)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithCancel(ctx)
		changed := ws.WatchCh(wctx)
		var deadline <-chan time.Time
		if !next.IsZero() {
			deadline = d.At(next)
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-deadline:
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Step makes one pass over the draining nodes of st (adding what it read to
// ws) and writes what follows: the migrations due now with their
// evaluations (one Raft entry), then the drains that are over (another).
// It answers the earliest deadline still ahead (zero: none).
func (d *Drainer) Step(st *state.Store, ws memdb.WatchSet) (time.Time, error) {
	if _, err := st.NodesIndexWatch(ws); err != nil {
		return time.Time{}, err
	}
	_, nodes, err := st.Nodes(ws)
	if err != nil {
		return time.Time{}, err
	}
	now := d.deps.Now()
	var next time.Time
	draining := map[string]bool{}
	var deadlined, done []string
	for _, n := range nodes {
		if n.DrainStrategy == nil {
			continue
		}
		draining[n.ID] = true
		if has, at := n.DrainStrategy.DeadlineTime(); has {
			if !now.Before(at) {
				deadlined = append(deadlined, n.ID)
				continue
			}
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	if len(draining) == 0 {
		return next, nil
	}
	sort.Strings(deadlined)
	isDeadlined := map[string]bool{}
	for _, id := range deadlined {
		isDeadlined[id] = true
	}

	marks := map[string]state.DesiredTransition{}
	jobs := map[[2]string]bool{}
	marked := map[[2]string]bool{}
	for id := range draining {
		_, allocs, err := st.AllocsByNode(ws, id)
		if err != nil {
			return time.Time{}, err
		}
		left := false
		for _, a := range allocs {
			if a.ClientTerminalStatus() {
				continue
			}
			left = true
			k := [2]string{a.Namespace, a.JobID}
			// At the deadline everything left moves (Nomad's DeadlineAllocs).
			if isDeadlined[id] {
				if !a.TerminalStatus() && !a.DesiredTransition.ShouldMigrate() {
					marks[a.ID] = migrate()
					marked[k] = true
				}
				continue
			}
			jobs[k] = true
		}
		if !left && !isDeadlined[id] {
			done = append(done, id)
		}
	}
	for k := range jobs {
		ids, err := d.drainJob(st, ws, k[0], k[1], draining)
		if err != nil {
			return time.Time{}, err
		}
		for _, id := range ids {
			marks[id] = migrate()
			marked[k] = true
		}
	}
	if len(marks) > 0 {
		evals, err := d.evals(st, marked, now)
		if err != nil {
			return time.Time{}, err
		}
		req := &fsm.AllocDesiredTransitionRequest{Transitions: marks, Evals: evals}
		if _, err := fsm.Apply(d.deps.Raft, fsm.AllocDesiredTransition, req); err != nil {
			return time.Time{}, fmt.Errorf("marking %d allocations for migration: %w", len(marks), err)
		}
		d.deps.Logger.Named("drainer").Info("migrating allocations", "allocs", len(marks), "jobs", len(evals))
	}
	// A drain whose deadline passed is over at once (Nomad's
	// handleDeadlinedNodes): what is left has just been marked.
	done = append(done, deadlined...)
	if len(done) > 0 {
		sort.Strings(done)
		req := &fsm.NodesDrainCompleteRequest{NodeIDs: done, UpdatedAt: now.UnixNano()}
		if _, err := fsm.Apply(d.deps.Raft, fsm.NodesDrainComplete, req); err != nil {
			return time.Time{}, fmt.Errorf("completing the drain of %d nodes: %w", len(done), err)
		}
		d.deps.Logger.Named("drainer").Info("node drains complete", "nodes", done)
	}
	return next, nil
}

func migrate() state.DesiredTransition {
	yes := true
	return state.DesiredTransition{Migrate: &yes}
}

// drainJob picks, per task group of the job, the allocations on draining
// nodes that may start moving now.
func (d *Drainer) drainJob(st *state.Store, ws memdb.WatchSet, ns, jobID string, draining map[string]bool) ([]string, error) {
	_, job, err := st.Job(ws, ns, jobID)
	if err != nil {
		return nil, err
	}
	if job == nil || job.Stop {
		return nil, nil // the scheduler stops its allocations
	}
	_, allocs, err := st.AllocsByJob(ws, ns, jobID)
	if err != nil {
		return nil, err
	}
	byGroup := map[string][]*state.Allocation{}
	for _, a := range allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	var out []string
	for _, tg := range job.TaskGroups {
		for _, a := range groupToDrain(tg, byGroup[tg.Name], draining) {
			out = append(out, a.ID)
		}
	}
	return out, nil
}

// groupToDrain is Nomad's handleTaskGroup: as many allocations on draining
// nodes as keep the group at Count - MaxParallel healthy allocations or
// more. An allocation already marked counts as moving, not as healthy, so
// that at most MaxParallel are in flight.
func groupToDrain(tg *state.TaskGroup, allocs []*state.Allocation, draining map[string]bool) []*state.Allocation {
	m := tg.Migrate
	if m == nil {
		m = state.DefaultMigrateStrategy()
	}
	healthy := 0
	var drainable []*state.Allocation
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		moving := a.DesiredTransition.ShouldMigrate()
		if !moving && healthyForMigration(a) {
			healthy++
		}
		if draining[a.NodeID] && !moving {
			drainable = append(drainable, a)
		}
	}
	n := min(len(drainable), healthy-(tg.Count-m.MaxParallel))
	if n <= 0 {
		return nil
	}
	sort.Slice(drainable, func(i, j int) bool {
		if drainable[i].Name != drainable[j].Name {
			return drainable[i].Name < drainable[j].Name
		}
		return drainable[i].ID < drainable[j].ID
	})
	return drainable[:n]
}

// healthyForMigration: healthy within its deployment, or, outside one
// (ctlplane's clients report health only within a deployment), running.
func healthyForMigration(a *state.Allocation) bool {
	if a.DeploymentStatus.IsHealthy() {
		return true
	}
	return a.DeploymentID == "" && a.ClientStatus == state.AllocClientStatusRunning
}

// evals are the node-drain evaluations of the jobs with marked allocations.
func (d *Drainer) evals(st *state.Store, jobs map[[2]string]bool, now time.Time) ([]*state.Evaluation, error) {
	keys := make([][2]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1] })
	var out []*state.Evaluation
	for _, k := range keys {
		_, job, err := st.Job(nil, k[0], k[1])
		if err != nil {
			return nil, err
		}
		if job == nil {
			continue
		}
		out = append(out, &state.Evaluation{
			ID:             uuid.NewString(),
			Namespace:      job.Namespace,
			Priority:       job.Priority,
			Type:           job.Type,
			TriggeredBy:    state.EvalTriggerNodeDrain,
			JobID:          job.ID,
			JobModifyIndex: job.JobModifyIndex,
			Status:         state.EvalStatusPending,
			CreateTime:     now.UnixNano(),
			ModifyTime:     now.UnixNano(),
		})
	}
	return out, nil
}
