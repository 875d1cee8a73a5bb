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
		return true
	case RawExecDriver:
		return c.cfg.RawExec
	}
	return false
}

// drivers is what the node registers about its drivers.
func (c *Client) drivers() map[string]*api.DriverInfo {
	d := map[string]*api.DriverInfo{
		MockDriver:      {Detected: true, Healthy: true},
		MockDriverAlias: {Detected: true, Healthy: true},
	}
	if c.cfg.RawExec {
		d[RawExecDriver] = &api.DriverInfo{Detected: true, Healthy: true}
	}
	return d
}

// attributes are the node's fingerprint: Nomad's driver.<name> = "1" for
// each driver it offers.
func (c *Client) attributes() map[string]string {
	a := map[string]string{"driver.mock_driver": "1", "kernel.name": "simulated"}
	if c.cfg.RawExec {
		a["driver.raw_exec"] = "1"
	}
	return a
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
