package api

import (
	"context"
	"net/url"
	"time"
)

// Service is a group's or task's native service (provider "nomad").
type Service struct {
	Name        string
	TaskName    string
	PortLabel   string
	AddressMode string
	Tags        []string
	CanaryTags  []string
	Provider    string
	Namespace   string
	OnUpdate    string
	Checks      []*ServiceCheck
}

// ServiceCheck is a check the client runs against a service.
type ServiceCheck struct {
	Name         string
	Type         string
	Path         string
	Protocol     string
	Method       string
	Body         string
	Header       map[string][]string
	PortLabel    string
	AddressMode  string
	Interval     time.Duration
	Timeout      time.Duration
	TaskName     string
	OnUpdate     string
	CheckRestart *CheckRestart
}

// CheckRestart restarts a task after Limit consecutive failures, once
// Grace has passed since it (re)started.
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// Check modes, statuses and on_update values (Nomad's).
const (
	CheckModeHealthiness = "healthiness"
	CheckModeReadiness   = "readiness"
	CheckStatusSuccess   = "success"
	CheckStatusFailure   = "failure"
	CheckStatusPending   = "pending"
	OnUpdateIgnore       = "ignore"
)

// CheckResult is the latest result of one check of an allocation
// (Nomad's CheckQueryResult; GET /v1/client/allocation/:id/checks).
type CheckResult struct {
	ID         string `codec:",omitempty"`
	Check      string `codec:",omitempty"`
	Group      string `codec:",omitempty"`
	Task       string `json:",omitempty"`
	Service    string `codec:",omitempty"`
	Status     string `codec:",omitempty"`
	StatusCode int    `json:",omitempty"`
	Output     string `codec:",omitempty"`
	Mode       string `codec:",omitempty"`
	Timestamp  int64  `codec:",omitempty"`
}

// ServiceRegistration is one registered instance of a service.
type ServiceRegistration struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

// AllocChecks reads the latest results of an allocation's checks.
func (c *Client) AllocChecks(ctx context.Context, allocID string, q *QueryOptions) (map[string]*CheckResult, *QueryMeta, error) {
	var out map[string]*CheckResult
	meta, err := c.query(ctx, "/v1/client/allocation/"+url.PathEscape(allocID)+"/checks", q, &out)
	return out, meta, err
}

// ServiceListEntry is one namespace's entry of GET /v1/services.
type ServiceListEntry struct {
	Namespace string
	Services  []struct {
		ServiceName string
		Tags        []string
	}
}

// Services lists the services per namespace (q.Params["namespace"], "*"
// for every readable one).
func (c *Client) Services(ctx context.Context, q *QueryOptions) ([]*ServiceListEntry, *QueryMeta, error) {
	var out []*ServiceListEntry
	meta, err := c.query(ctx, "/v1/services", q, &out)
	return out, meta, err
}

// Service reads a service's registrations.
func (c *Client) Service(ctx context.Context, name string, q *QueryOptions) ([]*ServiceRegistration, *QueryMeta, error) {
	var out []*ServiceRegistration
	meta, err := c.query(ctx, "/v1/service/"+url.PathEscape(name), q, &out)
	return out, meta, err
}

// DeleteService removes one registration of a service (namespace ns).
func (c *Client) DeleteService(ctx context.Context, ns, name, id string) error {
	path := "/v1/service/" + url.PathEscape(name) + "/" + url.PathEscape(id)
	if ns != "" {
		path += "?namespace=" + url.QueryEscape(ns)
	}
	return c.write(ctx, "DELETE", path, nil, nil)
}
