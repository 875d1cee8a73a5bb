package http

import (
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// DeploymentService is what the deployments endpoints call (see
// server/deployments). Each operation checks the caller (submit-job in the
// deployment's namespace: acl.ErrPermissionDenied) and its preconditions
// (unknown: a state.Error with ErrNotFound; terminal or not ready:
// ErrConflict; bad input: ErrInvalid) and writes one Raft entry; the
// caller's accessor is recorded in the deployment's history.
type DeploymentService interface {
	Fail(caller acl.Caller, id string) (*state.DeploymentActionResult, error)
	Pause(caller acl.Caller, id string, pause bool) (*state.DeploymentActionResult, error)
	Promote(caller acl.Caller, id string, all bool, groups []string) (*state.DeploymentActionResult, error)
	SetAllocHealth(caller acl.Caller, id string, healthy, unhealthy []string) (*state.DeploymentActionResult, error)
	Unblock(caller acl.Caller, id string) (*state.DeploymentActionResult, error)
}
