package drainer_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/drainer"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// world is a real bare server (Raft, state; no scheduler or other leader
// routine) with three more nodes and a drainer on a fake clock; the test
// plays the scheduler and the clients.
type world struct {
	t     *testing.T
	ts    *deploytest.Fixture
	clock *deploytest.Clock
	d     *drainer.Drainer
	nodes []string
	job   *state.Job
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ts := deploytest.Start(t)
	w := &world{t: t, ts: ts, clock: ts.Clock, d: drainer.New(ts.Deps)}
	w.d.At = func(at time.Time) <-chan time.Time { return ts.Clock.After(at.Sub(ts.Clock.Now())) }
	for i := range 3 {
		n := &state.Node{ID: uuid.NewString(), Name: fmt.Sprintf("n%d", i), Datacenter: "dc1", Status: state.NodeStatusReady,
			SchedulingEligibility: state.NodeSchedulingEligible}
		if _, err := fsm.Apply(ts.Server, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: n}); err != nil {
			t.Fatal(err)
		}
		w.nodes = append(w.nodes, n.ID)
	}
	return w
}

// register registers a job of one group (no update block: no deployments).
func (w *world) register(count int, m *state.MigrateStrategy) {
	w.t.Helper()
	job := &state.Job{Namespace: "default", ID: "web", Name: "web", Type: state.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{Name: "web", Count: count, Migrate: m, Tasks: []*state.Task{{Name: "t", Driver: "mock_driver"}}}}}
	if _, err := fsm.Apply(w.ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job}); err != nil {
		w.t.Fatal(err)
	}
	_, w.job, _ = w.ts.Server.State().Job(nil, "default", "web")
}

// plan stops allocations and places new ones on nodes, as the scheduler would.
func (w *world) plan(stops []string, on ...string) []*state.Allocation {
	w.t.Helper()
	p := &state.Plan{EvalID: uuid.NewString(), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: w.clock.Now().UnixNano()}
	for _, id := range stops {
		p.Stops = append(p.Stops, &state.AllocStop{AllocID: id, DesiredDescription: "alloc is being migrated"})
	}
	for i, node := range on {
		p.Placements = append(p.Placements, &state.Allocation{ID: uuid.NewString(), Namespace: "default", EvalID: p.EvalID,
			Name: fmt.Sprintf("web.web[%d]", i), NodeID: node, JobID: "web", JobVersion: w.job.Version, TaskGroup: "web",
			DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending})
	}
	res, err := fsm.Apply(w.ts.Server, fsm.PlanApply, &fsm.PlanApplyRequest{Plan: p})
	if err != nil || res.Refused != "" {
		w.t.Fatalf("plan: %v %+v", err, res)
	}
	return p.Placements
}

func (w *world) client(status string, as ...*state.Allocation) {
	w.t.Helper()
	for _, a := range as {
		u := []*state.AllocClientUpdate{{ID: a.ID, ClientStatus: status}}
		if _, err := fsm.Apply(w.ts.Server, fsm.AllocClientUpdate, &fsm.AllocClientUpdateRequest{NodeID: a.NodeID, Updates: u, Now: w.clock.Now().UnixNano()}); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) drain(node string, deadline time.Duration) {
	w.t.Helper()
	now := w.clock.Now()
	d := &state.DrainStrategy{DrainSpec: state.DrainSpec{Deadline: deadline}, StartedAt: now}
	if deadline > 0 {
		d.ForceDeadline = now.Add(deadline)
	}
	if _, err := fsm.Apply(w.ts.Server, fsm.NodeUpdateDrain, &state.NodeDrainUpdate{NodeID: node, DrainStrategy: d, UpdatedAt: now.UnixNano()}); err != nil {
		w.t.Fatal(err)
	}
}

// step runs one pass of the drainer and answers the next deadline.
func (w *world) step() time.Time {
	w.t.Helper()
	next, err := w.d.Step(w.ts.Server.State(), memdb.NewWatchSet())
	if err != nil {
		w.t.Fatal(err)
	}
	return next
}

// migrating lists the IDs of the allocations marked Migrate.
func (w *world) migrating() map[string]bool {
	w.t.Helper()
	_, as, err := w.ts.Server.State().AllocsByJob(nil, "default", "web")
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, a := range as {
		if a.DesiredTransition.ShouldMigrate() {
			out[a.ID] = true
		}
	}
	return out
}

func (w *world) node(id string) *state.Node {
	_, n, _ := w.ts.Server.State().Node(nil, id)
	return n
}

func (w *world) drainEvals() []*state.Evaluation {
	_, evals, _ := w.ts.Server.State().EvalsByJob(nil, "default", "web")
	var out []*state.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == state.EvalTriggerNodeDrain {
			out = append(out, e)
		}
	}
	return out
}

// Nomad's handleTaskGroup with MaxParallel 1 and Count 3: one allocation
// of the draining node moves at a time, the next only once its
// replacement runs (the group never has fewer than 2 healthy); each
// marking comes with one node-drain evaluation in the same Raft entry;
// the drain completes when nothing runs on the node any more, which stays
// ineligible.
func TestDrainerMovesMaxParallelAtATime(t *testing.T) {
	w := newWorld(t)
	a, b, c := w.nodes[0], w.nodes[1], w.nodes[2]
	w.register(3, state.DefaultMigrateStrategy())
	allocs := w.plan(nil, a, a, b)
	w.client(state.AllocClientStatusRunning, allocs...)
	w.drain(a, 0)

	if next := w.step(); !next.IsZero() {
		t.Fatalf("a drain without deadline has a deadline: %v", next)
	}
	m := w.migrating()
	if len(m) != 1 || !m[allocs[0].ID] {
		t.Fatalf("first marking: %v (allocs %s %s)", m, allocs[0].ID, allocs[1].ID)
	}
	evals := w.drainEvals()
	_, first, _ := w.ts.Server.State().Alloc(nil, allocs[0].ID)
	if len(evals) != 1 || evals[0].Status != state.EvalStatusPending || evals[0].CreateIndex != first.ModifyIndex || evals[0].JobModifyIndex != w.job.JobModifyIndex {
		t.Fatalf("node-drain evaluations: %+v (alloc modified at %d)", evals, first.ModifyIndex)
	}
	// Again, before the scheduler acted: the marked one is in flight.
	w.step()
	if m := w.migrating(); len(m) != 1 || len(w.drainEvals()) != 1 {
		t.Fatalf("second pass marked more: %v", m)
	}
	// The scheduler stops it and places its replacement, pending.
	repl := w.plan([]string{allocs[0].ID}, c)
	w.step()
	if m := w.migrating(); len(m) != 1 {
		t.Fatalf("marked while the replacement is pending: %v", m)
	}
	// Running: the next one moves.
	w.client(state.AllocClientStatusRunning, repl...)
	w.step()
	if m := w.migrating(); len(m) != 2 || !m[allocs[1].ID] || len(w.drainEvals()) != 2 {
		t.Fatalf("after the replacement runs: %v", m)
	}
	repl2 := w.plan([]string{allocs[1].ID}, c)
	w.client(state.AllocClientStatusRunning, repl2...)
	w.step()
	if n := w.node(a); n.DrainStrategy == nil {
		t.Fatal("drain completed while allocations still run on the node")
	}
	// The clients report the old ones stopped: the drain is over.
	w.client(state.AllocClientStatusComplete, allocs[0], allocs[1])
	w.clock.Advance(time.Minute)
	w.step()
	n := w.node(a)
	if n.DrainStrategy != nil || n.Drain || n.SchedulingEligibility != state.NodeSchedulingIneligible ||
		n.LastDrain == nil || n.LastDrain.Status != state.DrainStatusComplete || !n.LastDrain.UpdatedAt.Equal(w.clock.Now()) {
		t.Fatalf("completed drain: %+v last %+v", n, n.LastDrain)
	}
	if m := w.migrating(); m[allocs[2].ID] {
		t.Fatal("the allocation on the node not draining was marked")
	}
}

// MaxParallel 2 of Count 3: two move at once; allocations not running yet
// do not count as healthy (nothing moves while the group is short).
func TestDrainerMaxParallelAndHealth(t *testing.T) {
	w := newWorld(t)
	a, b := w.nodes[0], w.nodes[1]
	w.register(3, &state.MigrateStrategy{MaxParallel: 2, HealthCheck: state.MigrateHealthChecks})
	allocs := w.plan(nil, a, a, b)
	w.client(state.AllocClientStatusRunning, allocs[0], allocs[1]) // the third is pending
	w.drain(a, 0)
	w.step()
	if m := w.migrating(); len(m) != 1 {
		t.Fatalf("2 healthy of 3, MaxParallel 2: want 1 marked, got %v", m)
	}
	w.client(state.AllocClientStatusRunning, allocs[2])
	w.step()
	if m := w.migrating(); len(m) != 2 {
		t.Fatalf("3 healthy: want both marked, got %v", m)
	}
}

// At the drain's deadline everything left on the node is marked and the
// drain is complete at once (Nomad's handleDeadlinedNodes); before it,
// Step answers the deadline to wake at. A forced drain (-1) does it at once.
func TestDrainerDeadline(t *testing.T) {
	w := newWorld(t)
	a, b := w.nodes[0], w.nodes[1]
	w.register(2, &state.MigrateStrategy{MaxParallel: 0, HealthCheck: state.MigrateHealthChecks})
	allocs := w.plan(nil, a, a)
	w.client(state.AllocClientStatusRunning, allocs...)
	w.drain(a, time.Minute)
	at := w.clock.Now().Add(time.Minute)
	if next := w.step(); !next.Equal(at) {
		t.Fatalf("next wake-up %v, want the deadline %v", next, at)
	}
	if m := w.migrating(); len(m) != 0 {
		t.Fatalf("MaxParallel 0 marked before the deadline: %v", m)
	}
	w.clock.Advance(time.Minute)
	if next := w.step(); !next.IsZero() {
		t.Fatalf("after the deadline: next %v", next)
	}
	if m := w.migrating(); len(m) != 2 || len(w.drainEvals()) != 1 {
		t.Fatalf("at the deadline: %v, %d evaluations", m, len(w.drainEvals()))
	}
	if n := w.node(a); n.DrainStrategy != nil || n.LastDrain.Status != state.DrainStatusComplete || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Fatalf("deadlined drain: %+v", n)
	}

	// Forced: at once, even with nothing healthy elsewhere.
	more := w.plan(nil, b)
	w.client(state.AllocClientStatusRunning, more...)
	w.drain(b, -1)
	w.step()
	if m := w.migrating(); !m[more[0].ID] {
		t.Fatalf("forced drain: %v", m)
	}
	if n := w.node(b); n.DrainStrategy != nil || n.LastDrain.Status != state.DrainStatusComplete {
		t.Fatalf("forced drain: %+v", n.LastDrain)
	}
}

// Run wakes at a deadline on the injected clock's timer and follows the
// state: a drain of an empty node completes as soon as it is set.
func TestDrainerRun(t *testing.T) {
	w := newWorld(t)
	fire := make(chan time.Time)
	var mu sync.Mutex
	var asked []time.Time
	w.d.At = func(at time.Time) <-chan time.Time {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, at)
		return fire
	}
	w.register(1, state.DefaultMigrateStrategy())
	allocs := w.plan(nil, w.nodes[0])
	w.client(state.AllocClientStatusRunning, allocs...)

	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- w.d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	w.drain(w.nodes[2], 0) // nothing on it
	waitFor(t, "the empty node's drain to complete", func() bool {
		n := w.node(w.nodes[2])
		return n.DrainStrategy == nil && n.LastDrain != nil && n.LastDrain.Status == state.DrainStatusComplete
	})

	w.drain(w.nodes[0], time.Hour) // Count 1, MaxParallel 1: its one allocation moves at once
	waitFor(t, "the lone allocation to be marked", func() bool { return len(w.migrating()) == 1 })
	deadline := w.clock.Now().Add(time.Hour)
	waitFor(t, "Run to arm the deadline", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(asked) > 0 && asked[len(asked)-1].Equal(deadline)
	})
	w.clock.Advance(time.Hour)
	fire <- w.clock.Now()
	waitFor(t, "the drain to end at its deadline", func() bool {
		n := w.node(w.nodes[0])
		return n.DrainStrategy == nil && n.LastDrain.Status == state.DrainStatusComplete
	})
}
