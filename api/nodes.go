package api

import (
	"context"
	"net/url"
)

// Node statuses (Nomad's values).
const (
	NodeStatusInit  = "initializing"
	NodeStatusReady = "ready"
	NodeStatusDown  = "down"
	// NodeStatusDisconnected: it missed its heartbeat while allocations
	// on it may outlive that (max_client_disconnect).
	NodeStatusDisconnected = "disconnected"

	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Node is a client node as the servers know it.
type Node struct {
	ID                    string
	Name                  string
	Datacenter            string
	HTTPAddr              string
	Drivers               map[string]*DriverInfo
	Resources             Resources
	Attributes            map[string]string
	Meta                  map[string]string
	NodeClass             string
	NodePool              string
	Status                string
	StatusDescription     string
	SchedulingEligibility string
	Drain                 bool
	DrainStrategy         *DrainStrategy
	LastDrain             *DrainMetadata
	StatusUpdatedAt       int64
	CreateIndex           uint64
	ModifyIndex           uint64
}

// DriverInfo is what a node says about one of its drivers.
type DriverInfo struct {
	Detected bool
	Healthy  bool
}

// Nodes lists the client nodes (Params: prefix).
func (c *Client) Nodes(ctx context.Context, q *QueryOptions) ([]*Node, *QueryMeta, error) {
	var out []*Node
	meta, err := c.query(ctx, "/v1/nodes", q, &out)
	return out, meta, err
}

// Node reads one node.
func (c *Client) Node(ctx context.Context, id string, q *QueryOptions) (*Node, *QueryMeta, error) {
	var out Node
	meta, err := c.query(ctx, "/v1/node/"+url.PathEscape(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// NodeAllocs lists the allocations placed on a node (the read API, not the client protocol).
func (c *Client) NodeAllocs(ctx context.Context, id string, q *QueryOptions) ([]*Allocation, *QueryMeta, error) {
	var out []*Allocation
	meta, err := c.query(ctx, "/v1/node/"+url.PathEscape(id)+"/allocations", q, &out)
	return out, meta, err
}
