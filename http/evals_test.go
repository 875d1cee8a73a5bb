package http_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// TestEvalEndpoints: list (namespace, prefix), read, allocations, and the
// ID and prefix checks.
func TestEvalEndpoints(t *testing.T) {
	ts := startJobs(t)
	a := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("a", 1, ""))
	mkNamespace(t, ts, "other")
	b := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("b", 1, `,"Namespace":"other"`))

	var one api.Evaluation
	resp := ts.Do(t, "GET", "/v1/evaluation/"+a.EvalID, "")
	resp.JSON(t, &one)
	if resp.Status != 200 || one.ID != a.EvalID || one.JobID != "a" || one.Status != "pending" || !one.WaitUntil.IsZero() ||
		one.CreateIndex != a.EvalCreateIndex {
		t.Errorf("read: %s", resp)
	}
	expectHeader(t, resp, "X-Nomad-Index", fmt.Sprint(b.Index))
	// Upper case is the same UUID.
	if resp := ts.Do(t, "GET", "/v1/evaluation/"+strings.ToUpper(a.EvalID), ""); resp.Status != 200 {
		t.Errorf("upper-case ID: %s", resp)
	}
	expectJSON(t, ts.Do(t, "GET", "/v1/evaluation/"+a.EvalID+"/allocations", ""), "[]")

	var list []api.Evaluation
	ts.Do(t, "GET", "/v1/evaluations", "").JSON(t, &list)
	if len(list) != 1 || list[0].ID != a.EvalID {
		t.Errorf("default namespace list: %+v", list)
	}
	ts.Do(t, "GET", "/v1/evaluations?namespace=*", "").JSON(t, &list)
	if len(list) != 2 {
		t.Errorf("* list: %d evaluations", len(list))
	}
	ts.Do(t, "GET", "/v1/evaluations?namespace=*&prefix="+b.EvalID[:4], "").JSON(t, &list)
	if len(list) == 0 || list[0].ID != b.EvalID {
		t.Errorf("prefix list: %+v", list)
	}

	expectError(t, ts.Do(t, "GET", "/v1/evaluations?prefix=abc", ""), 400, `Invalid prefix "abc": an ID prefix is an even number of hex digits (hyphens ignored)`)
	expectError(t, ts.Do(t, "GET", "/v1/evaluations?prefix=zz", ""), 400, `Invalid prefix "zz": an ID prefix is an even number of hex digits (hyphens ignored)`)
	expectError(t, ts.Do(t, "GET", "/v1/evaluation/abc", ""), 400, `Invalid evaluation ID "abc": a 36-character UUID is required`)
	expectError(t, ts.Do(t, "GET", "/v1/evaluation/00000000-0000-0000-0000-000000000000", ""), 404, "eval not found")
	expectError(t, ts.Do(t, "GET", "/v1/evaluation/00000000-0000-0000-0000-000000000000/allocations", ""), 404, "eval not found")
	expectError(t, ts.Do(t, "GET", "/v1/evaluations?index=x", ""), 400, "Invalid index")

	// The official client reads them too.
	c := nomadClient(t, ts, "")
	evals, _, err := c.Evaluations().List(&api.QueryOptions{Namespace: "other"})
	if err != nil || len(evals) != 1 || evals[0].ID != b.EvalID {
		t.Fatalf("client List: %v %+v", err, evals)
	}
	allocs, _, err := c.Evaluations().Allocations(b.EvalID, &api.QueryOptions{Namespace: "other"})
	if err != nil || len(allocs) != 0 {
		t.Fatalf("client Allocations: %v %+v", err, allocs)
	}
}

// TestEvalBlockingRead: reading a missing evaluation with ?index= waits
// until it is written.
func TestEvalBlockingRead(t *testing.T) {
	ts := startJobs(t)
	a := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("a", 1, ""))
	done := make(chan string, 1)
	go func() {
		resp := ts.Do(t, "GET", fmt.Sprintf("/v1/job/a/evaluations?index=%d&wait=10s", a.Index), "")
		done <- resp.Body
	}()
	select {
	case body := <-done:
		t.Fatalf("answered before the write: %s", body)
	case <-time.After(300 * time.Millisecond):
	}
	b := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("a", 1, ""))
	select {
	case body := <-done:
		if !strings.Contains(body, b.EvalID) {
			t.Errorf("woken read lacks the new evaluation: %s", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked read never answered")
	}
}
