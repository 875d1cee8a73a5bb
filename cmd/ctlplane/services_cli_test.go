package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// TestCLIServicesAndChecksWalkthrough is the README's "Services and
// checks" walk-through, typed as a new user would: examples/web-checks.hcl
// runs a python3 HTTP server on a dynamic port per allocation behind an
// HTTP check; its deployment succeeds through its checks and
// GET /v1/service/web lists both instances; `alloc status` and `alloc
// checks` show the check results; examples/web-checks-broken.hcl's canary
// checks a path that answers 404, stays unhealthy, the deployment fails
// at its progress deadline and rolls back, and the canary's `alloc
// status` says why.
func TestCLIServicesAndChecksWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed by the README's example: %v", err)
	}
	lo, hi := servertest.DynamicPortRange(t)
	a, ac := devAgent(t, "-min-dynamic-port="+strconv.Itoa(lo), "-max-dynamic-port="+strconv.Itoa(hi))
	addr := "-address=" + a.url
	waitNodes(t, ac, 1)
	mustCode(t, 0, "job", "run", "-detach", addr, "../../examples/web-checks.hcl")
	deployment := func(version uint64, status string) *api.Deployment {
		var d *api.Deployment
		waitFor(t, "deployment of version "+string(rune('0'+version))+" "+status, func() bool {
			ds, _, err := ac.JobDeployments(context.Background(), "web", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range ds {
				if x.JobVersion == version && x.Status == status {
					d = x
				}
			}
			return d != nil
		})
		return d
	}
	deployment(0, "successful")
	services := func() []api.ServiceRegistration {
		resp, err := http.Get(a.url + "/v1/service/web")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var regs []api.ServiceRegistration
		if err := json.NewDecoder(resp.Body).Decode(&regs); err != nil {
			t.Fatal(err)
		}
		return regs
	}
	if regs := services(); len(regs) != 2 || regs[0].Address != "127.0.0.1" || regs[0].Port < lo || regs[0].Port > hi || strings.Join(regs[0].Tags, ",") != "v1" {
		t.Fatalf("GET /v1/service/web: %+v", regs)
	}
	out := mustCode(t, 0, "service", "list", addr)
	if !strings.Contains(out, "Service Name  Namespace  Tags") || !strings.Contains(out, "web           default    [v1]") {
		t.Errorf("service list:\n%s", out)
	}
	out = mustCode(t, 0, "service", "info", addr, "web")
	if !strings.Contains(out, "Job ID  Address") || strings.Count(out, "web     127.0.0.1:") != 2 {
		t.Errorf("service info web:\n%s", out)
	}
	if out := mustCode(t, 0, "service", "info", addr, "nope"); out != "No service registrations found\n" {
		t.Errorf("service info nope: %q", out)
	}
	allocID := allocsOf(t, ac, "web")[0].ID
	st := mustCode(t, 0, "alloc", "status", addr, allocID[:8])
	for _, want := range []string{"Nomad Service Checks:", "web      (group)  alive  healthiness  success  200   nomad: http ok",
		"= healthy\n"} {
		if !strings.Contains(st, want) {
			t.Errorf("alloc status lacks %q:\n%s", want, st)
		}
	}
	out = mustCode(t, 0, "alloc", "checks", addr, allocID[:8])
	for _, want := range []string{"Status of 1 Nomad Service Checks", "Name       = alive", "Status     = success", "StatusCode = 200", "Output     = nomad: http ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("alloc checks lacks %q:\n%s", want, out)
		}
	}

	mustCode(t, 0, "job", "run", "-detach", addr, "../../examples/web-checks-broken.hcl")
	// The canary runs, so it is registered (with its version's tags) while its check fails.
	waitFor(t, "the canary's registration", func() bool {
		regs := services()
		v2 := 0
		for _, r := range regs {
			if strings.Join(r.Tags, ",") == "v2" {
				v2++
			}
		}
		return len(regs) == 3 && v2 == 1
	})
	d := deployment(1, "failed")
	if d.StatusDescription != "Failed due to progress deadline - rolling back to job version 0" {
		t.Fatalf("deployment of version 1: %q", d.StatusDescription)
	}
	var canary string
	for _, s := range allocsOf(t, ac, "web") {
		if s.JobVersion == 1 {
			canary = s.ID
		}
	}
	st = mustCode(t, 0, "alloc", "status", addr, canary[:8])
	for _, want := range []string{"= unhealthy\n", "alive  healthiness  failure  404"} {
		if !strings.Contains(st, want) {
			t.Errorf("the canary's alloc status lacks %q:\n%s", want, st)
		}
	}
	deployment(2, "successful")
	waitFor(t, "two registrations, none of the canary", func() bool {
		regs := services()
		for _, r := range regs {
			if r.AllocID == canary || strings.Join(r.Tags, ",") != "v1" {
				return false
			}
		}
		return len(regs) == 2
	})
}
