package http_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/nomad/api"
)

// planJob is a two-allocation job without canaries, so that a destructive
// change is a plain create/destroy update.
func planJob(env string) *api.Job {
	job := nomadJob("web", 2)
	job.Datacenters = nil
	job.TaskGroups[0].Tasks[0].Env = map[string]string{"PORT": env}
	job.Update = &api.UpdateStrategy{MaxParallel: new(2), HealthCheck: new("task_states"), MinHealthyTime: new(100 * time.Millisecond)}
	return job
}

// waitReadyNodes waits until n nodes are ready.
func waitReadyNodes(t *testing.T, c *api.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, nd := range nodes {
			if nd.Status == "ready" {
				ready++
			}
		}
		if ready >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes ready", ready, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitQuiet waits until no evaluation is pending and the state's marks
// stay the same for 300 ms.
func waitQuiet(t *testing.T, ts *servertest.TestServer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		m := marks(ts)
		_, evals, _ := ts.Server.State().Evals(nil, state.AllNamespaces)
		pending := false
		for _, e := range evals {
			pending = pending || !e.Terminal()
		}
		time.Sleep(300 * time.Millisecond)
		if !pending && marks(ts).same(m) {
			return
		}
	}
	t.Fatal("the state did not settle")
}

// stateMarks are what a plan must not change.
type stateMarks struct {
	jobs, versions, evals, allocs, deployments uint64
	counts                                     map[string]int
}

func marks(ts *servertest.TestServer) stateMarks {
	s := ts.Server.State()
	return stateMarks{
		jobs: s.TableIndex("jobs"), versions: s.TableIndex("job_versions"), evals: s.TableIndex("evals"),
		allocs: s.TableIndex("allocs"), deployments: s.TableIndex("deployments"), counts: s.Counts(),
	}
}

func (m stateMarks) same(o stateMarks) bool {
	if m.jobs != o.jobs || m.versions != o.versions || m.evals != o.evals || m.allocs != o.allocs || m.deployments != o.deployments {
		return false
	}
	for _, t := range []string{"jobs", "job_versions", "evals", "allocs", "deployments"} {
		if m.counts[t] != o.counts[t] {
			return false
		}
	}
	return true
}

// waitSuccessful waits for the job's deployment of version to succeed.
func waitSuccessful(t *testing.T, c *api.Client, version uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		dep, _, err := c.Jobs().LatestDeployment("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		if dep != nil && dep.JobVersion == version && dep.Status == "successful" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment of version %d not successful: %+v", version, dep)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func taskAnnotations(d *api.JobDiff, group, task string) (string, []string) {
	for _, g := range d.TaskGroups {
		for _, tk := range g.Tasks {
			if g.Name == group && tk.Name == task {
				return tk.Type, tk.Annotations
			}
		}
	}
	return "", nil
}

// TestJobPlanNomadClient: Jobs().Plan of the official client against a dev
// agent with one node. A new job places; an Env change is a destructive
// update whose task is annotated "forces create/destroy update"; an
// update-block change is in place; no plan writes anything; the plan's
// JobModifyIndex is what EnforceRegister (job run -check-index) takes.
func TestJobPlanNomadClient(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	c := nomadClient(t, ts, "")
	jobs := c.Jobs()
	waitReadyNodes(t, c, 1)

	before := marks(ts)
	plan, wm, err := jobs.Plan(planJob("8080"), true, nil)
	if err != nil {
		t.Fatalf("Plan of a new job: %v", err)
	}
	u := plan.Annotations.DesiredTGUpdates["web"]
	if u == nil || u.Place != 2 || u.Stop+u.InPlaceUpdate+u.DestructiveUpdate+u.Ignore != 0 {
		t.Fatalf("new job updates: %+v", u)
	}
	if plan.JobModifyIndex != 0 || wm.LastIndex != 0 || len(plan.FailedTGAllocs) != 0 || plan.Diff == nil || plan.Diff.Type != "Added" {
		t.Fatalf("new job plan: %+v (LastIndex %d)", plan, wm.LastIndex)
	}
	if g := plan.Diff.TaskGroups[0]; g.Type != "Added" || g.Updates["create"] != 2 {
		t.Errorf("new job group diff: %+v", g)
	}
	if typ, ann := taskAnnotations(plan.Diff, "web", "app"); typ != "Added" || len(ann) != 1 || ann[0] != "forces create" {
		t.Errorf("new job task: %s %v", typ, ann)
	}
	if !marks(ts).same(before) {
		t.Fatalf("plan of a new job changed state: %+v -> %+v", before, marks(ts))
	}
	if _, _, err := jobs.Info("web", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("job after plan: %v", err)
	}

	reg, _, err := jobs.Register(planJob("8080"), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitSuccessful(t, c, 0)
	// The deployment's last health evaluation may still be on its way:
	// the marks are taken once nothing is pending and nothing moves.
	waitQuiet(t, ts)

	// Env change: both allocations replaced.
	before = marks(ts)
	plan, wm, err = jobs.Plan(planJob("9090"), true, nil)
	if err != nil {
		t.Fatalf("Plan of an Env change: %v", err)
	}
	if u := plan.Annotations.DesiredTGUpdates["web"]; u.DestructiveUpdate != 2 || u.Place+u.InPlaceUpdate+u.Ignore != 0 {
		t.Errorf("Env change updates: %+v", u)
	}
	if plan.JobModifyIndex != reg.JobModifyIndex || wm.LastIndex != reg.JobModifyIndex || plan.Diff.Type != "Edited" {
		t.Errorf("Env change plan: modify index %d (want %d), LastIndex %d, diff %s", plan.JobModifyIndex, reg.JobModifyIndex, wm.LastIndex, plan.Diff.Type)
	}
	if typ, ann := taskAnnotations(plan.Diff, "web", "app"); typ != "Edited" || len(ann) != 1 || ann[0] != "forces create/destroy update" {
		t.Errorf("Env change task: %s %v", typ, ann)
	}
	g := plan.Diff.TaskGroups[0]
	if g.Updates["create/destroy update"] != 2 || len(g.Tasks[0].Fields) != 1 {
		t.Fatalf("Env change group: %+v", g)
	}
	if f := g.Tasks[0].Fields[0]; f.Name != "Env[PORT]" || f.Type != "Edited" || f.Old != "8080" || f.New != "9090" {
		t.Errorf("Env field: %+v", f)
	}

	// Update block only: in place.
	inplace := planJob("8080")
	inplace.Update.MaxParallel = new(1)
	plan, _, err = jobs.Plan(inplace, true, nil)
	if err != nil {
		t.Fatalf("Plan of an update change: %v", err)
	}
	if u := plan.Annotations.DesiredTGUpdates["web"]; u.InPlaceUpdate != 2 || u.DestructiveUpdate+u.Place != 0 {
		t.Errorf("update change updates: %+v", u)
	}
	g = plan.Diff.TaskGroups[0]
	if g.Type != "Edited" || len(g.Objects) != 1 || g.Objects[0].Name != "Update" || g.Updates["in-place update"] != 2 {
		t.Errorf("update change group diff: %+v", g)
	}
	if typ, ann := taskAnnotations(plan.Diff, "web", "app"); typ != "None" || ann != nil {
		t.Errorf("update change task: %s %v", typ, ann)
	}

	// The same job: nothing to do, diff None, no Diff without asking.
	plan, _, err = jobs.Plan(planJob("8080"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := plan.Annotations.DesiredTGUpdates["web"]; u.Ignore != 2 || u.Place+u.DestructiveUpdate+u.InPlaceUpdate != 0 || plan.Diff != nil {
		t.Errorf("unchanged plan: %+v, diff %+v", u, plan.Diff)
	}
	if !marks(ts).same(before) {
		t.Fatalf("plans changed state: %+v -> %+v", before, marks(ts))
	}

	// A count no node can hold: the failure is explained.
	big := planJob("8080")
	big.TaskGroups[0].Count = new(2)
	big.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: new(1_000_000), MemoryMB: new(64)}
	plan, _, err = jobs.Plan(big, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := plan.FailedTGAllocs["web"]
	if m == nil || m.NodesEvaluated != 1 || m.NodesExhausted != 1 || m.DimensionExhausted["cpu"] != 1 || m.CoalescedFailures != 1 {
		t.Errorf("failed placements: %+v", m)
	}

	// job run -check-index: the plan's index registers, a stale one does not.
	plan, _, err = jobs.Plan(planJob("9090"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := jobs.EnforceRegister(planJob("9090"), plan.JobModifyIndex+1, nil); err == nil || !strings.Contains(err.Error(), "conflicting job modify index") {
		t.Fatalf("stale check-index: %v", err)
	}
	if _, _, err := jobs.EnforceRegister(planJob("9090"), plan.JobModifyIndex, nil); err != nil {
		t.Fatalf("check-index with the plan's index: %v", err)
	}

	// Versions with diffs: the Env change, newest first.
	versions, diffs, _, err := jobs.Versions("web", true, nil)
	if err != nil || len(versions) != 2 || len(diffs) != 1 {
		t.Fatalf("Versions: %v, %d versions, %d diffs", err, len(versions), len(diffs))
	}
	d := diffs[0]
	if d.Type != "Edited" || d.ID != "web" || len(d.TaskGroups) != 1 || len(d.TaskGroups[0].Tasks) != 1 {
		t.Fatalf("version diff: %+v", d)
	}
	if f := d.TaskGroups[0].Tasks[0].Fields; len(f) != 1 || f[0].Name != "Env[PORT]" || f[0].Old != "8080" || f[0].New != "9090" {
		t.Errorf("version diff fields: %+v", f)
	}
	if _, diffs, _, err = jobs.Versions("web", false, nil); err != nil || diffs != nil {
		t.Errorf("Versions without diffs: %v %v", err, diffs)
	}
}

// TestJobPlanBadInput: every refusal is a 4xx saying what is wrong, and
// a read-only token cannot plan.
func TestJobPlanBadInput(t *testing.T) {
	const mgmt = "c0ffee00-0000-4000-8000-0000000000aa"
	ts := startJobs(t, servertest.ACL(mgmt))
	waitACLReady(t, ts, mgmt)
	cases := []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/v1/job/web/plan", `{}`, 400, "Job must be specified"},
		{"/v1/job/web/plan", `{"Job":{"Name":"x"}}`, 400, "Job must have a valid ID"},
		{"/v1/job/other/plan", jobBody("web", 1, ""), 400, "Job ID does not match"},
		{"/v1/job/web/plan", `{"Job":{"ID":"web"},"Bogus":1}`, 400, "unknown field"},
		{"/v1/job/web/plan", `{"Job":{"ID":"web","TaskGroups":[]}}`, 400, "Missing job task groups"},
		{"/v1/job/web/plan", jobBody("web", 1, `,"Namespace":"missing"`), 400, `job "web" is in nonexistent namespace "missing"`},
	}
	for _, c := range cases {
		resp := ts.Do(t, "PUT", c.path, c.body, "X-Nomad-Token", mgmt)
		if resp.Status != c.status || !strings.Contains(string(resp.Body), c.msg) {
			t.Errorf("PUT %s %s: %s", c.path, c.body, resp)
		}
	}
	resp := ts.Do(t, "PUT", "/v1/job/web/plan", jobBody("web", 1, ""))
	if resp.Status != 403 || strings.TrimSpace(string(resp.Body)) != "Permission denied" {
		t.Errorf("anonymous plan: %s", resp)
	}
	resp = ts.Do(t, "POST", "/v1/job/web/plan", jobBody("web", 1, ""), "X-Nomad-Token", mgmt)
	if resp.Status != 200 {
		t.Fatalf("plan: %s", resp)
	}
	var out struct {
		JobModifyIndex uint64
		Index          uint64
		Annotations    struct {
			DesiredTGUpdates map[string]*state.DesiredUpdates
		}
	}
	resp.JSON(t, &out)
	if out.JobModifyIndex != 0 || out.Annotations.DesiredTGUpdates["web"].Place != 1 || resp.Header.Get("X-Nomad-Index") != strconv.Itoa(0) {
		t.Errorf("plan answer: %+v %v", out, resp.Header)
	}
}

// TestJobPlanThroughFollower: on a 3-server cluster a plan sent to a
// follower is answered (by the leader) and writes nothing on any server;
// with no client node, the failure says no node was eligible.
func TestJobPlanThroughFollower(t *testing.T) {
	nodes := servertest.StartCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	var follower *servertest.TestServer
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	fc := nomadClient(t, follower, "")
	reg, _, err := fc.Jobs().Register(planJob("8080"), nil)
	if err != nil {
		t.Fatalf("Register through a follower: %v", err)
	}
	// Wait until the registration's evaluation is processed (blocked: no
	// node) and every server has applied all of it.
	deadline := time.Now().Add(15 * time.Second)
	for {
		e, _, err := fc.Evaluations().Info(reg.EvalID, nil)
		if err != nil {
			t.Fatal(err)
		}
		settled := e.Status == "complete" && e.BlockedEval != ""
		for _, n := range nodes {
			settled = settled && n.Server.State().TableIndex("evals") == leader.Server.State().TableIndex("evals")
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration not settled: %+v", e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := make([]stateMarks, len(nodes))
	for i, n := range nodes {
		before[i] = marks(n)
	}
	plan, _, err := fc.Jobs().Plan(planJob("9090"), true, nil)
	if err != nil {
		t.Fatalf("Plan through a follower: %v", err)
	}
	m := plan.FailedTGAllocs["web"]
	if plan.JobModifyIndex != reg.JobModifyIndex || plan.Diff.Type != "Edited" || m == nil || m.NodesEvaluated != 0 || m.CoalescedFailures != 1 {
		t.Fatalf("plan: %+v, failures %+v", plan, m)
	}
	for i, n := range nodes {
		if !marks(n).same(before[i]) {
			t.Errorf("%s: the plan changed state", n.Config.NodeName)
		}
	}
}
