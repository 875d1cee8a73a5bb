package state

import (
	"slices"
	"testing"
)

// TestJobVersionsPruned: a job keeps its JobTrackedVersions newest versions,
// plus the latest stable one and any an allocation or a deployment refers
// to; the rest go when a newer version is registered.
func TestJobVersionsPruned(t *testing.T) {
	w := newGCWorld(t)
	register := func(count int) {
		t.Helper()
		j := &Job{Namespace: "default", ID: "web", Name: "web", Type: JobTypeService,
			TaskGroups: []*TaskGroup{{Name: "web", Count: count}}}
		w.idx++
		if _, err := w.s.JobRegister(w.idx, j, nil); err != nil {
			t.Fatal(err)
		}
	}
	versions := func() []uint64 {
		t.Helper()
		_, vs, err := w.s.JobVersions(nil, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, v := range vs {
			out = append(out, v.Version)
		}
		return out
	}
	want := func(step string, v ...uint64) {
		t.Helper()
		if got := versions(); !slices.Equal(got, v) {
			t.Fatalf("%s: versions %v, want %v", step, got, v)
		}
	}

	for i := 1; i <= JobTrackedVersions; i++ {
		register(i) // versions 0..5
	}
	want("six versions", 5, 4, 3, 2, 1, 0)
	register(7)
	want("a seventh drops the oldest", 6, 5, 4, 3, 2, 1)

	// Version 1 stable, version 2 run by an allocation, version 3 by a
	// deployment: all three outlive their place among the newest six.
	w.idx++
	if err := w.s.JobSetStable(w.idx, "default", "web", 1, true); err != nil {
		t.Fatal(err)
	}
	w.put(allocsTable, &Allocation{ID: w.id("a"), Namespace: "default", JobID: "web", JobVersion: 2, TaskGroup: "web",
		NodeID: "n", DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusRunning})
	w.put(deploymentsTable, &Deployment{ID: w.id("d"), Namespace: "default", JobID: "web", JobVersion: 3,
		Status: DeploymentStatusSuccessful, TaskGroups: map[string]*DeploymentState{}})
	for i := 8; i <= 11; i++ {
		register(i) // versions 7..10
	}
	want("kept past the six", 10, 9, 8, 7, 6, 5, 3, 2, 1)

	// A newer stable version takes over; an allocation of another job with
	// the same version number keeps nothing of this one.
	w.idx++
	if err := w.s.JobSetStable(w.idx, "default", "web", 9, true); err != nil {
		t.Fatal(err)
	}
	w.put(allocsTable, &Allocation{ID: w.id("other"), Namespace: "default", JobID: "web-2", JobVersion: 1, TaskGroup: "web",
		NodeID: "n", DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusRunning})
	register(12) // version 11
	want("the old stable one goes", 11, 10, 9, 8, 7, 6, 3, 2)
	if _, v, _ := w.s.JobVersion(nil, "default", "web", 1); v != nil {
		t.Errorf("version 1 still readable: %+v", v)
	}
	if _, v, _ := w.s.JobVersion(nil, "default", "web", 2); v == nil {
		t.Error("version 2, run by an allocation, was deleted")
	}
}
