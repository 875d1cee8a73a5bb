package main

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// Issue 31, finding 7: `agent -dev` answers once its node is registered:
// the first job registered as soon as /v1/status/leader names a leader
// (what `nomad job run` right after `agent -dev` does) is placed by its
// first evaluation, with no blocked evaluation.
func TestDevAgentFirstJobRunIsPlaced(t *testing.T) {
	srv, ac := devAgent(t)
	deadline := time.Now().Add(startTimeout)
	for {
		status, body, _, err := srv.do(http.MethodGet, "/v1/status/leader", "")
		if err == nil && status == http.StatusOK && body != `""` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader: %d %s %v", status, body, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	job := []byte(`{"Job":{"ID":"first","Type":"service","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,` +
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{}}]}]}}`)
	reg, err := ac.RegisterJobJSON(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first evaluation to finish", func() bool {
		ev, _, err := ac.Evaluation(context.Background(), reg.EvalID, nil)
		return err == nil && ev.Status != "pending"
	})
	ev, _, err := ac.Evaluation(context.Background(), reg.EvalID, nil)
	if err != nil || ev.Status != "complete" || len(ev.FailedTGAllocs) != 0 || ev.BlockedEval != "" {
		t.Fatalf("the first evaluation: %+v (%v); want complete, nothing failed or blocked", ev, err)
	}
	if allocs := allocsOf(t, ac, "first"); len(allocs) != 1 {
		t.Fatalf("allocations %+v, want one", allocs)
	}
}
