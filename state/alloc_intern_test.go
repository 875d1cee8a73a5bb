package state

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// Allocations written by the FSM share the strings they repeat, whatever
// copies the decoded entry held: those of one plan (job, evaluation,
// deployment) and the process-wide ones (node, group, statuses, metric
// keys, task states of a client's report).
func TestAllocationsShareTheirRepeatedStrings(t *testing.T) {
	w := newPlanWorld(t, nil)
	// Each placement with its own copies, as a decoded Raft entry has them.
	own := func(s string) string { return strings.Clone(s) }
	var placements []*Allocation
	for i := range 2 {
		a := w.newAlloc("a", 10+i, 500+i, w.dep.ID)
		a.JobID, a.EvalID, a.DeploymentID = own(a.JobID), own(planID(801)), own(a.DeploymentID)
		a.Namespace, a.NodeID, a.TaskGroup = own(a.Namespace), own(a.NodeID), own(a.TaskGroup)
		a.Metrics = &AllocMetric{NodesAvailable: map[string]int{own("dc1"): 3},
			ScoreMetaData: []*NodeScoreMeta{{NodeID: own(w.node.ID), Scores: map[string]float64{own("binpack"): 0.5}},
				{NodeID: own(w.node.ID), Scores: map[string]float64{own("binpack"): 0.25 * float64(i)}}}}
		placements = append(placements, a)
	}
	w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Now: 5,
		Placements: placements}, "")
	_, a0, _ := w.s.Alloc(nil, placements[0].ID)
	_, a1, _ := w.s.Alloc(nil, placements[1].ID)
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("JobID", a0.JobID, a1.JobID)
	same("EvalID", a0.EvalID, a1.EvalID)
	same("DeploymentID", a0.DeploymentID, a1.DeploymentID)
	same("Namespace", a0.Namespace, a1.Namespace)
	same("NodeID", a0.NodeID, a1.NodeID)
	same("TaskGroup", a0.TaskGroup, a1.TaskGroup)
	same("score node", a0.Metrics.ScoreMetaData[0].NodeID, a1.Metrics.ScoreMetaData[0].NodeID)
	var k0, k1 string
	for k := range a0.Metrics.ScoreMetaData[0].Scores {
		k0 = k
	}
	for k := range a1.Metrics.ScoreMetaData[0].Scores {
		k1 = k
	}
	same("score key", k0, k1)
	// Equal metric maps are one map; different ones stay apart.
	sameMap := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	if !sameMap(a0.Metrics.NodesAvailable, a1.Metrics.NodesAvailable) || !sameMap(a0.Metrics.ScoreMetaData[0].Scores, a1.Metrics.ScoreMetaData[0].Scores) {
		t.Error("equal metric maps of one plan's allocations are two maps")
	}
	if sameMap(a0.Metrics.ScoreMetaData[1].Scores, a1.Metrics.ScoreMetaData[1].Scores) ||
		a0.Metrics.ScoreMetaData[1].Scores["binpack"] != 0 || a1.Metrics.ScoreMetaData[1].Scores["binpack"] != 0.25 {
		t.Errorf("different scores shared: %v, %v", a0.Metrics.ScoreMetaData[1].Scores, a1.Metrics.ScoreMetaData[1].Scores)
	}

	// Two clients' reports of the same task states.
	report := func(a *Allocation) *AllocClientUpdate {
		return &AllocClientUpdate{ID: a.ID, ClientStatus: own(AllocClientStatusRunning), TaskStates: map[string]*TaskState{
			own("app"): {State: own("running"), Events: []*TaskEvent{{Type: own("Started"), DisplayMessage: own("Task started by client")}}}}}
	}
	if err := w.s.AllocsClientUpdate(w.next(), w.node.ID, []*AllocClientUpdate{report(a0), report(a1)}, nil, 6); err != nil {
		t.Fatal(err)
	}
	_, a0, _ = w.s.Alloc(nil, a0.ID)
	_, a1, _ = w.s.Alloc(nil, a1.ID)
	same("ClientStatus", a0.ClientStatus, a1.ClientStatus)
	var t0, t1 string
	for k := range a0.TaskStates {
		t0 = k
	}
	for k := range a1.TaskStates {
		t1 = k
	}
	same("task name", t0, t1)
	same("task state", a0.TaskStates["app"].State, a1.TaskStates["app"].State)
	same("event type", a0.TaskStates["app"].Events[0].Type, a1.TaskStates["app"].Events[0].Type)
	same("event message", a0.TaskStates["app"].Events[0].DisplayMessage, a1.TaskStates["app"].Events[0].DisplayMessage)
}
