package api

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Job types and statuses (Nomad's values).
const (
	JobTypeService = "service"

	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Health check modes of an update strategy.
const (
	UpdateHealthChecks     = "checks"
	UpdateHealthTaskStates = "task_states"
	UpdateHealthManual     = "manual"
)

// Job is a job in Nomad's JSON job format (Go field names, durations in
// nanoseconds), as GET /v1/job/:id answers and PUT /v1/jobs takes. Fields
// whose zero value is never valid (Name, Type, Priority, Stagger,
// HealthCheck, HealthyDeadline, Mode) are left out when zero, so that the
// servers apply Nomad's defaults, as Nomad's client does.
type Job struct {
	Region      string
	Namespace   string
	ID          string
	Name        string `json:",omitempty"`
	Type        string `json:",omitempty"`
	Priority    int    `json:",omitempty"`
	Datacenters []string
	NodePool    string `json:",omitempty"`
	Meta        map[string]string
	Update      *UpdateStrategy
	Multiregion *Multiregion
	TaskGroups  []*TaskGroup

	Stop              bool
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64

	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
}

// UpdateStrategy is a job's or group's update block.
type UpdateStrategy struct {
	Stagger          time.Duration `json:",omitempty"`
	MaxParallel      int
	HealthCheck      string `json:",omitempty"`
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration `json:",omitempty"`
	ProgressDeadline time.Duration
	AutoRevert       bool
	AutoPromote      bool
	Canary           int
}

// Multiregion is Nomad's multiregion block.
type Multiregion struct {
	Strategy *MultiregionStrategy
	Regions  []*MultiregionRegion
}

// MultiregionStrategy is Nomad's multiregion strategy block.
type MultiregionStrategy struct {
	MaxParallel int
	OnFailure   string
}

// MultiregionRegion is one region of a multiregion job.
type MultiregionRegion struct {
	Name        string
	Count       *int
	Datacenters []string
	Meta        map[string]string
}

// TaskGroup is a set of tasks placed together as one allocation.
type TaskGroup struct {
	Name          string
	Count         int
	Update        *UpdateStrategy
	RestartPolicy *RestartPolicy
	// ReschedulePolicy: how failed allocations of the group are replaced.
	ReschedulePolicy *ReschedulePolicy
	// MaxClientDisconnect: how long allocations on a disconnected node
	// stay unknown before they are lost.
	MaxClientDisconnect *time.Duration `json:",omitempty"`
	Meta                map[string]string
	Tasks               []*Task
	Services            []*Service `json:",omitempty"`
}

// ReschedulePolicy says how the scheduler replaces failed allocations.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// RestartPolicy says how a task that exits is restarted in place.
type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string `json:",omitempty"`
}

// Task is one unit of work run by a driver.
type Task struct {
	Name        string
	Driver      string
	Config      map[string]any
	Env         map[string]string
	Meta        map[string]string
	Resources   *Resources
	KillTimeout time.Duration
	KillSignal  string
	Services    []*Service `json:",omitempty"`
}

// Resources a task asks for (or a node offers).
type Resources struct {
	CPU      int
	MemoryMB int
}

// JobListStub is an entry of GET /v1/jobs.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	Version           uint64
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Meta              map[string]string `json:",omitempty"`
}

// JobRegisterRequest is the body of PUT /v1/jobs.
type JobRegisterRequest struct {
	Job            *Job
	EnforceIndex   bool `json:",omitempty"`
	JobModifyIndex uint64
	PreserveCounts bool `json:",omitempty"`
	EvalPriority   int  `json:",omitempty"`
}

// JobRegisterResponse answers a register, a deregister or a revert.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	Index           uint64
}

// JobDeregisterResponse answers DELETE /v1/job/:id.
type JobDeregisterResponse = JobRegisterResponse

// JobVersionsResponse answers GET /v1/job/:id/versions (newest first).
type JobVersionsResponse struct {
	Versions []*Job
	Diffs    []any
}

// JobStabilityResponse answers PUT /v1/job/:id/stable.
type JobStabilityResponse struct {
	JobModifyIndex uint64
	Index          uint64
}

func jobPath(id, suffix string) string { return "/v1/job/" + url.PathEscape(id) + suffix }

// Jobs lists jobs (Params: namespace, prefix).
func (c *Client) Jobs(ctx context.Context, q *QueryOptions) ([]*JobListStub, *QueryMeta, error) {
	var out []*JobListStub
	meta, err := c.query(ctx, "/v1/jobs", q, &out)
	return out, meta, err
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id string, q *QueryOptions) (*Job, *QueryMeta, error) {
	var out Job
	meta, err := c.query(ctx, jobPath(id, ""), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// RegisterJob registers a new version of a job.
func (c *Client) RegisterJob(ctx context.Context, job *Job) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	if err := c.write(ctx, "PUT", "/v1/jobs", &JobRegisterRequest{Job: job}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RegisterJobJSON registers a job given as Nomad's JSON job (either the
// job object or {"Job": {...}}), keeping fields this client does not know.
func (c *Client) RegisterJobJSON(ctx context.Context, body []byte) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	if err := c.write(ctx, "PUT", "/v1/jobs", json.RawMessage(body), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeregisterJob stops a job (purge: also deletes it).
func (c *Client) DeregisterJob(ctx context.Context, id string, purge bool) (*JobDeregisterResponse, error) {
	var out JobDeregisterResponse
	path := jobPath(id, "")
	if purge {
		path += "?purge=true"
	}
	if err := c.write(ctx, "DELETE", path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// JobVersions lists a job's versions, newest first.
func (c *Client) JobVersions(ctx context.Context, id string, q *QueryOptions) ([]*Job, *QueryMeta, error) {
	var out JobVersionsResponse
	meta, err := c.query(ctx, jobPath(id, "/versions"), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out.Versions, meta, nil
}

// JobDeployments lists a job's deployments.
func (c *Client) JobDeployments(ctx context.Context, id string, q *QueryOptions) ([]*Deployment, *QueryMeta, error) {
	var out []*Deployment
	meta, err := c.query(ctx, jobPath(id, "/deployments"), q, &out)
	return out, meta, err
}

// JobLatestDeployment reads a job's latest deployment (nil: none).
func (c *Client) JobLatestDeployment(ctx context.Context, id string, q *QueryOptions) (*Deployment, *QueryMeta, error) {
	var out *Deployment
	meta, err := c.query(ctx, jobPath(id, "/deployment"), q, &out)
	return out, meta, err
}

// JobAllocations lists a job's allocations.
func (c *Client) JobAllocations(ctx context.Context, id string, q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var out []*AllocationListStub
	meta, err := c.query(ctx, jobPath(id, "/allocations"), q, &out)
	return out, meta, err
}

// JobEvaluations lists a job's evaluations.
func (c *Client) JobEvaluations(ctx context.Context, id string, q *QueryOptions) ([]*Evaluation, *QueryMeta, error) {
	var out []*Evaluation
	meta, err := c.query(ctx, jobPath(id, "/evaluations"), q, &out)
	return out, meta, err
}

// RevertJob registers version again as the job's newest version;
// enforcePrior (optional) must be the current version.
func (c *Client) RevertJob(ctx context.Context, id string, version uint64, enforcePrior *uint64) (*JobRegisterResponse, error) {
	body := struct {
		JobID               string
		JobVersion          uint64
		EnforcePriorVersion *uint64
	}{id, version, enforcePrior}
	var out JobRegisterResponse
	if err := c.write(ctx, "PUT", jobPath(id, "/revert"), &body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetJobStable marks a job version stable or not.
func (c *Client) SetJobStable(ctx context.Context, id string, version uint64, stable bool) (*JobStabilityResponse, error) {
	body := struct {
		JobID      string
		JobVersion uint64
		Stable     bool
	}{id, version, stable}
	var out JobStabilityResponse
	if err := c.write(ctx, "PUT", jobPath(id, "/stable"), &body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
