package client

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
)

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

// HoldStateDB opens a write transaction on the client's state DB and
// keeps it open until release is called: bbolt has one writer at a time,
// so every state write of the client waits on disk meanwhile, as behind a
// stalled disk.
func (c *Client) HoldStateDB() (release func(), err error) {
	c.mu.Lock()
	db := c.db
	c.mu.Unlock()
	if db == nil {
		return nil, errors.New("the state DB is not open")
	}
	tx, err := db.db.Begin(true)
	if err != nil {
		return nil, err
	}
	return func() { _ = tx.Rollback() }, nil
}

// WriteLegacyState turns the state DB in dataDir back into an older
// agent's state.json (0600) and removes the DB, as on a data directory an
// older agent last ran on.
func WriteLegacyState(dataDir string) error {
	s, err := loadState(dataDir)
	if err != nil {
		return err
	}
	buf, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dataDir, "client", legacyStateFile), buf, 0o600); err != nil {
		return err
	}
	return os.Remove(stateDBPath(dataDir))
}

// PendingReports is how many status reports wait to be sent.
func (c *Client) PendingReports() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}
