package agent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// capsJob is a job body of groups task groups of count allocations each,
// with the task named task.
func capsJob(id string, groups, count int, task string) string {
	var tgs []any
	for i := range groups {
		tgs = append(tgs, map[string]any{"Name": fmt.Sprintf("g%d", i), "Count": count,
			"Tasks": []any{map[string]any{"Name": task, "Driver": "mock_driver", "Config": map[string]any{"run_for": "1h"}}}})
	}
	buf, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": id, "Datacenters": []string{"dc1"}, "TaskGroups": tgs}})
	return string(buf)
}

// Issue 15, finding 5: one small job cannot ask for a million allocations,
// and task names cannot point outside their directory; each a clear 400.
func TestJobCapsOverHTTP(t *testing.T) {
	ts := servertest.Start(t)
	huge := capsJob("huge", 100, 10000, "t")
	if len(huge) > 30<<10 {
		t.Fatalf("the job is %d bytes, meant to be small", len(huge))
	}
	resp := ts.Do(t, http.MethodPut, "/v1/jobs", huge)
	want := "Job asks for 1000000 allocations in all (the sum of its task groups' Count): at most 10000 are allowed (server flag -max-job-allocs)"
	if resp.Status != http.StatusBadRequest || strings.TrimSpace(resp.Body) != want {
		t.Fatalf("100 × 10,000: %s, want 400 %q", resp, want)
	}
	if resp := ts.Do(t, http.MethodGet, "/v1/job/huge", ""); resp.Status != http.StatusNotFound {
		t.Fatalf("the refused job was registered: %s", resp)
	}
	if resp := ts.Do(t, http.MethodGet, "/v1/evaluations", ""); resp.Status != http.StatusOK || strings.TrimSpace(resp.Body) != "[]" {
		t.Fatalf("the refused job made an evaluation: %s", resp)
	}
	for _, name := range []string{"..", ".", "a/b"} {
		resp := ts.Do(t, http.MethodPut, "/v1/jobs", capsJob("dots", 1, 1, name))
		if resp.Status != http.StatusBadRequest || !strings.Contains(resp.Body, "Task "+name+" validation failed: Task name cannot") {
			t.Errorf("task name %q: %s", name, resp)
		}
	}

	// The cap is the agent's to set.
	small := servertest.Start(t, func(c *server.Config) { c.MaxJobAllocs = 5 })
	if resp := small.Do(t, http.MethodPut, "/v1/jobs", capsJob("six", 2, 3, "t")); resp.Status != http.StatusBadRequest ||
		!strings.Contains(resp.Body, "Job asks for 6 allocations in all (the sum of its task groups' Count): at most 5 are allowed") {
		t.Fatalf("6 over a cap of 5: %s", resp)
	}
	if resp := small.Do(t, http.MethodPut, "/v1/jobs", capsJob("five", 1, 5, "t")); resp.Status != http.StatusOK {
		t.Fatalf("5 under a cap of 5: %s", resp)
	}
}
