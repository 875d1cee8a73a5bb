package http_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// costlyPattern is the 1,014-character regexp of the finding: repeated
// `(\pL{1,1000})`, a program of about 156,000 instructions (0.07-0.2 s to
// compile). salt makes each one a distinct pattern (no cache hit).
func costlyPattern(salt int) string {
	p := fmt.Sprintf("%02d", salt) + strings.Repeat(`(\pL{1,1000})`, 77)
	return p + strings.Repeat("a", 1014-len(p))
}

// boundedPattern is a distinct regexp of about 8,000 instructions: under
// the cap of one pattern, over the job's budget six times over.
func boundedPattern(salt int) string {
	return fmt.Sprintf("%d", salt) + strings.Repeat("[a-z]{1,1000}", 4)
}

// constraintJSON is a regexp constraint.
func constraintJSON(pattern string) string {
	b, _ := json.Marshal(map[string]string{"LTarget": "${attr.kernel.name}", "Operand": "regexp", "RTarget": pattern})
	return string(b)
}

// patternJobBody is a job whose group "web" has the given constraints and
// whose task "app" has the given affinities (JSON objects).
func patternJobBody(id string, groupConstraints, taskAffinities []string) string {
	return fmt.Sprintf(`{"Job":{"ID":%q,"TaskGroups":[{"Name":"web","Count":1,"Constraints":[%s],"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h"},"Affinities":[%s]}]}]}}`,
		id, strings.Join(groupConstraints, ","), strings.Join(taskAffinities, ","))
}

// TestJobPatternCost: a job whose regexps are too costly to compile, alone
// or together, is refused with 400 naming the constraint or affinity, on
// register and on plan, and nothing is written.
func TestJobPatternCost(t *testing.T) {
	ts := startJobs(t)
	many := func(n int, f func(int) string) []string {
		var out []string
		for i := range n {
			out = append(out, constraintJSON(f(i)))
		}
		return out
	}
	long := func(i int) string { return fmt.Sprintf("%03d", i) + strings.Repeat("a", 997) }
	affinity := func(p string) string {
		b, _ := json.Marshal(map[string]any{"LTarget": "${attr.kernel.name}", "Operand": "regexp", "RTarget": p, "Weight": 50})
		return string(b)
	}
	cases := []struct {
		name        string
		constraints []string
		affinities  []string
		want        string
	}{
		{"one costly constraint", many(1, costlyPattern), nil,
			"Task group web validation failed: Constraint 1 validation failed: regexp pattern too costly to compile (a program of 166778 instructions: at most 10000 are allowed)"},
		{"thirty costly constraints", many(30, costlyPattern), nil,
			`Task group "web" constraint 17: regexp patterns too long in all (the job's come to 17238 bytes with it: at most 16384 are allowed per job)`},
		{"a costly task affinity", nil, []string{affinity(costlyPattern(99))},
			"Task app validation failed: Affinity 1 validation failed: regexp pattern too costly to compile"},
		{"patterns costly together", many(30, boundedPattern), nil,
			`Task group "web" constraint 7: regexp pattern too costly to compile (the job's regexps come to 56007 program instructions with it: at most 50000 are allowed per job)`},
		{"a pattern slow to match against a literal", []string{fmt.Sprintf(`{"LTarget":%q,"Operand":"regexp","RTarget":"%s$"}`, strings.Repeat("a", 1024), boundedPattern(0))}, nil,
			`Task group "web" constraint 1: regexp pattern too costly to match against its 1024-character literal LTarget (8002 instructions times 1024 characters: at most 1000000 are allowed)`},
		{"patterns long together", many(17, long), nil,
			`Task group "web" constraint 17: regexp patterns too long in all (the job's come to 17000 bytes with it: at most 16384 are allowed per job)`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("costly-%d", i)
			body := patternJobBody(id, c.constraints, c.affinities)
			for _, path := range []string{"/v1/jobs", "/v1/job/" + id + "/plan"} {
				resp := ts.Do(t, "PUT", path, body)
				if resp.Status != 400 || !strings.Contains(resp.Body, c.want) {
					t.Errorf("PUT %s: %s, want 400 with %q", path, resp, c.want)
				}
			}
			if resp := ts.Do(t, "GET", "/v1/job/"+id, ""); resp.Status != 404 {
				t.Errorf("refused job was written: %s", resp)
			}
		})
	}
	// A job of cheap patterns within the budget is taken, and its plan
	// answered.
	ok := patternJobBody("cheap", many(5, boundedPattern), []string{affinity("^linux$")})
	mustWrite(t, ts, "PUT", "/v1/jobs", ok)
	if resp := ts.Do(t, "PUT", "/v1/job/cheap/plan", ok); resp.Status != 200 {
		t.Errorf("plan of a job within the budget: %s", resp)
	}
}

// withJobsCap serves ts's server with a jobs service of the given
// -max-job-allocs on its own 127.0.0.1 listener.
func withJobsCap(t *testing.T, ts *servertest.TestServer, maxAllocs int) *servertest.TestServer {
	t.Helper()
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts.Server),
		Jobs: jobs.New(deps, jobs.MaxJobAllocs(maxAllocs)), Namespaces: namespaces.New(deps)}))
	t.Cleanup(hs.Close)
	return &servertest.TestServer{Agent: ts.Agent, Config: ts.Config, URL: hs.URL}
}

// TestJobAllocCapPlanAndRevert: the per-job allocation cap holds on plan
// (100 groups of 10,000 are refused before any placement is computed) and
// on revert (to a version registered under a higher cap).
func TestJobAllocCapPlanAndRevert(t *testing.T) {
	ts := startJobs(t)
	var groups []string
	for i := range jobs.MaxTaskGroups {
		groups = append(groups, fmt.Sprintf(`{"Name":"g%d","Count":%d,"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h"}}]}`, i, jobs.MaxCount))
	}
	huge := fmt.Sprintf(`{"Job":{"ID":"huge","TaskGroups":[%s]}}`, strings.Join(groups, ","))
	want := "Job asks for 1000000 allocations in all (the sum of its task groups' Count): at most 10000 are allowed (server flag -max-job-allocs)"
	for _, path := range []string{"/v1/job/huge/plan", "/v1/jobs"} {
		if resp := ts.Do(t, "PUT", path, huge); resp.Status != 400 || !strings.Contains(resp.Body, want) {
			t.Errorf("PUT %s: %s, want 400 with %q", path, resp, want)
		}
	}

	// Version 0 asks for 20 under a cap of 20; version 1 for 2. Under a
	// cap of 10, reverting to version 0 is refused and writes nothing.
	high, low := withJobsCap(t, ts, 20), withJobsCap(t, ts, 10)
	mustWrite(t, high, "PUT", "/v1/jobs", jobBody("web", 20, ""))
	v1 := mustWrite(t, high, "PUT", "/v1/jobs", jobBody("web", 2, ""))
	resp := low.Do(t, "PUT", "/v1/job/web/revert", `{"JobID":"web","JobVersion":0}`)
	if want := "Job asks for 20 allocations in all (the sum of its task groups' Count): at most 10 are allowed"; resp.Status != 400 || !strings.Contains(resp.Body, want) {
		t.Errorf("revert past the cap: %s, want 400 with %q", resp, want)
	}
	if job := getJob(t, ts, "web"); job.Version != 1 || job.JobModifyIndex != v1.JobModifyIndex || job.TaskGroups[0].Count != 2 {
		t.Errorf("after the refused revert: version %d count %d", job.Version, job.TaskGroups[0].Count)
	}
	// Under the cap it was registered with, the revert goes through.
	if r := mustWrite(t, high, "PUT", "/v1/job/web/revert", `{"JobID":"web","JobVersion":0}`); r.EvalID == "" {
		t.Errorf("revert under the cap: %+v", r)
	}
	if job := getJob(t, ts, "web"); job.Version != 2 || job.TaskGroups[0].Count != 20 {
		t.Errorf("after the revert: version %d count %d", job.Version, job.TaskGroups[0].Count)
	}
}

// TestJobRevertRevalidates: a version written before the resource caps
// (here straight through Raft, as an older server would have) cannot be
// brought back by a revert.
func TestJobRevertRevalidates(t *testing.T) {
	ts := startJobs(t)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("old", 1, ""))
	legacy := getJob(t, ts, "old").Copy()
	g := *legacy.TaskGroups[0]
	task := *g.Tasks[0]
	task.Resources = &state.Resources{CPU: 1 << 62, MemoryMB: 1 << 62}
	g.Tasks = []*state.Task{&task}
	legacy.TaskGroups = []*state.TaskGroup{&g}
	if _, err := fsm.Apply(ts.Server, fsm.JobRegister, &fsm.JobRegisterRequest{Job: legacy}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("old", 2, ""))
	if job := getJob(t, ts, "old"); job.Version != 2 {
		t.Fatalf("version %d, want 2", job.Version)
	}
	resp := ts.Do(t, "PUT", "/v1/job/old/revert", `{"JobID":"old","JobVersion":1}`)
	if want := "maximum CPU value is 16777216; got 4611686018427387904"; resp.Status != 400 || !strings.Contains(resp.Body, want) {
		t.Errorf("revert to the legacy version: %s, want 400 with %q", resp, want)
	}
	if job := getJob(t, ts, "old"); job.Version != 2 {
		t.Errorf("the refused revert wrote version %d", job.Version)
	}
}

// TestJobResourceCaps: a task's CPU and memory are bounded (2^62 MHz was
// taken, and three such tasks summed to a negative number), with Nomad's
// texts for the minimums.
func TestJobResourceCaps(t *testing.T) {
	ts := startJobs(t)
	task := func(name string, cpu, mem int64) string {
		return fmt.Sprintf(`{"Name":%q,"Driver":"mock_driver","Config":{"run_for":"1h"},"Resources":{"CPU":%d,"MemoryMB":%d}}`, name, cpu, mem)
	}
	body := func(tasks ...string) string {
		return fmt.Sprintf(`{"Job":{"ID":"big","TaskGroups":[{"Name":"web","Count":1,"Tasks":[%s]}]}}`, strings.Join(tasks, ","))
	}
	const huge = int64(1) << 62
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"2^62 MHz", body(task("a", huge, 256)), []string{"Task a validation failed: maximum CPU value is 16777216; got 4611686018427387904"}},
		{"2^62 MB", body(task("a", 100, huge)), []string{"Task a validation failed: maximum MemoryMB value is 1073741824; got 4611686018427387904"}},
		{"three tasks that summed past 2^63", body(task("a", huge, huge), task("b", huge, huge), task("c", huge, huge)),
			[]string{"6 errors occurred", "Task b validation failed: maximum CPU value", "Task c validation failed: maximum MemoryMB value"}},
		{"Nomad's minimum CPU", body(task("a", 0, 256)), []string{"Task a validation failed: minimum CPU value is 1; got 0"}},
		{"Nomad's minimum memory", body(task("a", 100, 9)), []string{"Task a validation failed: minimum MemoryMB value is 10; got 9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/v1/jobs", "/v1/job/big/plan"} {
				resp := ts.Do(t, "PUT", path, c.body)
				for _, w := range c.want {
					if resp.Status != 400 || !strings.Contains(resp.Body, w) {
						t.Errorf("PUT %s: %s, want 400 with %q", path, resp, w)
					}
				}
			}
		})
	}
	// The largest allowed, three times over, is taken: its sum is exact.
	mustWrite(t, ts, "PUT", "/v1/jobs", body(task("a", jobs.MaxTaskCPU, jobs.MaxTaskMemoryMB), task("b", jobs.MaxTaskCPU, jobs.MaxTaskMemoryMB), task("c", jobs.MaxTaskCPU, jobs.MaxTaskMemoryMB)))
	if r := getJob(t, ts, "big").TaskGroups[0].Resources(); r.CPU != 3*jobs.MaxTaskCPU || r.MemoryMB != 3*jobs.MaxTaskMemoryMB {
		t.Errorf("group resources %+v", r)
	}
}

// TestJobScalePastCap: on a dev agent (scheduler and a client), scaling a
// group so that the job's groups ask for more than -max-job-allocs is
// refused: no new version, no evaluation, nothing placed.
func TestJobScalePastCap(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1), func(c *server.Config) { c.MaxJobAllocs = 4 })
	c := nomadClient(t, ts, "")
	job := nomadJob("web", 1)
	job.Datacenters = nil
	job.Update = &api.UpdateStrategy{HealthCheck: new("task_states"), MinHealthyTime: new(50 * time.Millisecond)}
	api2 := api.NewTaskGroup("api", 1)
	api2.AddTask(api.NewTask("app", "mock_driver").SetConfig("run_for", "1h"))
	job.AddTaskGroup(api2)
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitScale(t, c, "web", "api", func(s api.TaskGroupScaleStatus) bool { return s.Healthy == 1 })
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, _, err := c.Jobs().LatestDeployment("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil && d.Status == "successful" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	evalsBefore := len(jobEvals(t, ts, "web"))

	resp := ts.Do(t, "PUT", "/v1/job/web/scale", `{"Count":4,"Target":{"Job":"web","Group":"web"},"Message":"more"}`)
	want := "Job asks for 5 allocations in all (the sum of its task groups' Count): at most 4 are allowed (server flag -max-job-allocs)"
	if resp.Status != 400 || !strings.Contains(resp.Body, want) {
		t.Fatalf("scale past the cap: %s, want 400 with %q", resp, want)
	}
	if j := getJob(t, ts, "web"); j.Version != 0 || j.TaskGroups[0].Count != 1 {
		t.Errorf("after the refused scale: version %d count %d", j.Version, j.TaskGroups[0].Count)
	}
	if n := len(jobEvals(t, ts, "web")); n != evalsBefore {
		t.Errorf("%d evaluations after the refused scale, %d before", n, evalsBefore)
	}
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 2 {
		t.Errorf("allocations after the refused scale: %d (%v), want 2", len(allocs), err)
	}
	// Up to the cap is fine.
	if r := mustWrite(t, ts, "PUT", "/v1/job/web/scale", `{"Count":3,"Target":{"Job":"web","Group":"web"}}`); r.EvalID == "" {
		t.Errorf("scale to the cap: %+v", r)
	}
}

// TestScalingEventBounds: a scaling event's Message and Meta are bounded
// (400 naming the field and the limit), and the events kept per group
// are bounded in bytes: 60 events of the largest allowed leave a small
// scale-status answer, newest first.
func TestScalingEventBounds(t *testing.T) {
	ts := startJobs(t)
	mustWrite(t, ts, "PUT", "/v1/jobs", jobBody("web", 1, ""))
	event := func(msg string, meta map[string]any) string {
		b, _ := json.Marshal(map[string]any{"Target": map[string]string{"Job": "web", "Group": "web"}, "Message": msg, "Meta": meta})
		return string(b)
	}
	manyKeys := map[string]any{}
	for i := range jobs.MaxScalingMetaKeys + 1 {
		manyKeys[fmt.Sprintf("k%d", i)] = i
	}
	cases := []struct {
		name, body, want string
	}{
		{"long Message", event(strings.Repeat("m", jobs.MaxScalingMessageBytes+1), nil),
			"scaling event Message is 1025 bytes: at most 1024 are allowed"},
		{"Meta of many keys", event("", manyKeys), "scaling event Meta has 65 keys: at most 64 are allowed"},
		{"large Meta", event("", map[string]any{"reason": strings.Repeat("r", jobs.MaxScalingMetaBytes)}),
			"scaling event Meta is 4109 bytes of JSON: at most 4096 are allowed"},
	}
	for _, c := range cases {
		if resp := ts.Do(t, "PUT", "/v1/job/web/scale", c.body); resp.Status != 400 || !strings.Contains(resp.Body, c.want) {
			t.Errorf("%s: %s, want 400 with %q", c.name, resp, c.want)
		}
	}
	// 60 events, each of the largest Message and nearly the largest Meta.
	for i := range 60 {
		meta := map[string]any{"i": i, "reason": strings.Repeat("r", jobs.MaxScalingMetaBytes-40)}
		mustWrite(t, ts, "PUT", "/v1/job/web/scale", event(fmt.Sprintf("%04d", i)+strings.Repeat("m", jobs.MaxScalingMessageBytes-4), meta))
	}
	resp := ts.Do(t, "GET", "/v1/job/web/scale", "")
	if resp.Status != 200 {
		t.Fatal(resp)
	}
	var st api.JobScaleStatusResponse
	resp.JSON(t, &st)
	events := st.TaskGroups["web"].Events
	if len(events) == 0 || len(events) >= state.JobTrackedScalingEvents || !strings.HasPrefix(events[0].Message, "0059") {
		t.Fatalf("%d events kept, first %.8q", len(events), events[0].Message)
	}
	if len(resp.Body) > state.JobTrackedScalingEventBytes+4096 {
		t.Errorf("scale status is %d bytes", len(resp.Body))
	}
	// Small events are still kept 20 deep (Nomad's number).
	for i := range 25 {
		mustWrite(t, ts, "PUT", "/v1/job/web/scale", event(fmt.Sprintf("small %d", i), nil))
	}
	resp = ts.Do(t, "GET", "/v1/job/web/scale", "")
	resp.JSON(t, &st)
	if n := len(st.TaskGroups["web"].Events); n != state.JobTrackedScalingEvents {
		t.Errorf("%d small events kept, want %d", n, state.JobTrackedScalingEvents)
	}
}
