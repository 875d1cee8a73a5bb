package fsm_test

import (
	"bytes"
	"testing"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// A plan's annotations (the scheduler's per-group counts) stay out of its
// Raft entry: the entry is the same with or without them.
func TestPlanAnnotationsAreNotEncoded(t *testing.T) {
	plan := func(withAnnotations bool) *state.Plan {
		p := &state.Plan{EvalID: "e", Namespace: "default", JobID: "web", JobModifyIndex: 7}
		if withAnnotations {
			p.Annotations = &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{"web": {Place: 3, InPlaceUpdate: 2}}}
		}
		return p
	}
	with, err := fsm.Encode(fsm.PlanApplyType, &fsm.PlanApplyRequest{Plan: plan(true)})
	if err != nil {
		t.Fatal(err)
	}
	without, err := fsm.Encode(fsm.PlanApplyType, &fsm.PlanApplyRequest{Plan: plan(false)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(with, without) || bytes.Contains(with, []byte("DesiredTGUpdates")) {
		t.Fatalf("annotations encoded into the plan's entry (%d bytes against %d)", len(with), len(without))
	}
}
