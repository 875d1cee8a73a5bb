package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
)

// DeploymentsChangedSince names the deployments written after an index,
// in ModifyIndex order, and its watch fires on the next write.
func TestDeploymentsChangedSince(t *testing.T) {
	w := newPlanWorld(t, nil)
	second := &Deployment{ID: planID(901), Namespace: "default", JobID: "web", Status: DeploymentStatusRunning,
		TaskGroups: map[string]*DeploymentState{}}
	w.apply(&Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: w.job.JobModifyIndex, Deployment: second, Now: 2}, "")
	_, second, _ = w.s.Deployment(nil, second.ID)
	ids := func(after uint64, ws memdb.WatchSet) []string {
		t.Helper()
		_, ds, err := w.s.DeploymentsChangedSince(ws, after)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			if d.ModifyIndex <= after {
				t.Fatalf("deployment %s at %d listed after %d", d.ID, d.ModifyIndex, after)
			}
			out = append(out, d.ID)
		}
		return out
	}
	if got := ids(0, nil); len(got) != 2 || got[0] != w.dep.ID || got[1] != second.ID {
		t.Fatalf("after 0: %v", got)
	}
	if got := ids(w.dep.ModifyIndex, nil); len(got) != 1 || got[0] != second.ID {
		t.Fatalf("after the first: %v", got)
	}
	ws := memdb.NewWatchSet()
	if got := ids(second.ModifyIndex, ws); len(got) != 0 {
		t.Fatalf("after the second: %v", got)
	}
	w.setStatus(DeploymentStatusPaused, DeploymentStatusDescriptionPaused)
	if !fired(ws) {
		t.Fatal("the watch did not fire on a deployment's write")
	}
	if got := ids(second.ModifyIndex, nil); len(got) != 1 || got[0] != w.dep.ID {
		t.Fatalf("after the second, once the first changed: %v", got)
	}
}
