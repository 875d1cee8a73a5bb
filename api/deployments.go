package api

import (
	"context"
	"net/url"
	"time"
)

// Deployment statuses (Nomad's values).
const (
	DeploymentStatusRunning      = "running"
	DeploymentStatusPaused       = "paused"
	DeploymentStatusFailed       = "failed"
	DeploymentStatusSuccessful   = "successful"
	DeploymentStatusCancelled    = "cancelled"
	DeploymentStatusInitializing = "initializing"
	DeploymentStatusPending      = "pending"
	DeploymentStatusBlocked      = "blocked"
	DeploymentStatusUnblocking   = "unblocking"
)

// Deployment is one rollout of a job version.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	EvalPriority       int
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// Active says whether the deployment may still change by itself.
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusInitializing,
		DeploymentStatusPending, DeploymentStatusBlocked, DeploymentStatusUnblocking:
		return true
	}
	return false
}

// DeploymentState is a deployment's progress in one task group.
type DeploymentState struct {
	AutoRevert        bool
	AutoPromote       bool
	ProgressDeadline  time.Duration
	RequireProgressBy *time.Time
	Promoted          bool
	PlacedCanaries    []string
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
}

// DeploymentCause says who or what changed a deployment's status.
type DeploymentCause struct {
	Kind       string
	Operation  string
	AccessorID string
	EvalID     string
	Rule       string
}

// DeploymentEvent is one status change of a deployment (its history).
type DeploymentEvent struct {
	DeploymentID   string
	Index          uint64
	Time           int64
	OldStatus      string
	NewStatus      string
	OldDescription string
	Description    string
	Cause          DeploymentCause
}

// DeploymentUpdateResponse answers the deployment operations;
// RevertedJobVersion is set (fail, allocation-health) when a rollback
// registered a stable version again.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	Index                 uint64
}

func deploymentPath(op, id string) string {
	if op == "" {
		return "/v1/deployment/" + url.PathEscape(id)
	}
	return "/v1/deployment/" + op + "/" + url.PathEscape(id)
}

// Deployments lists deployments (Params: namespace, prefix, filter,
// per_page, next_token, reverse).
func (c *Client) Deployments(ctx context.Context, q *QueryOptions) ([]*Deployment, *QueryMeta, error) {
	var out []*Deployment
	meta, err := c.query(ctx, "/v1/deployments", q, &out)
	return out, meta, err
}

// Deployment reads one deployment (a full ID).
func (c *Client) Deployment(ctx context.Context, id string, q *QueryOptions) (*Deployment, *QueryMeta, error) {
	var out Deployment
	meta, err := c.query(ctx, deploymentPath("", id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// DeploymentAllocations lists a deployment's allocations.
func (c *Client) DeploymentAllocations(ctx context.Context, id string, q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var out []*AllocationListStub
	meta, err := c.query(ctx, deploymentPath("allocations", id), q, &out)
	return out, meta, err
}

// DeploymentHistory lists a deployment's status changes, oldest first.
func (c *Client) DeploymentHistory(ctx context.Context, id string, q *QueryOptions) ([]*DeploymentEvent, *QueryMeta, error) {
	var out []*DeploymentEvent
	meta, err := c.query(ctx, deploymentPath("history", id), q, &out)
	return out, meta, err
}

func (c *Client) deploymentOp(ctx context.Context, op, id string, body any) (*DeploymentUpdateResponse, error) {
	var out DeploymentUpdateResponse
	if err := c.write(ctx, "PUT", deploymentPath(op, id), body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FailDeployment marks a running deployment failed (rolling back when the
// job says auto_revert).
func (c *Client) FailDeployment(ctx context.Context, id string) (*DeploymentUpdateResponse, error) {
	return c.deploymentOp(ctx, "fail", id, &struct{ DeploymentID string }{id})
}

// PauseDeployment pauses (pause) or resumes a deployment.
func (c *Client) PauseDeployment(ctx context.Context, id string, pause bool) (*DeploymentUpdateResponse, error) {
	return c.deploymentOp(ctx, "pause", id, &struct {
		DeploymentID string
		Pause        bool
	}{id, pause})
}

// PromoteDeployment promotes the canaries of groups (none: all groups).
func (c *Client) PromoteDeployment(ctx context.Context, id string, groups []string) (*DeploymentUpdateResponse, error) {
	return c.deploymentOp(ctx, "promote", id, &struct {
		DeploymentID string
		All          bool
		Groups       []string
	}{id, len(groups) == 0, groups})
}

// UnblockDeployment unblocks a blocked multiregion deployment.
func (c *Client) UnblockDeployment(ctx context.Context, id string) (*DeploymentUpdateResponse, error) {
	return c.deploymentOp(ctx, "unblock", id, &struct{ DeploymentID string }{id})
}

// SetAllocHealth marks allocations of a deployment healthy or unhealthy by hand.
func (c *Client) SetAllocHealth(ctx context.Context, id string, healthy, unhealthy []string) (*DeploymentUpdateResponse, error) {
	return c.deploymentOp(ctx, "allocation-health", id, &struct {
		DeploymentID           string
		HealthyAllocationIDs   []string
		UnhealthyAllocationIDs []string
	}{id, healthy, unhealthy})
}
