package api

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
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
	ID                string `codec:",omitempty"`
	ClientStatus      string `codec:",omitempty"`
	ClientDescription string `codec:",omitempty"`
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
}

// ClientAllocChanges answers GET /v1/client/allocations/:node_id?changes_since=N:
// what changed in the node's list after index N.
type ClientAllocChanges struct {
	// Full: Allocs is the whole list (N was 0, or older than what the
	// servers can answer, e.g. from before a snapshot restore): drop what
	// it does not name.
	Full bool
	// Allocs are the allocations the servers changed after N (all of them
	// when Full), with their task groups.
	Allocs []*ClientAlloc
	// Removed are the allocations no longer listed (deleted, or ended on
	// the client) since N; it may name some the node does not have.
	Removed []string
	// Count is how many allocations the whole list has: a node holding
	// another number after applying the changes reads the whole list.
	Count int
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
// q.WaitIndex it blocks until the servers change them.
func (c *Client) NodeAllocations(ctx context.Context, nodeID string, q *QueryOptions) ([]*ClientAlloc, *QueryMeta, error) {
	var out []*ClientAlloc
	meta, err := c.query(ctx, "/v1/client/allocations/"+url.PathEscape(nodeID), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// NodeAllocationChanges reads what changed in the node's list of
// allocations after index since (0: the whole list, Full); with
// q.WaitIndex it blocks until the servers change it. A node passes the
// LastIndex of its previous read as both.
func (c *Client) NodeAllocationChanges(ctx context.Context, nodeID string, since uint64, q *QueryOptions) (*ClientAllocChanges, *QueryMeta, error) {
	qc := QueryOptions{}
	if q != nil {
		qc = *q
	}
	qc.Params = map[string]string{"changes_since": strconv.FormatUint(since, 10)}
	for k, v := range q.paramsOrNil() {
		qc.Params[k] = v
	}
	var out ClientAllocChanges
	meta, err := c.queryAs(ctx, "/v1/client/allocations/"+url.PathEscape(nodeID), &qc, &out, c.msgpack)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// UpdateAllocations reports the status of some of the node's allocations.
func (c *Client) UpdateAllocations(ctx context.Context, nodeID string, updates []*AllocClientUpdate) (*AllocUpdateResponse, error) {
	var out AllocUpdateResponse
	req := &AllocUpdateRequest{NodeID: nodeID, Allocs: updates}
	if !c.msgpack {
		if err := c.write(ctx, "PUT", "/v1/client/allocations", req, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	enc := reportEncoders.Get()
	buf, err := enc.Encode(req)
	if err != nil {
		reportEncoders.Put(enc)
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	// The encoder goes back to the pool when the transport closes the
	// body, which may be after the answer came.
	body := &pooledBody{Reader: bytes.NewReader(buf), release: func() { reportEncoders.Put(enc) }}
	resp, err := c.send(ctx, "PUT", "/v1/client/allocations", "", body, MsgpackContentType, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := decode(resp, &out); err != nil {
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

// reportEncoders encode the nodes' status reports (~300 KB for 250).
var reportEncoders = NewMsgpackEncoders(msgpackHandle)

// pooledBody is a request body over a pooled buffer, released when the
// transport closes it (it always does, once it is done with it).
type pooledBody struct {
	*bytes.Reader
	once    sync.Once
	release func()
}

func (b *pooledBody) Close() error {
	b.once.Do(b.release)
	return nil
}
