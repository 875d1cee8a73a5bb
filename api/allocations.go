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
	ID                 string `codec:",omitempty"`
	Namespace          string `codec:",omitempty"`
	EvalID             string `codec:",omitempty"`
	Name               string `codec:",omitempty"`
	NodeID             string `codec:",omitempty"`
	NodeName           string `codec:",omitempty"`
	JobID              string `codec:",omitempty"`
	JobVersion         uint64 `codec:",omitempty"`
	TaskGroup          string `codec:",omitempty"`
	Resources          Resources
	DesiredStatus      string `codec:",omitempty"`
	DesiredDescription string `codec:",omitempty"`
	ClientStatus       string `codec:",omitempty"`
	ClientDescription  string `codec:",omitempty"`
	TaskStates         map[string]*TaskState
	DeploymentID       string `codec:",omitempty"`
	DeploymentStatus   *AllocDeploymentStatus
	PreviousAllocation string `codec:",omitempty"`
	NextAllocation     string `codec:",omitempty"`
	FollowupEvalID     string `codec:",omitempty"`
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
	CreateIndex      uint64                  `codec:",omitempty"`
	ModifyIndex      uint64                  `codec:",omitempty"`
	AllocModifyIndex uint64                  `codec:",omitempty"`
	CreateTime       int64                   `codec:",omitempty"`
	ModifyTime       int64                   `codec:",omitempty"`
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
	Field string `codec:",omitempty"`
	Value string `codec:",omitempty"`
	Time  time.Time
}

// RescheduleTracker lists the reschedules that led to an allocation.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent is one reschedule (RescheduleTime in Unix nanoseconds).
type RescheduleEvent struct {
	RescheduleTime int64         `codec:",omitempty"`
	PrevAllocID    string        `codec:",omitempty"`
	PrevNodeID     string        `codec:",omitempty"`
	Delay          time.Duration `codec:",omitempty"`
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
	Canary      bool   `codec:",omitempty"`
	ModifyIndex uint64 `codec:",omitempty"`
}

// IsHealthy and IsUnhealthy read a possibly nil status.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s != nil && s.Healthy != nil && *s.Healthy }
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// TaskState is the state of one task of an allocation.
type TaskState struct {
	State       string `codec:",omitempty"`
	Failed      bool   `codec:",omitempty"`
	Restarts    uint64 `codec:",omitempty"`
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// TaskEvent is one event of a task (Nomad's fields).
type TaskEvent struct {
	Type             string        `codec:",omitempty"`
	Time             int64         `codec:",omitempty"`
	FailsTask        bool          `codec:",omitempty"`
	RestartReason    string        `codec:",omitempty"`
	SetupError       string        `codec:",omitempty"`
	DriverError      string        `codec:",omitempty"`
	KillError        string        `codec:",omitempty"`
	KillReason       string        `codec:",omitempty"`
	DownloadError    string        `codec:",omitempty"`
	ValidationError  string        `codec:",omitempty"`
	FailedSibling    string        `codec:",omitempty"`
	SecretsError     string        `codec:",omitempty"`
	TaskSignalReason string        `codec:",omitempty"`
	TaskSignal       string        `codec:",omitempty"`
	DriverMessage    string        `codec:",omitempty"`
	Message          string        `codec:",omitempty"`
	DisplayMessage   string        `codec:",omitempty"`
	ExitCode         int           `codec:",omitempty"`
	Signal           int           `codec:",omitempty"`
	KillTimeout      time.Duration `codec:",omitempty"`
	StartDelay       int64         `codec:",omitempty"`
	DiskLimit        int64         `codec:",omitempty"`
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
