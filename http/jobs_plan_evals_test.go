package http_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// planCreatedEvals posts a plan of job and answers its CreatedEvals as
// raw JSON objects.
func planCreatedEvals(t *testing.T, ts *servertest.TestServer, job *api.Job) []map[string]json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"Job": job})
	if err != nil {
		t.Fatal(err)
	}
	resp := ts.Do(t, "POST", "/v1/job/"+*job.ID+"/plan", string(body))
	if resp.Status != 200 {
		t.Fatalf("plan: %s", resp)
	}
	var out struct{ CreatedEvals []map[string]json.RawMessage }
	resp.JSON(t, &out)
	return out.CreatedEvals
}

// TestJobPlanCreatedEvals: a plan that cannot place everything answers the
// blocked evaluation Nomad's scheduler would create (Job.Plan's
// CreatedEvals), and writes nothing; a plan that places everything
// answers none. The blocked evaluation carries the index the job would be
// registered at: 0 for a new job, the current one's plus one for a change.
func TestJobPlanCreatedEvals(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	c := nomadClient(t, ts, "")
	waitReadyNodes(t, c, 1)

	if got := planCreatedEvals(t, ts, planJob("8080")); got != nil {
		t.Fatalf("a placeable plan created evaluations: %s", got)
	}

	big := planJob("8080")
	big.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: new(1_000_000), MemoryMB: new(64)}
	before := marks(ts)
	evals := planCreatedEvals(t, ts, big)
	if len(evals) != 1 {
		t.Fatalf("CreatedEvals: %d, want 1: %s", len(evals), evals)
	}
	e := evals[0]
	var id, prev string
	var created, modified int64
	for k, v := range map[string]any{"ID": &id, "PreviousEval": &prev, "CreateTime": &created, "ModifyTime": &modified} {
		if err := json.Unmarshal(e[k], v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if !uuidRE.MatchString(id) || !uuidRE.MatchString(prev) || id == prev || created == 0 || created != modified {
		t.Errorf("ID %q PreviousEval %q CreateTime %d ModifyTime %d", id, prev, created, modified)
	}
	want := map[string]string{
		"Namespace":            `"default"`,
		"Priority":             `60`,
		"Type":                 `"service"`,
		"TriggeredBy":          `"queued-allocs"`,
		"JobID":                `"web"`,
		"JobModifyIndex":       `0`,
		"NodeID":               `""`,
		"DeploymentID":         `""`,
		"Status":               `"blocked"`,
		"StatusDescription":    `"created to place remaining allocations"`,
		"WaitUntil":            `"0001-01-01T00:00:00Z"`,
		"NextEval":             `""`,
		"BlockedEval":          `""`,
		"QueuedAllocations":    `null`,
		"EscapedComputedClass": `false`,
		"SnapshotIndex":        `0`,
		"CreateIndex":          `0`,
		"ModifyIndex":          `0`,
	}
	for k, w := range want {
		if got := string(e[k]); got != w {
			t.Errorf("%s = %s, want %s", k, got, w)
		}
	}
	// The one node's class is eligible: only resources were short.
	_, nodes, err := ts.Server.State().Nodes(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %d", err, len(nodes))
	}
	var elig map[string]bool
	if err := json.Unmarshal(e["ClassEligibility"], &elig); err != nil || len(elig) != 1 || !elig[nodes[0].ComputedClass()] {
		t.Errorf("ClassEligibility: %s (%v)", e["ClassEligibility"], err)
	}
	var failed map[string]struct {
		NodesEvaluated, NodesExhausted, CoalescedFailures int
		DimensionExhausted                                map[string]int
	}
	if err := json.Unmarshal(e["FailedTGAllocs"], &failed); err != nil {
		t.Fatal(err)
	}
	if m, ok := failed["web"]; !ok || len(failed) != 1 || m.NodesEvaluated != 1 || m.NodesExhausted != 1 || m.CoalescedFailures != 1 || m.DimensionExhausted["cpu"] != 1 {
		t.Errorf("FailedTGAllocs: %s", e["FailedTGAllocs"])
	}
	if !marks(ts).same(before) {
		t.Fatalf("the plan wrote: %+v -> %+v", before, marks(ts))
	}

	// A change to a registered job: the index it would be registered at.
	reg, _, err := c.Jobs().Register(planJob("8080"), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitSuccessful(t, c, 0)
	evals = planCreatedEvals(t, ts, big)
	if len(evals) != 1 || string(evals[0]["JobModifyIndex"]) != u(reg.JobModifyIndex+1) || string(evals[0]["Status"]) != `"blocked"` {
		t.Fatalf("CreatedEvals of a change (job modify index %d): %s", reg.JobModifyIndex, evals)
	}
}
