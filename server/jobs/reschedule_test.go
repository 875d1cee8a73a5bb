package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// The reschedule block: the service default, merged field by field with
// the job's block and then the group's, as Nomad's client canonicalizes it.
func TestRescheduleCanonical(t *testing.T) {
	for _, c := range []struct {
		name, job, group string
		want             state.ReschedulePolicy
	}{
		{"service default", "", "", state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}},
		{"job block over the default", `"Reschedule":{"Delay":10000000000,"DelayFunction":"constant"}`, "",
			state.ReschedulePolicy{Delay: 10 * time.Second, DelayFunction: "constant", MaxDelay: time.Hour, Unlimited: true}},
		{"group block over the job's", `"Reschedule":{"Delay":10000000000,"DelayFunction":"constant"}`, `"ReschedulePolicy":{"Attempts":3,"Interval":3600000000000,"Unlimited":false}`,
			state.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 10 * time.Second, DelayFunction: "constant", MaxDelay: time.Hour}},
		{"attempts zero and not unlimited: no rescheduling", "", `"ReschedulePolicy":{"Attempts":0,"Unlimited":false}`,
			state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour}},
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
		if got := job.TaskGroups[0].ReschedulePolicy; got == nil || *got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Nomad's ReschedulePolicy.Validate, text for text.
func TestRescheduleValidate(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name   string
		policy state.ReschedulePolicy
		want   []string
	}{
		{"disabled is always valid", state.ReschedulePolicy{Delay: 1}, nil},
		{"the service default", state.ReschedulePolicy{Delay: 30 * s, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}, nil},
		{"delay below 5s", state.ReschedulePolicy{Delay: 2 * s, DelayFunction: "constant", Unlimited: true},
			[]string{"Delay cannot be less than 5s (got 2s)"}},
		{"unknown delay function", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "linear", MaxDelay: time.Minute, Unlimited: true},
			[]string{`Invalid delay function "linear", must be one of ["constant" "exponential" "fibonacci"]`}},
		{"max delay below 5s prints the delay", state.ReschedulePolicy{Delay: 5 * s, DelayFunction: "exponential", MaxDelay: 1 * s, Unlimited: true},
			[]string{"Max Delay cannot be less than 5s (got 5s)", "Max Delay cannot be less than Delay 5s (got 1s)"}},
		{"attempts without interval", state.ReschedulePolicy{Attempts: 2, Delay: 5 * s, DelayFunction: "constant"},
			[]string{"Interval must be a non zero value if Attempts > 0", "Interval cannot be less than 15s (got 0s)",
				`Nomad can only make 0 attempts in 0s with initial delay 5s and delay function "constant"`, "Set the interval to at least 10s to accommodate 2 attempts"}},
		{"attempts and unlimited", state.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 5 * s, DelayFunction: "constant", Unlimited: true},
			[]string{"Reschedule Policy with Attempts = 2, Interval = 1h0m0s, and Unlimited = true is ambiguous", "If Attempts >0, Unlimited cannot also be set to true"}},
		{"attempts do not fit, exponential", state.ReschedulePolicy{Attempts: 5, Interval: time.Minute, Delay: 10 * s, DelayFunction: "exponential", MaxDelay: time.Hour},
			[]string{`Nomad can only make 3 attempts in 1m0s with initial delay 10s, delay function "exponential", and delay ceiling 1h0m0s`, "Set the interval to at least 2m40s to accommodate 5 attempts"}},
		{"attempts fit, fibonacci", state.ReschedulePolicy{Attempts: 4, Interval: time.Hour, Delay: 5 * s, DelayFunction: "fibonacci", MaxDelay: time.Minute}, nil},
	} {
		got := ValidateReschedule(&c.policy)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
	// Through the job: the group's errors under its name.
	_, err := Parse([]byte(`{"ID":"web","TaskGroups":[{"Name":"g","ReschedulePolicy":{"Delay":1000000000},"Tasks":[{"Name":"t","Driver":"d"}]}]}`), "")
	if err == nil || !strings.Contains(err.Error(), "Task group g validation failed: Delay cannot be less than 5s (got 1s)") {
		t.Errorf("job with a 1s delay: %v", err)
	}
}
