package http_test

import (
	"encoding/json"
	"testing"
)

// TestJobRegisterDefaults: the defaults Nomad fills at register, read back
// raw: a priority of 0 (or none) is 50, the job's evaluation's too
// (jobCanonicalizer); no datacenters, or an empty list, are ["*"]
// (Job.Canonicalize); what is given is kept.
func TestJobRegisterDefaults(t *testing.T) {
	ts := startJobs(t)
	cases := []struct {
		id, extra, priority, datacenters string
	}{
		{"omitted", ``, `50`, `["*"]`},
		{"zero-and-empty", `,"Priority":0,"Datacenters":[]`, `50`, `["*"]`},
		{"null-datacenters", `,"Priority":0,"Datacenters":null`, `50`, `["*"]`},
		{"given", `,"Priority":70,"Datacenters":["dc2","dc1"]`, `70`, `["dc2","dc1"]`},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			w := mustWrite(t, ts, "PUT", "/v1/jobs", jobBody(tc.id, 1, tc.extra))
			resp := ts.Do(t, "GET", "/v1/job/"+tc.id, "")
			if resp.Status != 200 {
				t.Fatalf("read: %s", resp)
			}
			var job map[string]json.RawMessage
			resp.JSON(t, &job)
			if got := string(job["Priority"]); got != tc.priority {
				t.Errorf("Priority = %s, want %s", got, tc.priority)
			}
			if got := string(job["Datacenters"]); got != tc.datacenters {
				t.Errorf("Datacenters = %s, want %s", got, tc.datacenters)
			}
			e := findEval(t, jobEvals(t, ts, tc.id), w.EvalID)
			if want := map[string]int{"50": 50, "70": 70}[tc.priority]; e.Priority != want {
				t.Errorf("evaluation priority %d, want %d", e.Priority, want)
			}
		})
	}
	// Out of range is refused with Nomad 1.6's text.
	resp := ts.Do(t, "PUT", "/v1/jobs", jobBody("neg", 1, `,"Priority":-1`))
	expectError(t, resp, 400, "job priority must be between [1, 100]")
}
