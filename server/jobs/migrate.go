package jobs

import "github.com/ctlplane/ctlplane/state"

// ValidateMigrate is Nomad's MigrateStrategy.Validate, its texts and order.
func ValidateMigrate(m *state.MigrateStrategy) []string {
	var errs errList
	if m.MaxParallel < 0 {
		errs.add("MaxParallel must be >= 0 but found %d", m.MaxParallel)
	}
	switch m.HealthCheck {
	case state.MigrateHealthChecks, state.MigrateHealthStates:
	case "":
		if m.MaxParallel > 0 {
			errs.add("Missing HealthCheck")
		}
	default:
		errs.add("Invalid HealthCheck: %q", m.HealthCheck)
	}
	if m.MinHealthyTime < 0 {
		errs.add("MinHealthyTime is %s and must be >= 0", m.MinHealthyTime)
	}
	if m.HealthyDeadline < 0 {
		errs.add("HealthyDeadline is %s and must be >= 0", m.HealthyDeadline)
	}
	if m.MinHealthyTime > m.HealthyDeadline {
		errs.add("MinHealthyTime must be less than HealthyDeadline")
	}
	return errs
}
