package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctlplane/ctlplane/api"
)

// The node's identity: its ID (state.db) and the secret the servers
// minted at its first registration, kept in DATA_DIR/client/node-secret
// (0600) and presented on every client-protocol call (api.NodeSecretHeader).
// A restarted client keeps both; a client without a data directory (a
// simulated node) keeps the secret in memory.

func secretPath(dataDir string) string { return filepath.Join(dataDir, "client", "node-secret") }

// loadSecret reads the saved secret ("" when there is none).
func loadSecret(dataDir string) (string, error) {
	buf, err := os.ReadFile(secretPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the node secret: %w", err)
	}
	return strings.TrimSpace(string(buf)), nil
}

// setSecret keeps a secret the servers answered, on disk first (a client
// that lost it could never re-register its node).
func (c *Client) setSecret(secret string) error {
	if c.cfg.DataDir != "" {
		path := secretPath(c.cfg.DataDir)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("saving the node secret: %w", err)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(secret+"\n"), 0o600); err != nil {
			return fmt.Errorf("saving the node secret: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("saving the node secret: %w", err)
		}
	}
	c.mu.Lock()
	c.secret = secret
	c.mu.Unlock()
	return nil
}

// NodeSecret is the node's secret ("" before its first registration).
func (c *Client) NodeSecret() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.secret
}

// asNode is srv presenting the node's secret and no token: every call
// after the registration is the node's own.
func (c *Client) asNode(srv *api.Client) *api.Client { return srv.AsNode(c.NodeSecret()) }
