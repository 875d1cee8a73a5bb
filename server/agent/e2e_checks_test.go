package agent_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	nomadapi "github.com/hashicorp/nomad/api"
)

// python3Path is the absolute path of the python3 the tests run (its
// shim, if any, may need more of the environment than a task gets).
func python3Path(t *testing.T) string {
	t.Helper()
	skipProcessInShort(t)
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3 is needed by this test: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// checkedWebJob is a job whose task serves HTTP on a dynamic port
// (${NOMAD_PORT_http} interpolated in args), registered as service web
// with an HTTP check of path; version is in the task's env, so that a
// new version replaces the allocations. Its reschedule policy allows no
// attempt, so an unhealthy allocation fails its deployment at once (Nomad's
// shouldFailEarly), long before the progress deadline.
func checkedWebJob(python, path, version string) string {
	return fmt.Sprintf(`{"Job":{"ID":"web","Datacenters":["dc1"],`+
		`"Update":{"MaxParallel":1,"Canary":1,"MinHealthyTime":500000000,"HealthyDeadline":5000000000,"ProgressDeadline":60000000000,"AutoRevert":true,"AutoPromote":true},`+
		`"TaskGroups":[{"Name":"web","Count":2,"Networks":[{"DynamicPorts":[{"Label":"http"}]}],`+
		`"ReschedulePolicy":{"Attempts":0,"Unlimited":false},`+
		`"Services":[{"Name":"web","PortLabel":"http","Provider":"nomad","Checks":[{"Name":"alive","Type":"http","Path":%q,"Interval":1000000000,"Timeout":1000000000}]}],`+
		`"Tasks":[{"Name":"srv","Driver":"raw_exec","KillTimeout":1000000000,"Env":{"VERSION":%q},`+
		`"Config":{"command":%q,"args":["-m","http.server","--bind","127.0.0.1","${NOMAD_PORT_http}"]}}]}]}}`, path, version, python)
}

// TestChecksCanaryRollbackEndToEnd is the README's walk-through on a dev
// agent: version 0 of a real HTTP service behind a check becomes healthy
// through its checks and is registered with its addresses; version 1's
// canary checks a path that answers 404, never becomes healthy, the
// deployment fails at its healthy deadline (no reschedule attempt left) and
// auto_revert rolls back to version 0; GET /v1/service/web then lists
// exactly the live instances, and the canary's check results say why (404).
func TestChecksCanaryRollbackEndToEnd(t *testing.T) {
	python := python3Path(t)
	ts := devAgent(t)
	nc := nomadClient(t, ts.URL)
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", checkedWebJob(python, "/", "1")); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	t.Cleanup(func() { ts.Do(t, http.MethodDelete, "/v1/job/web?purge=true", "") })
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	regs := waitServices(t, nc, "web", 2)
	v0 := map[string]bool{}
	for _, a := range allocs(t, ts) {
		if a.ClientStatus != "running" || !a.DeploymentStatus.IsHealthy() {
			t.Fatalf("version 0 allocation %s: %s healthy=%v", a.ID, a.ClientStatus, a.DeploymentStatus)
		}
		v0[a.ID] = true
		checks, err := nc.Allocations().Checks(a.ID, nil)
		if err != nil {
			t.Fatalf("Allocations().Checks: %v", err)
		}
		if len(checks) != 1 {
			t.Fatalf("checks of %s: %+v", a.ID, checks)
		}
		for id, c := range checks {
			if c.ID != id || c.Check != "alive" || c.Group != "web" || c.Service != "web" || c.Status != "success" ||
				c.StatusCode != 200 || c.Output != "nomad: http ok" || c.Mode != "healthiness" || c.Timestamp == 0 {
				t.Fatalf("check result %+v", c)
			}
		}
	}
	assertRegistered(t, ts, regs)

	// Version 1 checks a path the server answers 404: its canary never
	// becomes healthy; the deployment fails and rolls back to version 0.
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", checkedWebJob(python, "/missing", "2")); r.Status != http.StatusOK {
		t.Fatalf("register v1: %s", r)
	}
	d1 := waitDeployment(t, ts, 1, "failed", status(state.DeploymentStatusFailed))
	if d1.StatusDescription != "Failed due to unhealthy allocations - rolling back to job version 0" {
		t.Fatalf("deployment of version 1: %s", d1.StatusDescription)
	}
	var canary *state.Allocation
	for _, a := range allocs(t, ts) {
		if a.JobVersion == 1 {
			canary = a
		}
	}
	if canary == nil || canary.DeploymentStatus == nil || !canary.DeploymentStatus.Canary || !canary.DeploymentStatus.IsUnhealthy() {
		t.Fatalf("the canary: %+v", canary)
	}
	checks, err := nc.Allocations().Checks(canary.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Status != "failure" || c.StatusCode != 404 || !strings.Contains(c.Output, "404") {
			t.Fatalf("the canary's check: %+v", c)
		}
	}
	waitDeployment(t, ts, 2, "successful", status(state.DeploymentStatusSuccessful))
	waitLive(t, ts, map[uint64]int{2: 2})
	regs = waitServices(t, nc, "web", 2)
	for _, r := range regs {
		if !v0[r.AllocID] {
			t.Fatalf("registration %+v is not of a version 0 allocation (kept by the rollback)", r)
		}
	}
	assertRegistered(t, ts, regs)
}

// assertRegistered: the registrations are exactly the live allocations'
// host addresses, and each answers HTTP there.
func assertRegistered(t *testing.T, ts *servertest.TestServer, regs []*nomadapi.ServiceRegistration) {
	t.Helper()
	var want, got []string
	for _, stub := range allocs(t, ts) {
		if stub.TerminalStatus() {
			continue
		}
		var a struct {
			AllocatedResources struct {
				Shared struct{ Ports []state.AllocatedPort }
			}
		}
		ts.Do(t, http.MethodGet, "/v1/allocation/"+stub.ID, "").JSON(t, &a)
		for _, p := range a.AllocatedResources.Shared.Ports {
			want = append(want, fmt.Sprintf("%s %s:%d", stub.ID, p.HostIP, p.Value))
		}
	}
	for _, r := range regs {
		got = append(got, fmt.Sprintf("%s %s:%d", r.AllocID, r.Address, r.Port))
		resp, err := http.Get(fmt.Sprintf("http://%s:%d/", r.Address, r.Port))
		if err != nil {
			t.Fatalf("instance %s: %v", r.ID, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("instance %s answers %d", r.ID, resp.StatusCode)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("registered %v, live %v", got, want)
	}
}

// TestCheckRestartEndToEnd: a TCP check of a port nothing listens on
// (the mock driver runs nothing) fails; after check_restart's limit of
// consecutive failures its task is restarted with Nomad's event, the
// failure is reported with the dial error, and a group without
// health_check = checks still becomes healthy by its task states.
func TestCheckRestartEndToEnd(t *testing.T) {
	ts := devAgent(t)
	nc := nomadClient(t, ts.URL)
	job := `{"Job":{"ID":"web","Datacenters":["dc1"],` +
		`"Update":{"MaxParallel":1,"HealthCheck":"task_states","MinHealthyTime":0,"HealthyDeadline":60000000000},` +
		`"TaskGroups":[{"Name":"g","Count":1,"Networks":[{"DynamicPorts":[{"Label":"db"}]}],` +
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{},` +
		`"Services":[{"Name":"db","PortLabel":"db","Provider":"nomad","Checks":[{"Name":"tcp","Type":"tcp","Interval":1000000000,"Timeout":1000000000,` +
		`"CheckRestart":{"Limit":2,"Grace":0}}]}]}]}]}}`
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", job); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	deadline := time.Now().Add(30 * time.Second)
	for {
		as := allocs(t, ts)
		if len(as) != 1 {
			t.Fatalf("allocations: %d", len(as))
		}
		var a nomadapi.Allocation
		ts.Do(t, http.MethodGet, "/v1/allocation/"+as[0].ID, "").JSON(t, &a)
		ev := ""
		if st := a.TaskStates["t"]; st != nil {
			for _, e := range st.Events {
				if e.Type == "Restart Signaled" {
					ev = e.RestartReason
				}
			}
			if ev != "" {
				if ev != `healthcheck: check "tcp" unhealthy` || st.Restarts < 1 {
					t.Fatalf("restart event %q, restarts %d", ev, st.Restarts)
				}
				checks, err := nc.Allocations().Checks(a.ID, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range checks {
					if c.Status != "failure" || c.Task != "t" || !strings.Contains(c.Output, "connection refused") {
						t.Fatalf("check result %+v", c)
					}
				}
				if len(checks) != 1 {
					t.Fatalf("checks %+v", checks)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			checks, _ := nc.Allocations().Checks(a.ID, nil)
			t.Fatalf("the task was not restarted by its check: %+v; checks %+v; services %+v", a.TaskStates["t"], checks, a.Job.TaskGroups[0].Tasks[0].Services[0].Checks[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReadinessCheckDoesNotDecideHealth: with health_check = "checks", a
// check with on_update = "ignore" (a readiness check) that fails does not
// keep the allocation from becoming healthy; its result says readiness.
// A healthiness check that fails does, until the healthy deadline.
func TestReadinessCheckDoesNotDecideHealth(t *testing.T) {
	ts := devAgent(t)
	nc := nomadClient(t, ts.URL)
	job := func(onUpdate string) string {
		return `{"Job":{"ID":"web","Datacenters":["dc1"],` +
			`"Update":{"MaxParallel":1,"HealthCheck":"checks","MinHealthyTime":0,"HealthyDeadline":2000000000,"ProgressDeadline":0},` +
			`"TaskGroups":[{"Name":"g","Count":1,"Networks":[{"DynamicPorts":[{"Label":"db"}]}],` +
			`"Services":[{"Name":"db","PortLabel":"db","Provider":"nomad","Checks":[{"Name":"tcp","Type":"tcp","Interval":1000000000,"Timeout":1000000000,` +
			`"OnUpdate":"` + onUpdate + `"}]}],` +
			`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{},"Env":{"V":"` + onUpdate + `"}}]}]}}`
	}
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", job("ignore")); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	a := allocs(t, ts)[0]
	checks, err := nc.Allocations().Checks(a.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Mode != "readiness" || c.Status != "failure" {
			t.Fatalf("readiness check %+v", c)
		}
	}
	if len(checks) != 1 {
		t.Fatalf("checks %+v", checks)
	}

	// The same check deciding health: the new allocation is unhealthy at
	// its deadline, and the deployment (no progress deadline) fails.
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", job("require_healthy")); r.Status != http.StatusOK {
		t.Fatalf("register v1: %s", r)
	}
	d := waitDeployment(t, ts, 1, "failed", status(state.DeploymentStatusFailed))
	if d.StatusDescription != "Failed due to unhealthy allocations" {
		t.Fatalf("deployment of version 1: %q", d.StatusDescription)
	}
	for _, x := range allocs(t, ts) {
		if x.JobVersion == 1 && !x.DeploymentStatus.IsUnhealthy() {
			t.Fatalf("version 1 allocation %s: %+v", x.ID, x.DeploymentStatus)
		}
	}
}
