package api

import (
	"context"
	"net/url"
	"time"
)

// Evaluation statuses (Nomad's values).
const (
	EvalStatusPending  = "pending"
	EvalStatusBlocked  = "blocked"
	EvalStatusComplete = "complete"
	EvalStatusFailed   = "failed"
	EvalStatusCanceled = "canceled"
)

// Evaluation is an evaluation as the server shows it (Nomad's shape:
// WaitUntil a time, zero when unset).
type Evaluation struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string
	DeploymentID      string
	Status            string
	StatusDescription string
	WaitUntil         time.Time
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	QueuedAllocations map[string]int
	FailedTGAllocs    map[string]*AllocationMetric
	CreateIndex       uint64
	ModifyIndex       uint64
	CreateTime        int64
	ModifyTime        int64
}

// Evaluations lists evaluations (Params: namespace, prefix).
func (c *Client) Evaluations(ctx context.Context, q *QueryOptions) ([]*Evaluation, *QueryMeta, error) {
	var out []*Evaluation
	meta, err := c.query(ctx, "/v1/evaluations", q, &out)
	return out, meta, err
}

// Evaluation reads one evaluation.
func (c *Client) Evaluation(ctx context.Context, id string, q *QueryOptions) (*Evaluation, *QueryMeta, error) {
	var out Evaluation
	meta, err := c.query(ctx, "/v1/evaluation/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// EvaluationAllocations lists the allocations an evaluation placed.
func (c *Client) EvaluationAllocations(ctx context.Context, id string, q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var out []*AllocationListStub
	meta, err := c.query(ctx, "/v1/evaluation/"+url.PathEscape(id)+"/allocations", q, &out)
	return out, meta, err
}
