package state

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// A reader that follows evaluations by ModifyIndex sees each write once,
// in order, and is woken by the next write.
func TestEvalsModifiedSince(t *testing.T) {
	s := NewStore()
	ev := func(id, status string) *Evaluation {
		return &Evaluation{ID: id, Namespace: "default", JobID: "web", Status: status}
	}
	a := "00000000-0000-4000-8000-00000000000a"
	b := "00000000-0000-4000-8000-00000000000b"
	if err := s.EvalsUpsert(5, []*Evaluation{ev(a, EvalStatusPending)}); err != nil {
		t.Fatal(err)
	}
	if err := s.EvalsUpsert(9, []*Evaluation{ev(b, EvalStatusPending)}); err != nil {
		t.Fatal(err)
	}
	idx, got, err := s.EvalsModifiedSince(memdb.NewWatchSet(), 0)
	if err != nil || idx != 9 || len(got) != 2 || got[0].ID != a || got[1].ID != b {
		t.Fatalf("since 0: %d %v %v", idx, got, err)
	}
	ws := memdb.NewWatchSet()
	_, got, _ = s.EvalsModifiedSince(ws, 9)
	if len(got) != 0 {
		t.Fatalf("since 9: %v", got)
	}
	if err := s.EvalsUpsert(12, []*Evaluation{ev(a, EvalStatusComplete)}); err != nil {
		t.Fatal(err)
	}
	if timedOut := ws.Watch(time.After(5 * time.Second)); timedOut {
		t.Fatal("the write at 12 did not wake the reader")
	}
	_, got, _ = s.EvalsModifiedSince(memdb.NewWatchSet(), 9)
	if len(got) != 1 || got[0].ID != a || got[0].Status != EvalStatusComplete || got[0].CreateIndex != 5 {
		t.Fatalf("since 9 after the update: %+v", got)
	}
}
