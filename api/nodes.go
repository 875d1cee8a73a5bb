package api

import (
	"context"
	"net/url"
)

// Nodes lists the client nodes.
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
