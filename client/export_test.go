package client

import "slices"

// RunnerIDs lists the allocations this client has a runner for, sorted.
func (c *Client) RunnerIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id := range c.runners {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// FullReads is how many reads of the node's changes answered the whole list.
func (c *Client) FullReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fullReads
}

// SavedAllocIDs lists the allocations the client's state DB has a record
// of, sorted (nil, nil when the DB is not open).
func (c *Client) SavedAllocIDs() ([]string, error) {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	db := c.db
	c.mu.Unlock()
	if db == nil {
		return nil, nil
	}
	ids, err := db.allocIDs()
	slices.Sort(ids)
	return ids, err
}
