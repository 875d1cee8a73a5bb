package api

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// NodeRegistration is the body of PUT /v1/client/register: what a client
// says about its node. An empty ID lets the server pick one (or find the
// node by Name and Datacenter).
type NodeRegistration struct {
	ID         string
	Name       string
	Datacenter string
	HTTPAddr   string
	Drivers    map[string]*DriverInfo
	Resources  Resources
	Attributes map[string]string
	Meta       map[string]string
	NodeClass  string
	NodePool   string
	// MinDynamicPort..MaxDynamicPort is the node's dynamic port range (0:
	// Nomad's default 20000–32000); ReservedPorts are host ports the
	// scheduler never hands out on the node.
	MinDynamicPort int   `json:",omitempty"`
	MaxDynamicPort int   `json:",omitempty"`
	ReservedPorts  []int `json:",omitempty"`
}

// NodeRegisterResponse answers a registration.
type NodeRegisterResponse struct {
	NodeID string
	// SecretID is the node's secret, answered once, at its first
	// registration: the client keeps it and presents it on every later
	// call (Config.NodeSecret, Client.AsNode).
	SecretID string `json:",omitempty"`
	// HeartbeatTTL (nanoseconds): heartbeat well within it (e.g. at half).
	HeartbeatTTL time.Duration
	Index        uint64
}

// HeartbeatResponse answers a heartbeat.
type HeartbeatResponse struct {
	HeartbeatTTL time.Duration
	Index        uint64
}

// AllocClientUpdate is a client's report of one of its allocations.
type AllocClientUpdate struct {
	ID                string
	ClientStatus      string
	ClientDescription string
	TaskStates        map[string]*TaskState
	// DeploymentStatus carries health (Healthy and Timestamp); nil: unchanged.
	DeploymentStatus *AllocDeploymentStatus
	// CheckResults are the latest check results by check ID; nil: unchanged.
	CheckResults map[string]*CheckResult `json:",omitempty"`
}

// ClientAlloc is one allocation of GET /v1/client/allocations/:node_id
// with its task group in the allocation's job version (nil when that
// version is gone).
type ClientAlloc struct {
	Allocation *Allocation
	TaskGroup  *TaskGroup
	// Unchanged: the allocation has not changed since the read's "since"
	// index; only its ID, AllocModifyIndex and DesiredStatus are sent.
	Unchanged bool `json:",omitempty"`
}

// AllocUpdateRequest is the body of PUT /v1/client/allocations.
type AllocUpdateRequest struct {
	NodeID string
	Allocs []*AllocClientUpdate
}

// AllocUpdateResponse answers an allocation update.
type AllocUpdateResponse struct {
	Index uint64
}

// RegisterNode registers (or re-registers) a node.
func (c *Client) RegisterNode(ctx context.Context, node *NodeRegistration) (*NodeRegisterResponse, error) {
	var out NodeRegisterResponse
	if err := c.write(ctx, "PUT", "/v1/client/register", node, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Heartbeat tells the servers the node is alive.
func (c *Client) Heartbeat(ctx context.Context, nodeID string) (*HeartbeatResponse, error) {
	var out HeartbeatResponse
	if err := c.write(ctx, "PUT", "/v1/client/heartbeat/"+url.PathEscape(nodeID), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NodeAllocations lists the node's allocations with their task groups; with
// q.WaitIndex it blocks until they change. With since > 0, allocations not
// changed after that index come back as Unchanged stubs (the node already
// has them): a node with many allocations reads little on each change.
func (c *Client) NodeAllocations(ctx context.Context, nodeID string, q *QueryOptions, since uint64) ([]*ClientAlloc, *QueryMeta, error) {
	var out []*ClientAlloc
	if since > 0 {
		qc := QueryOptions{}
		if q != nil {
			qc = *q
		}
		qc.Params = map[string]string{"since": strconv.FormatUint(since, 10)}
		for k, v := range q.paramsOrNil() {
			qc.Params[k] = v
		}
		q = &qc
	}
	meta, err := c.query(ctx, "/v1/client/allocations/"+url.PathEscape(nodeID), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// UpdateAllocations reports the status of some of the node's allocations.
func (c *Client) UpdateAllocations(ctx context.Context, nodeID string, updates []*AllocClientUpdate) (*AllocUpdateResponse, error) {
	var out AllocUpdateResponse
	if err := c.write(ctx, "PUT", "/v1/client/allocations", &AllocUpdateRequest{NodeID: nodeID, Allocs: updates}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (q *QueryOptions) paramsOrNil() map[string]string {
	if q == nil {
		return nil
	}
	return q.Params
}
