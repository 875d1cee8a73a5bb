package fsm

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The orchestrator's hot records (allocations, reports, task events,
// evaluations, deployments) leave their zero scalars out of the msgpack
// form (`codec:",omitempty"`): a task event is 2-4 set fields of 22. These
// check what that must not change: every value comes back the same, zero or
// not, and entries and snapshots written before, with every field present,
// still decode to the same records.

// codecRecords are entries with both zero and set scalars in each record.
func codecRecords() []any {
	now := time.Unix(1700000000, 123).UTC()
	healthy := true
	plan := benchPlan(3)
	plan.Placements[0].DesiredDescription = "set"
	plan.Placements[0].JobVersion = 7
	plan.Placements[1].ClientStatus = ""
	plan.Placements[2].RescheduleTracker = &state.RescheduleTracker{Events: []*state.RescheduleEvent{{RescheduleTime: 5, PrevAllocID: "a", PrevNodeID: "n"}}}
	plan.Placements[2].AllocStates = []*state.AllocState{{Field: "ClientStatus", Value: "unknown", Time: now}}
	plan.Placements[2].DesiredTransition = state.DesiredTransition{Reschedule: new(true)}
	reports := &AllocClientUpdatesRequest{Nodes: []*state.NodeAllocReports{{NodeID: "n1", Now: 9, Updates: []*state.AllocClientUpdate{
		{ID: "a1", ClientStatus: "failed", ClientDescription: "Failed tasks",
			TaskStates: map[string]*state.TaskState{"t": {State: "dead", Failed: true, Restarts: 2, StartedAt: now, FinishedAt: now,
				Events: []*state.TaskEvent{
					{Type: "Received", Time: 1},
					{Type: "Terminated", Time: 2, ExitCode: 3, Signal: 9, FailsTask: true, Message: "m", KillTimeout: time.Second},
					{Type: "", Time: 0},
				}}},
			DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now, Canary: true, ModifyIndex: 4}},
		{ID: "a2", ClientStatus: "running", TaskStates: map[string]*state.TaskState{}},
	}}}}
	return []any{&PlanApplyEvalsRequest{Plan: plan, Evals: []*state.Evaluation{{ID: "e1", Namespace: "default", Priority: 50, Status: "complete"}, {ID: "e2"}}}, reports}
}

func TestEntryCodecRoundTripsZeroAndSetScalars(t *testing.T) {
	for _, in := range codecRecords() {
		buf, err := Encode(0, in)
		if err != nil {
			t.Fatal(err)
		}
		out := reflect.New(reflect.TypeOf(in).Elem()).Interface()
		if err := decode(buf[1:], out); err != nil {
			t.Fatalf("%T: %v", in, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%T changed in a round trip:\n in  %#v\n out %#v", in, in, out)
		}
	}
}

func TestEntryCodecLeavesOutZeroScalars(t *testing.T) {
	buf, err := Encode(0, codecRecords()[1])
	if err != nil {
		t.Fatal(err)
	}
	// Set in the second event only: named once. Never set: not named.
	for name, want := range map[string]int{"ExitCode": 1, "KillTimeout": 1, "Terminated": 1, "KillError": 0, "DriverMessage": 0, "ClientDescription": 1} {
		if got := bytes.Count(buf, []byte(name)); got != want {
			t.Errorf("%q appears %d times in the entry, want %d", name, got, want)
		}
	}
}

// TestEntryCodecReadsEveryFieldForm decodes records written with every field
// present (the form before omitempty, and what an older server writes): the
// same records come back.
func TestEntryCodecReadsEveryFieldForm(t *testing.T) {
	old := &codec.MsgpackHandle{}
	old.RawToString = true
	old.TypeInfos = codec.NewTypeInfos([]string{"json"}) // ignores the codec tags
	for _, in := range codecRecords() {
		var full, short bytes.Buffer
		if err := codec.NewEncoder(&full, old).Encode(in); err != nil {
			t.Fatal(err)
		}
		if err := codec.NewEncoder(&short, msgpackHandle).Encode(in); err != nil {
			t.Fatal(err)
		}
		if full.Len() <= short.Len() {
			t.Fatalf("%T: the every-field form is %d bytes, the current %d: the test no longer writes the old form", in, full.Len(), short.Len())
		}
		out := reflect.New(reflect.TypeOf(in).Elem()).Interface()
		if err := decode(full.Bytes(), out); err != nil {
			t.Fatalf("%T: %v", in, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%T read from the every-field form differs:\n in  %#v\n out %#v", in, in, out)
		}
	}
}
