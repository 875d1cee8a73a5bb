package client

// Registering the node, its heartbeats, and which server to ask (with
// backoff after failures).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// register registers the node, retrying until it works or ctx ends, and
// starts the heartbeats.
func (c *Client) register(ctx context.Context) error {
	reg := &api.NodeRegistration{
		ID: c.nodeID, Name: c.cfg.NodeName, Datacenter: c.cfg.Datacenter, Drivers: c.drivers(), HTTPAddr: c.httpAddr,
		Resources: c.cfg.Resources, Meta: c.cfg.Meta, NodeClass: c.cfg.NodeClass, NodePool: c.cfg.NodePool,
		Attributes:     c.attributes(),
		MinDynamicPort: c.cfg.MinDynamicPort, MaxDynamicPort: c.cfg.MaxDynamicPort, ReservedPorts: c.reservedPorts(),
	}
	for {
		srv := c.server()
		// The token introduces a new node; the secret proves an existing one.
		resp, err := srv.WithNodeSecret(c.NodeSecret()).RegisterNode(ctx, reg)
		if err == nil && resp.SecretID != "" {
			if err := c.setSecret(resp.SecretID); err != nil {
				return err
			}
		}
		if err == nil {
			c.succeeded()
			c.mu.Lock()
			c.ttl = resp.HeartbeatTTL
			c.armHeartbeatLocked(heartbeatInterval(resp.HeartbeatTTL))
			c.mu.Unlock()
			c.logger.Debug("registered", "ttl", resp.HeartbeatTTL)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var apiErr *api.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 && apiErr.StatusCode != 404 {
			// Refused (bad token, invalid node): retrying will not help.
			return fmt.Errorf("registering node %s: %w", c.cfg.NodeName, err)
		}
		c.failed(srv, err)
		if !c.sleep(ctx, c.backoff()) {
			return ctx.Err()
		}
	}
}

// heartbeatInterval is half the TTL less up to a tenth of it, so that
// nodes started together do not heartbeat in lockstep.
func heartbeatInterval(ttl time.Duration) time.Duration {
	return ttl/2 - rand.N(ttl/10+1)
}

func (c *Client) armHeartbeatLocked(d time.Duration) {
	if c.closed {
		return
	}
	if d <= 0 {
		d = time.Second
	}
	if c.hbTimer != nil {
		c.hbTimer.Stop()
	}
	c.hbTimer = time.AfterFunc(d, c.heartbeat)
}

// heartbeat runs in its timer's goroutine and re-arms itself.
func (c *Client) heartbeat() {
	c.mu.Lock()
	ctx, closed := c.ctx, c.closed
	c.mu.Unlock()
	if closed || ctx.Err() != nil {
		return
	}
	if c.partitioned.Load() {
		c.mu.Lock()
		c.armHeartbeatLocked(heartbeatInterval(c.ttl))
		c.mu.Unlock()
		return
	}
	srv := c.server()
	resp, err := c.asNode(srv).Heartbeat(ctx, c.nodeID)
	switch {
	case err == nil:
		c.succeeded()
		c.mu.Lock()
		c.ttl = resp.HeartbeatTTL
		c.armHeartbeatLocked(heartbeatInterval(resp.HeartbeatTTL))
		c.mu.Unlock()
		return
	case api.IsNotFound(err):
		if c.register(ctx) == nil {
			return
		}
	default:
		c.failed(srv, err)
	}
	c.mu.Lock()
	c.armHeartbeatLocked(min(c.backoff(), c.ttl/4))
	c.mu.Unlock()
}

// server is the server in use.
func (c *Client) server() *api.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[c.cur]
}

// failed moves on to the next server after a failure of srv.
func (c *Client) failed(srv *api.Client, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures.Add(1)
	if c.servers[c.cur] == srv {
		c.cur = (c.cur + 1) % len(c.servers)
	}
	c.logger.Debug("server request failed", "server", srv.Address(), "error", err)
}

func (c *Client) succeeded() { c.failures.Store(0) }

// backoff is the wait before the next try: exponential in the consecutive
// failures (250ms to 10s), plus up to 50% jitter. Callers may hold c.mu or not.
func (c *Client) backoff() time.Duration {
	n := min(c.failures.Load(), 6)
	d := min(250*time.Millisecond<<n, 10*time.Second)
	return d + rand.N(d/2+1)
}

// sleep waits d (real time), or until ctx ends (false).
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
