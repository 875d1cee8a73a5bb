package acl

import (
	"strings"
	"sync"

	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
)

// methodConfigs keeps each auth method's parsed config, which every binding
// rule write that names the method checks its fields against: parsing it
// (PEM keys included) was ~14 µs, more than validating the rule itself.
// One entry per method, rebuilt when the method's row changes; a new store
// starts it over, as validatorCache does. What a rule says is never cached.
type methodConfigs struct {
	mu      sync.Mutex
	store   *state.Store
	entries map[string]methodConfigEntry
}

type methodConfigEntry struct {
	createIndex, modifyIndex uint64
	cfg                      *authmethod.Config
}

func (c *methodConfigs) get(st *state.Store, m *state.ACLAuthMethod) (*authmethod.Config, error) {
	key := strings.ToLower(m.Name)
	c.mu.Lock()
	if c.store != st {
		c.store, c.entries = st, nil
	}
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.createIndex == m.CreateIndex && e.modifyIndex == m.ModifyIndex {
		return e.cfg, nil
	}
	cfg, err := authmethod.ParseConfig(m.Config)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == st {
		if c.entries == nil || len(c.entries) >= 1024 {
			c.entries = map[string]methodConfigEntry{}
		}
		c.entries[key] = methodConfigEntry{createIndex: m.CreateIndex, modifyIndex: m.ModifyIndex, cfg: cfg}
	}
	return cfg, nil
}
