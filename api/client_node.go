package api

import (
	"context"
	"io"
	"net/url"
)

// The node API through the servers (files, stats, restart, signal).

// AllocFSList lists a directory of an allocation's directory.
func (c *Client) AllocFSList(ctx context.Context, allocID, path string) ([]*AllocFileInfo, error) {
	var out []*AllocFileInfo
	_, err := c.query(ctx, "/v1/client/fs/ls/"+url.PathEscape(allocID), &QueryOptions{Params: map[string]string{"path": path}}, &out)
	return out, err
}

// AllocFSStat describes a file of an allocation's directory.
func (c *Client) AllocFSStat(ctx context.Context, allocID, path string) (*AllocFileInfo, error) {
	var out AllocFileInfo
	if _, err := c.query(ctx, "/v1/client/fs/stat/"+url.PathEscape(allocID), &QueryOptions{Params: map[string]string{"path": path}}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllocFSCat reads a file of an allocation's directory (the caller closes it).
func (c *Client) AllocFSCat(ctx context.Context, allocID, path string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, "GET", "/v1/client/fs/cat/"+url.PathEscape(allocID), url.Values{"path": {path}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// NodeStats is a node's host stats.
func (c *Client) NodeStats(ctx context.Context, nodeID string) (*HostStats, error) {
	var out HostStats
	if _, err := c.query(ctx, "/v1/client/stats", &QueryOptions{Params: map[string]string{"node_id": nodeID}}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllocStats is an allocation's resource usage.
func (c *Client) AllocStats(ctx context.Context, allocID string) (*AllocResourceUsage, error) {
	var out AllocResourceUsage
	if _, err := c.query(ctx, "/v1/client/allocation/"+url.PathEscape(allocID)+"/stats", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllocRestart restarts a task of an allocation ("" and allTasks false:
// its running tasks).
func (c *Client) AllocRestart(ctx context.Context, allocID, task string, allTasks bool) error {
	return c.write(ctx, "PUT", "/v1/client/allocation/"+url.PathEscape(allocID)+"/restart", &AllocationRestartRequest{TaskName: task, AllTasks: allTasks}, nil)
}

// AllocSignal sends a signal to a task of an allocation ("": every running task).
func (c *Client) AllocSignal(ctx context.Context, allocID, task, signal string) error {
	return c.write(ctx, "PUT", "/v1/client/allocation/"+url.PathEscape(allocID)+"/signal", &AllocSignalRequest{Task: task, Signal: signal}, nil)
}
