package api

import "github.com/ctlplane/ctlplane/state"

// The wire types of nodes and allocations are the server's own, so that
// the two can never disagree on a field.
type (
	Node                  = state.Node
	DriverInfo            = state.DriverInfo
	Resources             = state.Resources
	Allocation            = state.Allocation
	TaskState             = state.TaskState
	TaskEvent             = state.TaskEvent
	AllocDeploymentStatus = state.AllocDeploymentStatus
	AllocClientUpdate     = state.AllocClientUpdate
	ClientAlloc           = state.ClientAlloc
	TaskGroup             = state.TaskGroup
	Task                  = state.Task
	RestartPolicy         = state.RestartPolicy
	UpdateStrategy        = state.UpdateStrategy
)
