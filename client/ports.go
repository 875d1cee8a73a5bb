package client

import "slices"

// reservedPorts are the node's reserved ports: the configured ones and
// the port of the client's own API, so that the scheduler never hands it
// to an allocation, as a dynamic port or a static one (Nomad reserves an
// agent's ports through the node's reserved ports too).
func (c *Client) reservedPorts() []int {
	c.mu.Lock()
	own := c.httpPort
	c.mu.Unlock()
	out := slices.Clone(c.cfg.ReservedPorts)
	if own > 0 && !slices.Contains(out, own) {
		out = append(out, own)
	}
	return out
}
