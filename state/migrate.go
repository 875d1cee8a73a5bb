package state

import "time"

// Migrate health checks (Nomad's values).
const (
	MigrateHealthChecks = "checks"
	MigrateHealthStates = "task_states"
)

// MigrateStrategy is a group's migrate block: how many of its allocations a
// drain moves at once, and when a replacement counts as healthy.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// DefaultMigrateStrategy is Nomad's default migrate block.
func DefaultMigrateStrategy() *MigrateStrategy {
	return &MigrateStrategy{MaxParallel: 1, HealthCheck: MigrateHealthChecks, MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
}
