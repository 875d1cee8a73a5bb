package client

import "time"

// SetPartitioned cuts the node off from the servers (true) or heals it
// (false), for tests of disconnected clients: cut off, it sends no
// heartbeats and holds its status reports, while its tasks go on (its
// allocation reads go on too: a partition one way). Healed, it heartbeats
// at once, then sends what it held, as a reconnecting Nomad client does.
func (c *Client) SetPartitioned(on bool) {
	c.partitioned.Store(on)
	if on {
		return
	}
	c.heartbeat()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.flushTimer == nil && len(c.pending) > 0 {
		c.flushTimer = time.AfterFunc(0, c.flush)
	}
}
