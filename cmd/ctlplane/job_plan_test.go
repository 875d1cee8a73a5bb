package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// writePlanJob writes a two-allocation mock_driver job file with env PORT.
func writePlanJob(t *testing.T, dir, port string) string {
	t.Helper()
	task := map[string]any{"Name": "app", "Driver": "mock_driver", "Config": map[string]any{"run_for": "1h"},
		"Env": map[string]string{"PORT": port}, "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}
	job := map[string]any{"Job": map[string]any{"ID": "web", "Type": "service",
		"Update":     map[string]any{"MaxParallel": 2, "HealthCheck": "task_states", "MinHealthyTime": int64(100 * time.Millisecond)},
		"TaskGroups": []any{map[string]any{"Name": "web", "Count": 2, "Tasks": []any{task}}}}}
	buf, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "web.json")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// `job plan FILE` prints Nomad's plan output (annotated diff, dry run,
// job modify index) and exits 1 when allocations would be created or
// destroyed, 0 when not; `job run -check-index` takes the plan's index
// and refuses a stale one.
func TestCLIJobPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := servertest.Start(t, servertest.DevNodes(1))
	addr := "-address=" + ts.URL
	ac, err := api.NewClient(api.Config{Address: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	waitNodes(t, ac, 1)
	dir := t.TempDir()
	file := writePlanJob(t, dir, "8080")

	out := mustCode(t, 1, "job", "plan", addr, file)
	for _, want := range []string{
		"+ Job: \"web\"\n+ Task Group: \"web\" (2 create)\n  + Task: \"app\" (forces create)\n\n",
		"Scheduler dry-run:\n- All tasks successfully allocated.\n\n",
		"Job Modify Index: 0\nTo submit the job with version verification run:\n\nctlplane job run -check-index 0 " + file + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan of a new job lacks %q:\n%s", want, out)
		}
	}
	if jobs, _, err := ac.Jobs(context.Background(), nil); err != nil || len(jobs) != 0 {
		t.Fatalf("plan registered something: %v %d", err, len(jobs))
	}

	mustCode(t, 0, "job", "run", "-detach", "-check-index", "0", addr, file)
	waitFor(t, "deployment of version 0 successful", func() bool {
		d, _, err := ac.JobLatestDeployment(context.Background(), "web", nil)
		return err == nil && d != nil && d.Status == "successful"
	})
	job, _, err := ac.Job(context.Background(), "web", nil)
	if err != nil {
		t.Fatal(err)
	}

	file = writePlanJob(t, dir, "9090")
	out = mustCode(t, 1, "job", "plan", addr, file)
	want := "+/- Job: \"web\"\n+/- Task Group: \"web\" (2 create/destroy update)\n  +/- Task: \"app\" (forces create/destroy update)\n" +
		"    +/- Env[PORT]: \"8080\" => \"9090\"\n\nScheduler dry-run:\n- All tasks successfully allocated.\n\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("plan of an Env change:\n%s\nwant prefix:\n%s", out, want)
	}
	index := job.JobModifyIndex
	if !strings.Contains(out, "ctlplane job run -check-index "+itoa(index)+" ") {
		t.Errorf("plan hint lacks index %d:\n%s", index, out)
	}
	if code, _, errOut := ctl("job", "run", "-detach", "-check-index", itoa(index+1), addr, file); code != 1 ||
		!strings.Contains(errOut, "conflicting job modify index") {
		t.Errorf("stale -check-index: %d %s", code, errOut)
	}

	// With the plan's index the new version registers; history -p shows it.
	mustCode(t, 0, "job", "run", "-detach", "-check-index", itoa(index), addr, file)
	hist := mustCode(t, 0, "job", "history", "-p", addr, "web")
	want = "Version     = 1\nStable      = false\nSubmit Date = "
	wantDiff := "Diff        = \n+/- Job: \"web\"\n+/- Task Group: \"web\"\n  +/- Task: \"app\"\n    +/- Env[PORT]: \"8080\" => \"9090\"\n\nVersion     = 0\n"
	if !strings.HasPrefix(hist, want) || !strings.Contains(hist, wantDiff) || strings.Count(hist, "Diff ") != 1 {
		t.Errorf("history -p:\n%s", hist)
	}

	// Back to 8080, unchanged from version 0's spec but not from the current one.
	mustCode(t, 0, "job", "run", "-detach", addr, writePlanJob(t, t.TempDir(), "8080"))
	job = mustJob(t, ac)
	index = job.JobModifyIndex
	waitFor(t, "deployment of the latest version successful", func() bool {
		d, _, err := ac.JobLatestDeployment(context.Background(), "web", nil)
		return err == nil && d != nil && d.JobVersion == job.Version && d.Status == "successful"
	})
	// Unchanged: nothing created or destroyed, exit 0.
	out = mustCode(t, 0, "job", "plan", "-diff=false", addr, writePlanJob(t, t.TempDir(), "8080"))
	if strings.Contains(out, "Job:") || !strings.Contains(out, "Job Modify Index: "+itoa(index)) {
		t.Errorf("plan of the same job:\n%s", out)
	}
	if code, _, errOut := ctl("job", "plan", addr, filepath.Join(dir, "missing.json")); code != 255 || !strings.Contains(errOut, "Error reading job file") {
		t.Errorf("plan of a missing file: %d %s", code, errOut)
	}
}

func mustJob(t *testing.T, ac *api.Client) *api.Job {
	t.Helper()
	job, _, err := ac.Job(context.Background(), "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
