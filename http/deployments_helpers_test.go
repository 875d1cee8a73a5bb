package http_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// A deployment test world: a job "web" with the given groups (default: one
// group "web" of 2 allocations), its first deployment and allocations.
type world struct {
	f      *deploytest.Fixture
	job    *state.Job
	d      *state.Deployment
	allocs []*state.Allocation
}

func newWorld(t *testing.T, groups ...deploytest.Group) *world {
	t.Helper()
	return newWorldOn(t, deploytest.Start(t), groups...)
}

func newWorldOn(t *testing.T, f *deploytest.Fixture, groups ...deploytest.Group) *world {
	t.Helper()
	if len(groups) == 0 {
		groups = []deploytest.Group{{Name: "web", Count: 2, ProgressDeadline: 10 * time.Minute}}
	}
	job := f.RegisterJob(deploytest.Job("default", "web", "v0", groups...))
	d, allocs := f.Deploy(job)
	return &world{f: f, job: job, d: d, allocs: allocs}
}

func (w *world) deployment(t *testing.T) *state.Deployment {
	t.Helper()
	return w.f.Deployment(w.d.ID)
}

// allocIDs of the world's allocations in group g ("" = all).
func (w *world) allocIDs(g string) []string {
	var out []string
	for _, a := range w.allocs {
		if g == "" || a.TaskGroup == g {
			out = append(out, a.ID)
		}
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	buf, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf)
}

// expectDeployMeta checks the read headers of a deployment endpoint on a
// single leader, under our names and Nomad's.
func expectDeployMeta(t testing.TB, resp *deploytest.Response, index uint64) {
	t.Helper()
	for _, prefix := range []string{"X-Service-", "X-Nomad-"} {
		expectHeader(t, resp, prefix+"Index", strconv.FormatUint(index, 10))
		expectHeader(t, resp, prefix+"KnownLeader", "true")
		expectHeader(t, resp, prefix+"LastContact", "0")
	}
}

// expectWriteIndex checks a write's index headers.
func expectWriteIndex(t testing.TB, resp *deploytest.Response, index uint64) {
	t.Helper()
	for _, prefix := range []string{"X-Service-", "X-Nomad-"} {
		expectHeader(t, resp, prefix+"Index", strconv.FormatUint(index, 10))
	}
}

// actionResult is the JSON answer of a control operation.
type actionResult struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	Index                 uint64
}

// expectAction checks a successful control operation: 200 JSON, the body
// exactly the action result (with RevertedJobVersion when withReverted),
// one index for everything, an eval unless noEval, and the index headers.
// It returns the result.
func expectAction(t testing.TB, resp *deploytest.Response, withReverted, noEval bool, reverted *uint64) actionResult {
	t.Helper()
	if resp.Status != 200 {
		t.Fatalf("got %s, want 200", resp)
	}
	var got actionResult
	resp.JSON(t, &got)
	if got.Index == 0 || got.DeploymentModifyIndex != got.Index {
		t.Errorf("indexes: %+v", got)
	}
	want := ""
	evalIndex := got.Index
	if noEval {
		evalIndex = 0
		if got.EvalID != "" {
			t.Errorf("EvalID %q, want none", got.EvalID)
		}
	} else if !uuidV4.MatchString(got.EvalID) {
		t.Errorf("EvalID %q is not a UUID", got.EvalID)
	}
	if withReverted {
		rv := "null"
		if reverted != nil {
			rv = strconv.FormatUint(*reverted, 10)
		}
		want = fmt.Sprintf(`{"EvalID":%s,"EvalCreateIndex":%d,"DeploymentModifyIndex":%d,"RevertedJobVersion":%s,"Index":%d}`, js(got.EvalID), evalIndex, got.Index, rv, got.Index)
	} else {
		want = fmt.Sprintf(`{"EvalID":%s,"EvalCreateIndex":%d,"DeploymentModifyIndex":%d,"Index":%d}`, js(got.EvalID), evalIndex, got.Index, got.Index)
	}
	expectJSON(t, resp, want)
	expectWriteIndex(t, resp, got.Index)
	return got
}

// expectEval checks the evaluation an operation created for deployment d.
func expectEval(t testing.TB, f *deploytest.Fixture, id string, d *state.Deployment, index uint64) {
	t.Helper()
	_, e, err := f.Deps.State().Eval(nil, id)
	if err != nil || e == nil {
		t.Fatalf("eval %s: %v %v", id, e, err)
	}
	now := f.Clock.Now().UnixNano()
	if e.TriggeredBy != state.EvalTriggerDeploymentWatcher || e.Type != state.JobTypeService || e.Priority != 50 ||
		e.JobID != d.JobID || e.DeploymentID != d.ID || e.Namespace != d.Namespace || e.Status != state.EvalStatusPending ||
		e.CreateTime != now || e.ModifyTime != now || e.CreateIndex != index {
		t.Errorf("eval: %+v (want index %d, time %d)", e, index, now)
	}
}

// expectStatus checks a deployment's status and description.
func expectStatus(t testing.TB, d *state.Deployment, status, desc string) {
	t.Helper()
	if d.Status != status || d.StatusDescription != desc {
		t.Errorf("deployment: %q %q, want %q %q", d.Status, d.StatusDescription, status, desc)
	}
}

// deploymentsIndex is the deployments table's index.
func deploymentsIndex(f *deploytest.Fixture) uint64 {
	idx, _, _ := f.Deps.State().Deployments(memdb.NewWatchSet(), "*", "")
	return idx
}

func ptr[T any](v T) *T { return &v }
