package http

import "github.com/ctlplane/ctlplane/state"

// DeploymentService is what the deployments endpoints call (see
// server/deployments). Each operation checks its preconditions (unknown: a
// state.Error with ErrNotFound; terminal or not ready: ErrConflict; bad
// input: ErrInvalid) and writes one Raft entry; accessorID is the caller's
// token, recorded in the deployment's history.
type DeploymentService interface {
	Fail(id, accessorID string) (*state.DeploymentActionResult, error)
	Pause(id string, pause bool, accessorID string) (*state.DeploymentActionResult, error)
	Promote(id string, all bool, groups []string, accessorID string) (*state.DeploymentActionResult, error)
	SetAllocHealth(id string, healthy, unhealthy []string, accessorID string) (*state.DeploymentActionResult, error)
	Unblock(id, accessorID string) (*state.DeploymentActionResult, error)
}
