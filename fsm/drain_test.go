package fsm_test

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// The drain commands keep their numbers, decode through the log (the
// strategy's embedded DrainSpec included) and survive a snapshot.
func TestApplyNodeDrainCommands(t *testing.T) {
	if fsm.NodeUpdateDrainType != 41 || fsm.NodeUpdateEligibilityType != 42 || fsm.NodesDrainCompleteType != 43 {
		t.Fatal("drain message types changed")
	}
	f := newFSM()
	node := &state.Node{ID: idA, Name: "n1", Datacenter: "dc1", Status: state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible}
	if resp := apply(t, f, 5, fsm.NodeRegisterType, &fsm.NodeRegisterRequest{Node: node}); resp != nil {
		t.Fatal(resp)
	}
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	strat := &state.DrainStrategy{DrainSpec: state.DrainSpec{Deadline: time.Minute, IgnoreSystemJobs: true}, ForceDeadline: at.Add(time.Minute), StartedAt: at}
	resp := apply(t, f, 6, fsm.NodeUpdateDrainType, &state.NodeDrainUpdate{NodeID: idA, DrainStrategy: strat, AccessorID: "acc", UpdatedAt: at.UnixNano()})
	if got, ok := resp.(fsm.Indexed); !ok || got.Index != 6 {
		t.Fatalf("drain answered %#v", resp)
	}
	_, n, _ := f.State().Node(nil, idA)
	if n.DrainStrategy == nil || !reflect.DeepEqual(*n.DrainStrategy, *strat) || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Fatalf("after the log: %+v", n.DrainStrategy)
	}
	resp = apply(t, f, 7, fsm.NodeUpdateEligibilityType, &fsm.NodeUpdateEligibilityRequest{NodeID: idA, Eligibility: state.NodeSchedulingEligible})
	wantStateError(t, resp, state.ErrInvalid, "can not set node's scheduling eligibility to eligible while it is draining")

	data := persist(t, f)
	dst := newFSM()
	if err := dst.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	_, r, _ := dst.State().Node(nil, idA)
	if !reflect.DeepEqual(r, n) {
		t.Fatalf("restored %+v\nwant %+v", r, n)
	}

	resp = apply(t, f, 8, fsm.NodesDrainCompleteType, &fsm.NodesDrainCompleteRequest{NodeIDs: []string{idA}, UpdatedAt: at.Add(time.Hour).UnixNano()})
	if got, ok := resp.(fsm.Indexed); !ok || got.Index != 8 {
		t.Fatalf("complete answered %#v", resp)
	}
	_, n, _ = f.State().Node(nil, idA)
	if n.DrainStrategy != nil || n.LastDrain == nil || n.LastDrain.Status != state.DrainStatusComplete || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Fatalf("completed: %+v", n)
	}
}
