package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// The migrate block: Nomad's default, merged field by field with the job's
// block and then the group's, as Nomad's client canonicalizes it.
func TestMigrateCanonical(t *testing.T) {
	def := state.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
	for _, c := range []struct {
		name, job, group string
		want             state.MigrateStrategy
	}{
		{"service default", "", "", def},
		{"job block over the default", `"Migrate":{"MaxParallel":2,"HealthCheck":"task_states"}`, "",
			state.MigrateStrategy{MaxParallel: 2, HealthCheck: "task_states", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}},
		{"group block over the job's", `"Migrate":{"MaxParallel":2,"HealthCheck":"task_states"}`, `"Migrate":{"MaxParallel":3,"MinHealthyTime":1000000000}`,
			state.MigrateStrategy{MaxParallel: 3, HealthCheck: "task_states", MinHealthyTime: time.Second, HealthyDeadline: 5 * time.Minute}},
		{"Nomad's canonicalized default", "", `"Migrate":{"MaxParallel":1,"HealthCheck":"checks","MinHealthyTime":10000000000,"HealthyDeadline":300000000000}`, def},
	} {
		sep := func(s string) string {
			if s == "" {
				return ""
			}
			return "," + s
		}
		body := `{"ID":"web"` + sep(c.job) + `,"TaskGroups":[{"Name":"g"` + sep(c.group) + `,"Tasks":[{"Name":"t","Driver":"d"}]}]}`
		job, err := Parse([]byte(body), "")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := job.TaskGroups[0].Migrate; got == nil || *got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Nomad's MigrateStrategy.Validate, text for text.
func TestMigrateValidate(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name string
		m    state.MigrateStrategy
		want []string
	}{
		{"the default", *state.DefaultMigrateStrategy(), nil},
		{"max parallel zero without a check", state.MigrateStrategy{}, nil},
		{"negative max parallel", state.MigrateStrategy{MaxParallel: -1, HealthCheck: "checks"}, []string{"MaxParallel must be >= 0 but found -1"}},
		{"missing health check", state.MigrateStrategy{MaxParallel: 1}, []string{"Missing HealthCheck"}},
		{"unknown health check", state.MigrateStrategy{MaxParallel: 1, HealthCheck: "manual"}, []string{`Invalid HealthCheck: "manual"`}},
		{"negative times", state.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: -s, HealthyDeadline: -2 * s},
			[]string{"MinHealthyTime is -1s and must be >= 0", "HealthyDeadline is -2s and must be >= 0", "MinHealthyTime must be less than HealthyDeadline"}},
		{"min healthy time over the deadline", state.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 20 * s, HealthyDeadline: 10 * s},
			[]string{"MinHealthyTime must be less than HealthyDeadline"}},
	} {
		got := ValidateMigrate(&c.m)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	// Through a registration: the group's prefix, as every group error.
	_, err := Parse([]byte(`{"ID":"web","TaskGroups":[{"Name":"g","Migrate":{"HealthCheck":"manual"},"Tasks":[{"Name":"t","Driver":"d"}]}]}`), "")
	if err == nil || err.Error() != `Task group g validation failed: Invalid HealthCheck: "manual"` {
		t.Fatalf("got %v", err)
	}
}
