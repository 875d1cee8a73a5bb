package state

import (
	"reflect"
	"testing"
)

// TestNodePools: built-ins always there and immutable, upserts keep
// CreateIndex, a registering node creates its pool, deletes are guarded,
// jobs need an existing pool, and pools go through a snapshot.
func TestNodePools(t *testing.T) {
	s := NewStore()
	_, all, err := s.NodePools(nil, "")
	if err != nil || len(all) != 2 || all[0].Name != NodePoolAll || all[1].Name != NodePoolDefault {
		t.Fatalf("built-ins: %v %+v", err, all)
	}
	wantStateError(t, s.NodePoolUpsert(2, []*NodePool{{Name: "default"}}), ErrInvalid, `modifying node pool "default" is not allowed`)
	if err := s.NodePoolUpsert(3, []*NodePool{{Name: "batch", Description: "b", Meta: map[string]string{"k": "v"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.NodePoolUpsert(4, []*NodePool{{Name: "batch", Description: "b2"}}); err != nil {
		t.Fatal(err)
	}
	idx, p, err := s.NodePoolByName(nil, "batch")
	if err != nil || p == nil || p.Description != "b2" || p.CreateIndex != 3 || p.ModifyIndex != 4 || idx != 4 {
		t.Fatalf("batch: %v %d %+v", err, idx, p)
	}
	// A node in a pool that does not exist creates it.
	n := &Node{ID: "0b6a1a52-2f6e-4a43-9a55-3b7b8f2f6f01", Name: "n1", NodePool: "gpu", Status: NodeStatusReady}
	if err := s.NodeRegister(5, n, nil); err != nil {
		t.Fatal(err)
	}
	if _, p, _ := s.NodePoolByName(nil, "gpu"); p == nil || p.CreateIndex != 5 {
		t.Fatalf("gpu pool: %+v", p)
	}
	if !InNodePool(n, "gpu") || !InNodePool(n, NodePoolAll) || InNodePool(n, NodePoolDefault) || !InNodePool(&Node{}, "") {
		t.Error("InNodePool")
	}
	// Jobs: the pool must exist; a live job holds its pool.
	job := &Job{Namespace: "default", ID: "x", NodePool: "nope", TaskGroups: []*TaskGroup{{Name: "g"}}}
	_, err = s.JobRegisterInNamespace(6, job, nil)
	wantStateError(t, err, ErrInvalid, `job "x" is in nonexistent node pool "nope"`)
	job.NodePool = "batch"
	if _, err := s.JobRegisterInNamespace(7, job, nil); err != nil {
		t.Fatal(err)
	}
	wantStateError(t, s.NodePoolDelete(8, []string{"batch"}, "global"), ErrConflict, "1 error occurred:\n\t* node pool \"batch\" has non-terminal jobs in regions: [global]\n\n")
	wantStateError(t, s.NodePoolDelete(8, []string{"gpu"}, "global"), ErrConflict, "1 error occurred:\n\t* node pool \"gpu\" has nodes in regions: [global]\n\n")
	wantStateError(t, s.NodePoolDelete(8, []string{"all"}, "global"), ErrInvalid, `deleting node pool "all" is not allowed`)
	wantStateError(t, s.NodePoolDelete(8, []string{"nope"}, "global"), ErrNotFound, `node pool nope not found`)

	// Through a snapshot.
	c := restore(t, s)
	_, got, err := c.NodePools(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := s.NodePools(nil, "")
	if !reflect.DeepEqual(got, want) || len(got) != 4 {
		t.Fatalf("restored pools: %+v, want %+v", got, want)
	}
	if err := c.NodePoolUpsert(9, []*NodePool{{Name: "empty"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.NodePoolDelete(10, []string{"empty"}, "global"); err != nil {
		t.Fatal(err)
	}
	if _, p, _ := c.NodePoolByName(nil, "empty"); p != nil {
		t.Fatalf("deleted pool: %+v", p)
	}
}
