package api

import (
	"context"
	"net/url"
	"time"
)

// Allocation statuses (Nomad's values).
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"

	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	AllocClientStatusUnknown  = "unknown"
)

// Task states and task event types (Nomad's values).
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"

	TaskReceived          = "Received"
	TaskSetup             = "Task Setup"
	TaskStarted           = "Started"
	TaskTerminated        = "Terminated"
	TaskRestarting        = "Restarting"
	TaskNotRestarting     = "Not Restarting"
	TaskKilling           = "Killing"
	TaskKilled            = "Killed"
	TaskDriverFailure     = "Driver Failure"
	TaskSiblingFailed     = "Sibling Task Failed"
	TaskAllocUnhealthy    = "Alloc Unhealthy"
	TaskFailedValidation  = "Failed Validation"
	TaskSetupFailure      = "Setup Failure"
	TaskRestartSignal     = "Restart Signaled"
	TaskLeaderDead        = "Leader Task Dead"
	TaskClientReconnected = "Reconnected"
)

// Allocation is one placement of a task group on a node, as GET
// /v1/allocation/:id answers.
type Allocation struct {
	ID                 string
	Namespace          string
	EvalID             string
	Name               string
	NodeID             string
	NodeName           string
	JobID              string
	JobVersion         uint64
	TaskGroup          string
	Resources          Resources
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	DeploymentID       string
	DeploymentStatus   *AllocDeploymentStatus
	PreviousAllocation string
	NextAllocation     string
	FollowupEvalID     string
	RescheduleTracker  *RescheduleTracker
	DesiredTransition  DesiredTransition
	Metrics            *AllocationMetric
	// AllocatedResources is Nomad's view of what the allocation got
	// (GET /v1/allocation/:id): the group's network and host ports.
	AllocatedResources *AllocatedResources `json:",omitempty"`
	// AllocatedPorts are the same ports as the client protocol
	// (/v1/client/allocations) sends them.
	AllocatedPorts []PortMapping `json:",omitempty"`
	// AllocStates are the servers' changes of its client status.
	AllocStates []*AllocState `json:",omitempty"`
	// CheckResults are the latest results of its service checks by check ID.
	CheckResults     map[string]*CheckResult `json:",omitempty"`
	CreateIndex      uint64
	ModifyIndex      uint64
	AllocModifyIndex uint64
	CreateTime       int64
	ModifyTime       int64
}

// AllocatedResources is Nomad's AllocatedResources, the shared part.
type AllocatedResources struct {
	Shared AllocatedSharedResources
}

// AllocatedSharedResources are the resources the group's tasks share.
type AllocatedSharedResources struct {
	DiskMB   int
	Networks []*NetworkResource
	Ports    []PortMapping
}

// NetworkResource is Nomad's NetworkResource as an allocation got it.
type NetworkResource struct {
	Mode          string
	IP            string
	ReservedPorts []Port
	DynamicPorts  []Port
}

// Port is one port of a network block (Value: the host port).
type Port struct {
	Label       string
	Value       int
	To          int
	HostNetwork string
}

// PortMapping is Nomad's AllocatedPortMapping: a host port an allocation
// holds on its node.
type PortMapping struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// AllocState is one change the servers made to an allocation's field
// (Field "ClientStatus": unknown, running again, lost).
type AllocState struct {
	Field string
	Value string
	Time  time.Time
}

// RescheduleTracker lists the reschedules that led to an allocation.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent is one reschedule (RescheduleTime in Unix nanoseconds).
type RescheduleEvent struct {
	RescheduleTime int64
	PrevAllocID    string
	PrevNodeID     string
	Delay          time.Duration
}

// DesiredTransition is what the servers want to happen to an allocation
// beyond its desired status.
type DesiredTransition struct {
	Migrate         *bool
	Reschedule      *bool
	ForceReschedule *bool
}

// TerminalStatus: the servers want the allocation stopped, or it ended.
func (a *Allocation) TerminalStatus() bool {
	switch a.DesiredStatus {
	case AllocDesiredStatusStop, AllocDesiredStatusEvict:
		return true
	}
	return a.ClientTerminalStatus()
}

// ClientTerminalStatus: the client reported the allocation ended.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// AllocationListStub is an allocation as the deployment, job and
// evaluation allocation lists show it.
type AllocationListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobVersion         uint64
	TaskGroup          string
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	DeploymentStatus   *AllocDeploymentStatus
	FollowupEvalID     string
	NextAllocation     string
	PreviousAllocation string
	RescheduleTracker  *RescheduleTracker
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// AllocDeploymentStatus is an allocation's health in its deployment.
type AllocDeploymentStatus struct {
	// Healthy is nil until health is known.
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// IsHealthy and IsUnhealthy read a possibly nil status.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s != nil && s.Healthy != nil && *s.Healthy }
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// TaskState is the state of one task of an allocation.
type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// TaskEvent is one event of a task (Nomad's fields).
type TaskEvent struct {
	Type             string
	Time             int64
	FailsTask        bool
	RestartReason    string
	SetupError       string
	DriverError      string
	KillError        string
	KillReason       string
	DownloadError    string
	ValidationError  string
	FailedSibling    string
	SecretsError     string
	TaskSignalReason string
	TaskSignal       string
	DriverMessage    string
	Message          string
	DisplayMessage   string
	ExitCode         int
	Signal           int
	KillTimeout      time.Duration
	StartDelay       int64
	DiskLimit        int64
}

// Allocations lists allocations (Params: namespace, prefix).
func (c *Client) Allocations(ctx context.Context, q *QueryOptions) ([]*Allocation, *QueryMeta, error) {
	var out []*Allocation
	meta, err := c.query(ctx, "/v1/allocations", q, &out)
	return out, meta, err
}

// Allocation reads one allocation.
func (c *Client) Allocation(ctx context.Context, id string, q *QueryOptions) (*Allocation, *QueryMeta, error) {
	var out Allocation
	meta, err := c.query(ctx, "/v1/allocation/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
