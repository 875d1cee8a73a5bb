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
		// No token is the anonymous token: the servers decide (ACLs off).
		ac, err := api.NewClient(api.Config{Address: c.server().Address(), Token: requestToken(r), HTTPClient: c.cfg.HTTPClient})
		if err != nil {
			return http.StatusInternalServerError, err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := ac.GetGrant(ctx, g)
		if err != nil {
			var apiErr *api.Error
			if errors.As(err, &apiErr) {
				if apiErr.StatusCode == http.StatusNotFound {
					return http.StatusNotFound, fmt.Errorf("allocation %s not found", g.AllocID)
				}
				return apiErr.StatusCode, errors.New(apiErr.Message)
			}
			return http.StatusServiceUnavailable, errors.New("cannot check the token with the servers")
		}
		if resp.NodeID != c.nodeID {
			return http.StatusNotFound, fmt.Errorf("allocation %s is not on this node", g.AllocID)
		}
		grant = resp.Grant
	}
	if err := api.VerifyGrant(secret, grant, g, time.Now()); err != nil {
		return http.StatusForbidden, fmt.Errorf("Permission denied: %v", err)
	}
	return 0, nil
}
