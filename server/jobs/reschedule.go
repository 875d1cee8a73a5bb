package jobs

import (
	"math"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// Nomad's bounds on a reschedule policy.
const (
	ReschedulePolicyMinInterval = 15 * time.Second
	ReschedulePolicyMinDelay    = 5 * time.Second
)

// rescheduleDelayFunctions are the delay functions, in Nomad's order (its
// error text prints them so).
var rescheduleDelayFunctions = [...]string{"constant", "exponential", "fibonacci"}

// ValidateReschedule is Nomad's ReschedulePolicy.Validate, its texts and
// its order (a policy that allows no rescheduling is always valid).
func ValidateReschedule(r *state.ReschedulePolicy) []string {
	if !r.Enabled() {
		return nil
	}
	var errs errList
	if r.Attempts > 0 {
		if r.Interval <= 0 {
			errs.add("Interval must be a non zero value if Attempts > 0")
		}
		if r.Unlimited {
			errs.add("Reschedule Policy with Attempts = %v, Interval = %v, and Unlimited = %v is ambiguous", r.Attempts, r.Interval, r.Unlimited)
			errs.add("If Attempts >0, Unlimited cannot also be set to true")
		}
	}
	delayOK := true
	if r.Delay < ReschedulePolicyMinDelay {
		errs.add("Delay cannot be less than %v (got %v)", ReschedulePolicyMinDelay, r.Delay)
		delayOK = false
	}
	if !validDelayFunction(r.DelayFunction) {
		errs.add("Invalid delay function %q, must be one of %q", r.DelayFunction, rescheduleDelayFunctions)
		delayOK = false
	}
	if r.DelayFunction != "constant" {
		if r.MaxDelay < ReschedulePolicyMinDelay {
			// Nomad prints the Delay here, not the MaxDelay.
			errs.add("Max Delay cannot be less than %v (got %v)", ReschedulePolicyMinDelay, r.Delay)
			delayOK = false
		}
		if r.MaxDelay < r.Delay {
			errs.add("Max Delay cannot be less than Delay %v (got %v)", r.Delay, r.MaxDelay)
			delayOK = false
		}
	}
	if !r.Unlimited {
		if r.Interval < ReschedulePolicyMinInterval {
			errs.add("Interval cannot be less than %v (got %v)", ReschedulePolicyMinInterval, r.Interval)
		}
		if delayOK {
			errs = append(errs, validateDelayParams(r)...)
		}
	}
	return errs
}

func validDelayFunction(f string) bool {
	for _, v := range rescheduleDelayFunctions {
		if v == f {
			return true
		}
	}
	return false
}

// validateDelayParams says when Attempts cannot fit in Interval with the
// delays the policy makes (Nomad's validateDelayParams).
func validateDelayParams(r *state.ReschedulePolicy) []string {
	ok, possible, recommended := viableAttempts(r)
	if ok {
		return nil
	}
	var errs errList
	if r.DelayFunction == "constant" {
		errs.add("Nomad can only make %v attempts in %v with initial delay %v and delay function %q", possible, r.Interval, r.Delay, r.DelayFunction)
	} else {
		errs.add("Nomad can only make %v attempts in %v with initial delay %v, delay function %q, and delay ceiling %v", possible, r.Interval, r.Delay, r.DelayFunction, r.MaxDelay)
	}
	errs.add("Set the interval to at least %v to accommodate %v attempts", recommended.Round(time.Second), r.Attempts)
	return errs
}

// viableAttempts is Nomad's: whether the attempts fit, how many do, and
// the interval that would fit them all.
func viableAttempts(r *state.ReschedulePolicy) (bool, int, time.Duration) {
	var possible int
	var recommended time.Duration
	valid := true
	switch r.DelayFunction {
	case "constant":
		recommended = time.Duration(r.Attempts) * r.Delay
		if r.Interval < recommended {
			possible = int(r.Interval / r.Delay)
			valid = false
		}
	case "exponential":
		for i := 0; i < r.Attempts; i++ {
			next := time.Duration(math.Pow(2, float64(i))) * r.Delay
			if next > r.MaxDelay {
				next = r.MaxDelay
				recommended += next
			} else {
				recommended = next
			}
			if recommended < r.Interval {
				possible++
			}
		}
		if possible < r.Attempts {
			valid = false
		}
	case "fibonacci":
		slots := []time.Duration{r.Delay, r.Delay}
		ceiling := false
		for i := 2; i < r.Attempts; i++ {
			var next time.Duration
			if ceiling {
				next = slots[i-1] + r.MaxDelay
			} else {
				next = slots[i-1] + slots[i-2]
				if next > r.MaxDelay {
					next = r.MaxDelay
					ceiling = true
				}
			}
			slots = append(slots, next)
		}
		recommended = slots[len(slots)-1]
		if r.Interval < recommended {
			valid = false
			for i, s := range slots {
				if s > r.Interval {
					possible = i
					break
				}
			}
		}
	default:
		return false, 0, 0
	}
	return valid, max(possible, 0), recommended
}
