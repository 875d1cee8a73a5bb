package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// authorizeGrant checks a call to this node's API: a grant the servers
// minted under this node's secret for exactly g (what the servers send),
// or else, when direct is true (the endpoints Nomad's API calls on a node
// directly: logs, cat), the caller's ACL token, for which the servers are
// asked a grant (they check it as for the same call through them),
// verified the same way. It answers the status to refuse with.
func (c *Client) authorizeGrant(ctx context.Context, r *http.Request, g api.Grant, direct bool) (int, error) {
	secret := c.NodeSecret()
	grant := r.Header.Get(api.GrantHeader)
	if grant == "" {
		if !direct {
			return http.StatusForbidden, errors.New("Permission denied: this call is made by the servers, with a grant")
		}
		var code int
		var err error
		if grant, code, err = c.askGrant(ctx, requestToken(r), g); err != nil {
			return code, err
		}
	}
	if err := api.VerifyGrant(secret, grant, g, time.Now()); err != nil {
		return http.StatusForbidden, fmt.Errorf("Permission denied: %v", err)
	}
	return 0, nil
}

// askGrant asks the servers for g's grant with a caller's token (no token
// is the anonymous token: the servers decide). It answers the status to
// refuse with.
func (c *Client) askGrant(ctx context.Context, token string, g api.Grant) (string, int, error) {
	ac, err := api.NewClient(api.Config{Address: c.server().Address(), Token: token, HTTPClient: c.cfg.HTTPClient})
	if err != nil {
		return "", http.StatusInternalServerError, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := ac.GetGrant(ctx, g)
	if err != nil {
		var apiErr *api.Error
		if errors.As(err, &apiErr) {
			if apiErr.StatusCode == http.StatusNotFound {
				return "", http.StatusNotFound, fmt.Errorf("allocation %s not found", g.AllocID)
			}
			return "", apiErr.StatusCode, errors.New(apiErr.Message)
		}
		return "", http.StatusServiceUnavailable, errors.New("cannot check the token with the servers")
	}
	if resp.NodeID != c.nodeID {
		return "", http.StatusNotFound, fmt.Errorf("allocation %s is not on this node", g.AllocID)
	}
	return resp.Grant, 0, nil
}

// DefaultTokenCheckInterval is how often a followed stream a caller opened
// on this node with its token asks the servers again (the event stream's
// heartbeat interval).
const DefaultTokenCheckInterval = 10 * time.Second

// followWithToken is the context of a followed answer (logs, a file): one
// opened with the caller's token (Nomad's API, straight to the node) ends
// once the servers refuse that token g's grant (deleted, expired, or its
// policies changed); a call with a grant is the servers' to watch (their
// proxy re-checks the token). The servers unreachable end nothing.
func (c *Client) followWithToken(r *http.Request, g api.Grant) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	if r.Header.Get(api.GrantHeader) != "" {
		return ctx, cancel
	}
	token := requestToken(r)
	interval := c.cfg.TokenCheckInterval
	if interval <= 0 {
		interval = DefaultTokenCheckInterval
	}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, code, err := c.askGrant(ctx, token, g)
			if err != nil && code >= 400 && code < 500 && ctx.Err() == nil {
				c.logger.Debug("ending a followed stream: the servers refused its token", "alloc", g.AllocID, "op", g.Op, "error", err)
				cancel()
				return
			}
		}
	}()
	return ctx, cancel
}
