package client

import (
	"context"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// hasDriver says whether this node runs tasks of driver.
func (c *Client) hasDriver(driver string) bool {
	switch driver {
	case MockDriver, MockDriverAlias:
		return c.cfg.TestDrivers
	case RawExecDriver:
		return c.cfg.RawExec
	}
	return false
}

// drivers is what the node registers about its drivers.
func (c *Client) drivers() map[string]*api.DriverInfo {
	d := map[string]*api.DriverInfo{}
	if c.cfg.TestDrivers {
		d[MockDriver] = &api.DriverInfo{Detected: true, Healthy: true}
		d[MockDriverAlias] = &api.DriverInfo{Detected: true, Healthy: true}
	}
	if c.cfg.RawExec {
		d[RawExecDriver] = &api.DriverInfo{Detected: true, Healthy: true}
	}
	return d
}

// rotateLoop rotates the tasks' log files until ctx ends.
func (c *Client) rotateLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.rotateLogs()
		}
	}
}
