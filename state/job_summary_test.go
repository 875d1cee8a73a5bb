package state

import (
	"reflect"
	"testing"
)

// summaryStore holds a job in namespace prod with two allocations, one
// running, and returns the store.
func summaryStore(t *testing.T) *Store {
	t.Helper()
	s := NewStore()
	if err := s.NamespaceUpsert(2, []*Namespace{{Name: "prod", Description: "p"}}); err != nil {
		t.Fatal(err)
	}
	job := &Job{Namespace: "prod", ID: "web", Type: JobTypeService, TaskGroups: []*TaskGroup{{Name: "g", Count: 2}}}
	if _, err := s.JobRegister(3, job, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.NodeRegister(4, &Node{ID: "9c1f0d2e-7a3b-4c5d-8e6f-0a1b2c3d4e5f", Status: NodeStatusReady, Resources: Resources{CPU: 1000, MemoryMB: 1000}}, nil); err != nil {
		t.Fatal(err)
	}
	plan := &Plan{Namespace: "prod", JobID: "web", JobModifyIndex: 3}
	for _, id := range []string{"a1000000-0000-4000-8000-000000000001", "a1000000-0000-4000-8000-000000000002"} {
		plan.Placements = append(plan.Placements, &Allocation{ID: id, Namespace: "prod", JobID: "web", TaskGroup: "g", NodeID: "9c1f0d2e-7a3b-4c5d-8e6f-0a1b2c3d4e5f"})
	}
	if res, err := s.ApplyPlan(5, plan); err != nil || res.Refused != "" {
		t.Fatalf("plan: %v %+v", err, res)
	}
	if err := s.AllocsClientUpdate(6, "", []*AllocClientUpdate{{ID: plan.Placements[0].ID, ClientStatus: AllocClientStatusRunning}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	return s
}

// restore copies s through a snapshot, skipping the tables in skip.
func restore(t *testing.T, s *Store, skip ...string) *Store {
	t.Helper()
	snap := s.Snapshot()
	defer snap.Close()
	r := NewRestore()
	idx, err := snap.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx {
		if err := r.Index(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range Tables()[1:] {
		if len(skip) > 0 && skip[0] == table {
			continue
		}
		rows, err := snap.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if err := r.Insert(table, row); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r.Commit()
}

// TestJobSummarySnapshot: summaries and namespaces go through a snapshot;
// a snapshot without summaries (taken before they were kept) has them
// rebuilt from the allocations.
func TestJobSummarySnapshot(t *testing.T) {
	s := summaryStore(t)
	idx, sum, err := s.JobSummary(nil, "prod", "web")
	want := map[string]TaskGroupSummary{"g": {Starting: 1, Running: 1}}
	if err != nil || sum == nil || !reflect.DeepEqual(sum.Summary, want) || idx != 6 || sum.CreateIndex != 3 || sum.ModifyIndex != 6 {
		t.Fatalf("summary: %v %d %+v", err, idx, sum)
	}
	for _, c := range []*Store{restore(t, s), restore(t, s, jobSummaryTable)} {
		_, got, err := c.JobSummary(nil, "prod", "web")
		if err != nil || got == nil || !reflect.DeepEqual(got.Summary, want) || got.CreateIndex != 3 || *got.Children != (JobChildrenSummary{}) {
			t.Fatalf("restored summary: %v %+v", err, got)
		}
		if _, ns, err := c.NamespaceByName(nil, "prod"); err != nil || ns == nil || ns.Description != "p" || ns.CreateIndex != 2 {
			t.Fatalf("restored namespace: %v %+v", err, ns)
		}
	}
	// A job in a namespace that does not exist is refused, unless the
	// entry predates namespaces (it replays as it applied).
	orphan := &Job{Namespace: "nope", ID: "x", TaskGroups: []*TaskGroup{{Name: "g"}}}
	_, err = s.JobRegisterInNamespace(7, orphan, nil)
	wantStateError(t, err, ErrInvalid, `job "x" is in nonexistent namespace "nope"`)
	if _, j, _ := s.Job(nil, "nope", "x"); j != nil {
		t.Fatalf("refused job stored: %+v", j)
	}
	if _, err := s.JobRegister(8, orphan, nil); err != nil {
		t.Fatalf("legacy register: %v", err)
	}
	if _, err := s.JobRegisterInNamespace(9, &Job{Namespace: "prod", ID: "y", TaskGroups: []*TaskGroup{{Name: "g"}}}, nil); err != nil {
		t.Fatalf("register in prod: %v", err)
	}
}
