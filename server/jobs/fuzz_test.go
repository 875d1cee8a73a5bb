package jobs

import (
	"errors"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// FuzzParse (issue 8): the decoder of job register bodies. No input
// panics, every refusal is a 400 (state.ErrInvalid), and a job that parses
// validates again unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		minimal,
		`{"ID":"web","Type":"service","Priority":70,"Datacenters":["dc*"],"Update":{"MaxParallel":2,"Canary":1,"AutoRevert":true},` +
			`"TaskGroups":[{"Name":"g","Count":3,"Update":{"HealthCheck":"task_states","MinHealthyTime":1000000000},` +
			`"RestartPolicy":{"Attempts":1,"Mode":"delay"},"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{"run_for":"1h"},"Resources":{"CPU":10,"MemoryMB":10}}]}]}`,
		`{"ID":"m","Multiregion":{"Regions":[{"Name":"a","Count":1}]},"TaskGroups":[]}`,
		`{"ID":"","TaskGroups":null}`, `{"ID":"x","Priority":-1}`, `[]`, `"job"`, `{`, ``,
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "team")
	}
	f.Fuzz(func(t *testing.T, raw []byte, ns string) {
		job, err := Parse(raw, ns)
		if err != nil {
			var se *state.Error
			if !errors.As(err, &se) || se.Code != state.ErrInvalid {
				t.Fatalf("Parse(%q): %T %v; want a state.ErrInvalid (400)", raw, err, err)
			}
			return
		}
		if job.ID == "" || job.Namespace == "" {
			t.Fatalf("Parse(%q) = a job without ID or namespace: %+v", raw, job)
		}
		if err := Validate(job); err != nil {
			t.Fatalf("Parse(%q) accepted a job that does not validate: %v", raw, err)
		}
	})
}
