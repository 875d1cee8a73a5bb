package evals_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/server/evals"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// recorder is a scheduler that records what it processes, checks that no
// two evaluations of one job run at once, and completes each (or fails it
// as told).
type recorder struct {
	mu       sync.Mutex
	running  map[string]bool
	order    []string
	fails    map[string]int // eval ID → failures still to return
	overlaps []string
}

func (r *recorder) factory(_ hclog.Logger, _ *state.Store, p evals.Planner, _ func() time.Time) evals.Scheduler {
	return schedFunc(func(ev *state.Evaluation) error {
		r.mu.Lock()
		if r.running[ev.JobID] {
			r.overlaps = append(r.overlaps, ev.JobID)
		}
		r.running[ev.JobID] = true
		r.order = append(r.order, ev.ID)
		fail := r.fails[ev.ID] > 0
		if fail {
			r.fails[ev.ID]--
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond) // hold the job, so overlaps would show
		r.mu.Lock()
		r.running[ev.JobID] = false
		r.mu.Unlock()
		if fail {
			return errors.New("injected scheduler failure")
		}
		done := *ev
		done.Status = state.EvalStatusComplete
		return p.UpdateEval(&done)
	})
}

type schedFunc func(*state.Evaluation) error

func (f schedFunc) Process(ev *state.Evaluation) error { return f(ev) }

func pending(job string, priority int) *state.Evaluation {
	return &state.Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: job, Priority: priority,
		Type: state.JobTypeService, TriggeredBy: state.EvalTriggerJobRegister, Status: state.EvalStatusPending}
}

func write(t *testing.T, f *deploytest.Fixture, evs ...*state.Evaluation) {
	t.Helper()
	if _, err := fsm.Apply(f.Server, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: evs}); err != nil {
		t.Fatal(err)
	}
}

// waitStatus blocks on the state until every listed evaluation has left
// pending, and returns them.
func waitDone(t *testing.T, f *deploytest.Fixture, ids ...string) map[string]*state.Evaluation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ws := memdb.NewWatchSet()
		out := map[string]*state.Evaluation{}
		for _, id := range ids {
			_, ev, _ := f.Server.State().Eval(ws, id)
			if ev != nil && ev.Status != state.EvalStatusPending {
				out[id] = ev
			}
		}
		if len(out) == len(ids) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d evaluations still pending", len(ids)-len(out), len(ids))
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		ws.WatchCtx(ctx)
		cancel()
	}
}

func startBroker(t *testing.T, f *deploytest.Fixture, r *recorder, workers int) *evals.Broker {
	b := evals.New(f.Deps, r.factory, workers)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// Every pending evaluation is processed once, never two of one job at a
// time, by priority then age when workers are scarce.
func TestBrokerOneAtATimePerJob(t *testing.T) {
	f := deploytest.Start(t)
	r := &recorder{running: map[string]bool{}, fails: map[string]int{}}
	var evs []*state.Evaluation
	for i := 0; i < 4; i++ {
		for _, job := range []string{"a", "b", "c"} {
			evs = append(evs, pending(job, 50))
		}
	}
	urgent := pending("d", 90)
	write(t, f, evs...)
	write(t, f, urgent)
	b := startBroker(t, f, r, 2)
	ids := []string{urgent.ID}
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	got := waitDone(t, f, ids...)
	for id, ev := range got {
		if ev.Status != state.EvalStatusComplete {
			t.Errorf("eval %s ended %s", id, ev.Status)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.overlaps) > 0 {
		t.Errorf("evaluations of one job ran at once: %v", r.overlaps)
	}
	if len(r.order) != len(ids) {
		t.Errorf("%d evaluations processed, want %d (each once)", len(r.order), len(ids))
	}
	// Two workers dequeue at once: the urgent evaluation is taken first, but
	// the other worker may record its own start a moment earlier.
	if i := indexOf(r.order, urgent.ID); i < 0 || i >= 2 {
		t.Errorf("the priority 90 evaluation ran at position %d, want among the first 2 (one per worker): %v", i, r.order)
	}
	waitStats(t, b, func(st evals.Stats) bool { return st.Processed == uint64(len(ids)) && st.Failed == 0 })
}

// A failing evaluation is tried again, and marked failed with its cause
// after the last attempt; other jobs go on meanwhile.
func TestBrokerRetriesThenFails(t *testing.T) {
	f := deploytest.Start(t)
	flaky, broken, fine := pending("flaky", 50), pending("broken", 50), pending("fine", 50)
	r := &recorder{running: map[string]bool{}, fails: map[string]int{flaky.ID: 2, broken.ID: 100}}
	b := startBroker(t, f, r, 1)
	write(t, f, flaky, broken, fine)
	got := waitDone(t, f, flaky.ID, broken.ID, fine.ID)
	if got[flaky.ID].Status != state.EvalStatusComplete || got[fine.ID].Status != state.EvalStatusComplete {
		t.Errorf("flaky %s, fine %s", got[flaky.ID].Status, got[fine.ID].Status)
	}
	if ev := got[broken.ID]; ev.Status != state.EvalStatusFailed ||
		ev.StatusDescription != "evaluation failed after 3 attempts: injected scheduler failure" {
		t.Errorf("broken: %s %q", ev.Status, ev.StatusDescription)
	}
	// The counters move just after the state does.
	waitStats(t, b, func(st evals.Stats) bool { return st.Failed == 1 && st.Processed == 2 })
}

// Blocked evaluations run again when the nodes change.
func TestBrokerUnblocksOnNodeChange(t *testing.T) {
	f := deploytest.Start(t)
	r := &recorder{running: map[string]bool{}, fails: map[string]int{}}
	startBroker(t, f, r, 1)
	first := pending("web", 50)
	write(t, f, first)
	waitDone(t, f, first.ID)
	blocked := pending("web", 50)
	blocked.Status = state.EvalStatusBlocked
	write(t, f, blocked)
	if _, err := fsm.Apply(f.Server, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: &state.Node{
		ID: uuid.NewString(), Name: "n", Datacenter: "dc1", Status: state.NodeStatusReady}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ev, _ := f.Server.State().Eval(nil, blocked.ID)
		if ev.Status == state.EvalStatusComplete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the blocked evaluation is %s after a node registered", ev.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitStats(t *testing.T, b *evals.Broker, ok func(evals.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(b.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("broker stats %+v", b.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
