package state

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
)

func drainNode(t *testing.T, s *Store) *Node {
	t.Helper()
	n := &Node{ID: uuid.NewString(), Name: "n1", Datacenter: "dc1", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible}
	if err := s.NodeRegister(10, n, nil); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustNode(t *testing.T, s *Store, id string) *Node {
	t.Helper()
	_, n, err := s.Node(nil, id)
	if err != nil || n == nil {
		t.Fatalf("node %s: %v %v", id, n, err)
	}
	return n
}

// A drain makes the node ineligible and starts LastDrain; an update keeps
// StartedAt and the operator's metadata unless new metadata is given;
// cancelling with MarkEligible makes it eligible again and records
// "canceled"; re-registering the node keeps an ongoing drain.
func TestNodeUpdateDrainLifecycle(t *testing.T) {
	s := NewStore()
	n := drainNode(t, s)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	strat := &DrainStrategy{DrainSpec: DrainSpec{Deadline: time.Hour}, ForceDeadline: t0.Add(time.Hour), StartedAt: t0}
	ev := &Evaluation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Status: EvalStatusPending, TriggeredBy: EvalTriggerNodeUpdate}
	err := s.NodeUpdateDrain(11, &NodeDrainUpdate{NodeID: n.ID, DrainStrategy: strat, Meta: map[string]string{"why": "kernel"},
		AccessorID: "acc-1", UpdatedAt: t0.UnixNano(), Evals: []*Evaluation{ev}})
	if err != nil {
		t.Fatal(err)
	}
	got := mustNode(t, s, n.ID)
	wantLast := &DrainMetadata{StartedAt: t0.Truncate(time.Second), UpdatedAt: t0.Truncate(time.Second), Status: DrainStatusDraining,
		AccessorID: "acc-1", Meta: map[string]string{"why": "kernel"}}
	if !got.Drain || got.DrainStrategy == nil || *got.DrainStrategy != *strat || got.SchedulingEligibility != NodeSchedulingIneligible ||
		got.ModifyIndex != 11 || !reflect.DeepEqual(got.LastDrain, wantLast) {
		t.Fatalf("draining node: %+v last %+v", got, got.LastDrain)
	}
	if _, e, _ := s.Eval(nil, ev.ID); e == nil || e.CreateIndex != 11 {
		t.Fatalf("evaluation of the write: %+v", e)
	}

	// Re-registration (a client restart) does not end the drain.
	re := *n
	re.SchedulingEligibility = NodeSchedulingEligible
	if err := s.NodeRegister(12, &re, nil); err != nil {
		t.Fatal(err)
	}
	if got := mustNode(t, s, n.ID); got.DrainStrategy == nil || !got.Drain || got.SchedulingEligibility != NodeSchedulingIneligible || got.LastDrain.Status != DrainStatusDraining {
		t.Fatalf("after re-registration: %+v", got)
	}

	// Eligible while draining is refused, with Nomad's text.
	err = s.NodeUpdateEligibility(13, n.ID, NodeSchedulingEligible, nil)
	wantStateError(t, err, ErrInvalid, "can not set node's scheduling eligibility to eligible while it is draining")

	// An update: same start, new deadline, metadata kept.
	t1 := t0.Add(10 * time.Minute)
	upd := &DrainStrategy{DrainSpec: DrainSpec{Deadline: 2 * time.Hour}, ForceDeadline: t1.Add(2 * time.Hour), StartedAt: t0}
	if err := s.NodeUpdateDrain(14, &NodeDrainUpdate{NodeID: n.ID, DrainStrategy: upd, AccessorID: "acc-2", UpdatedAt: t1.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	got = mustNode(t, s, n.ID)
	if got.LastDrain.StartedAt != t0.Truncate(time.Second) || got.LastDrain.UpdatedAt != t1.Truncate(time.Second) ||
		got.LastDrain.AccessorID != "acc-2" || got.LastDrain.Meta["why"] != "kernel" || got.DrainStrategy.Deadline != 2*time.Hour {
		t.Fatalf("updated drain: %+v", got.LastDrain)
	}

	// Cancel with MarkEligible.
	t2 := t1.Add(time.Minute)
	if err := s.NodeUpdateDrain(15, &NodeDrainUpdate{NodeID: n.ID, MarkEligible: true, UpdatedAt: t2.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	got = mustNode(t, s, n.ID)
	if got.Drain || got.DrainStrategy != nil || got.SchedulingEligibility != NodeSchedulingEligible ||
		got.LastDrain.Status != DrainStatusCanceled || got.LastDrain.UpdatedAt != t2.Truncate(time.Second) || got.LastDrain.AccessorID != "acc-2" {
		t.Fatalf("cancelled drain: %+v last %+v", got, got.LastDrain)
	}

	// Cancelling again is no drain at all: LastDrain stays as it was.
	if err := s.NodeUpdateDrain(16, &NodeDrainUpdate{NodeID: n.ID, UpdatedAt: t2.Add(time.Hour).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	if got := mustNode(t, s, n.ID); got.LastDrain.UpdatedAt != t2.Truncate(time.Second) || got.SchedulingEligibility != NodeSchedulingEligible {
		t.Fatalf("no-op cancel changed the node: %+v", got.LastDrain)
	}

	err = s.NodeUpdateDrain(17, &NodeDrainUpdate{NodeID: uuid.NewString(), DrainStrategy: strat})
	wantStateError(t, err, ErrNotFound, "node not found")
}

// The drainer's completion: the strategy is cleared, LastDrain is
// complete, the node stays ineligible; a node no longer draining is left
// alone.
func TestNodesDrainComplete(t *testing.T) {
	s := NewStore()
	a := drainNode(t, s)
	b := &Node{ID: uuid.NewString(), Name: "n2", Datacenter: "dc1", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible}
	if err := s.NodeRegister(11, b, nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.NodeUpdateDrain(12, &NodeDrainUpdate{NodeID: a.ID, DrainStrategy: &DrainStrategy{StartedAt: t0}, AccessorID: "acc", UpdatedAt: t0.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Minute)
	if err := s.NodesDrainComplete(13, []string{a.ID, b.ID, uuid.NewString()}, t1.UnixNano()); err != nil {
		t.Fatal(err)
	}
	got := mustNode(t, s, a.ID)
	if got.Drain || got.DrainStrategy != nil || got.SchedulingEligibility != NodeSchedulingIneligible || got.ModifyIndex != 13 ||
		got.LastDrain.Status != DrainStatusComplete || got.LastDrain.StartedAt != t0 || got.LastDrain.UpdatedAt != t1 || got.LastDrain.AccessorID != "acc" {
		t.Fatalf("completed drain: %+v last %+v", got, got.LastDrain)
	}
	if got := mustNode(t, s, b.ID); got.ModifyIndex != 11 || got.LastDrain != nil {
		t.Fatalf("a node not draining was changed: %+v", got)
	}
}

// Eligibility: both values set, anything else refused.
func TestNodeUpdateEligibility(t *testing.T) {
	s := NewStore()
	n := drainNode(t, s)
	if err := s.NodeUpdateEligibility(11, n.ID, NodeSchedulingIneligible, nil); err != nil {
		t.Fatal(err)
	}
	if got := mustNode(t, s, n.ID); got.SchedulingEligibility != NodeSchedulingIneligible || got.Ready() || got.ModifyIndex != 11 {
		t.Fatalf("ineligible: %+v", got)
	}
	if err := s.NodeUpdateEligibility(12, n.ID, NodeSchedulingEligible, nil); err != nil {
		t.Fatal(err)
	}
	if got := mustNode(t, s, n.ID); got.SchedulingEligibility != NodeSchedulingEligible || !got.Ready() {
		t.Fatalf("eligible: %+v", got)
	}
	wantStateError(t, s.NodeUpdateEligibility(13, n.ID, "maybe", nil), ErrInvalid, `invalid scheduling eligibility "maybe"`)
	wantStateError(t, s.NodeUpdateEligibility(13, uuid.NewString(), NodeSchedulingEligible, nil), ErrNotFound, "node not found")
}
