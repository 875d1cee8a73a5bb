package api

import (
	"context"
	"net/url"
	"time"
)

// Drain statuses of Node.LastDrain.
const (
	DrainStatusDraining = "draining"
	DrainStatusComplete = "complete"
	DrainStatusCanceled = "canceled"
)

// DrainSpec is a drain as asked for: Deadline negative stops what is left
// at once, 0 never.
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// DrainStrategy is a node's ongoing drain.
type DrainStrategy struct {
	DrainSpec
	ForceDeadline time.Time
	StartedAt     time.Time
}

// DrainMetadata records a node's latest drain.
type DrainMetadata struct {
	StartedAt  time.Time
	UpdatedAt  time.Time
	Status     string
	AccessorID string
	Meta       map[string]string
}

// NodeUpdateDrainRequest starts, updates or (DrainSpec nil) cancels a drain.
type NodeUpdateDrainRequest struct {
	NodeID       string
	DrainSpec    *DrainSpec
	MarkEligible bool
	Meta         map[string]string
}

// NodeDrainUpdateResponse answers a drain or eligibility change.
type NodeDrainUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	Index           uint64
}

// UpdateDrain changes a node's drain (PUT /v1/node/:id/drain).
func (c *Client) UpdateDrain(ctx context.Context, nodeID string, req *NodeUpdateDrainRequest) (*NodeDrainUpdateResponse, error) {
	var out NodeDrainUpdateResponse
	if err := c.write(ctx, "PUT", "/v1/node/"+url.PathEscape(nodeID)+"/drain", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateEligibility sets a node's scheduling eligibility (eligible or ineligible).
func (c *Client) UpdateEligibility(ctx context.Context, nodeID, eligibility string) (*NodeDrainUpdateResponse, error) {
	var out NodeDrainUpdateResponse
	body := struct{ NodeID, Eligibility string }{nodeID, eligibility}
	if err := c.write(ctx, "PUT", "/v1/node/"+url.PathEscape(nodeID)+"/eligibility", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
