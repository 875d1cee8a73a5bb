package api

import (
	"context"
	"net/url"
)

// Namespace is one of Nomad's namespaces (the jobs side).
type Namespace struct {
	Name        string
	Description string
	Meta        map[string]string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// Namespaces lists the namespaces the token may see (GET /v1/namespaces).
func (c *Client) Namespaces(ctx context.Context, q *QueryOptions) ([]*Namespace, *QueryMeta, error) {
	var out []*Namespace
	meta, err := c.query(ctx, "/v1/namespaces", q, &out)
	return out, meta, err
}

// NamespaceInfo reads one namespace.
func (c *Client) NamespaceInfo(ctx context.Context, name string, q *QueryOptions) (*Namespace, *QueryMeta, error) {
	var out Namespace
	meta, err := c.query(ctx, "/v1/namespace/"+url.PathEscape(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// ApplyNamespace creates or replaces a namespace.
func (c *Client) ApplyNamespace(ctx context.Context, ns *Namespace) error {
	return c.write(ctx, "PUT", "/v1/namespace/"+url.PathEscape(ns.Name), ns, nil)
}

// DeleteNamespace deletes a namespace that holds no live job.
func (c *Client) DeleteNamespace(ctx context.Context, name string) error {
	return c.write(ctx, "DELETE", "/v1/namespace/"+url.PathEscape(name), nil, nil)
}

// ScalingRequest is the body of PUT /v1/job/:id/scale (Nomad's).
type ScalingRequest struct {
	Count   *int64            `json:",omitempty"`
	Target  map[string]string // "Job" and "Group"
	Message string            `json:",omitempty"`
	Error   bool              `json:",omitempty"`
}

// ScaleJob sets a group's count: a new job version and an evaluation.
func (c *Client) ScaleJob(ctx context.Context, jobID, group string, count int64, message string) (*JobRegisterResponse, error) {
	req := &ScalingRequest{Count: &count, Target: map[string]string{"Job": jobID, "Group": group}, Message: message}
	var out JobRegisterResponse
	if err := c.write(ctx, "PUT", jobPath(jobID, "/scale"), req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
