package api

import (
	"context"
	"net/url"
	"time"
)

// Logs grants: a Grant (grant.go) for one allocation, task and stream.

// LogsGrantHeader carries a grant to a node's logs endpoint (GrantHeader).
const LogsGrantHeader = GrantHeader

// NodeSecretHeader carries a node's secret on its client-protocol calls.
const NodeSecretHeader = "X-Ctlplane-Node-Secret"

// LogsGrantTTL is how long a grant may be used to start a stream.
const LogsGrantTTL = time.Minute

// LogsGrantResponse answers GET /v1/client/fs/logs-grant/:alloc_id.
type LogsGrantResponse struct {
	Grant   string
	NodeID  string
	Expires time.Time
}

// LogsGrantFor is the grant of one task stream.
func LogsGrantFor(allocID, task, stream string) Grant {
	return Grant{Op: GrantLogs, AllocID: allocID, Task: task, Stream: stream}
}

// SignLogsGrant mints a grant for one allocation's task stream, valid until expiry.
func SignLogsGrant(secret, allocID, task, stream string, expiry time.Time) string {
	return SignGrant(secret, LogsGrantFor(allocID, task, stream), expiry)
}

// VerifyLogsGrant checks a grant for that allocation, task and stream at now.
func VerifyLogsGrant(secret, grant, allocID, task, stream string, now time.Time) error {
	return VerifyGrant(secret, grant, LogsGrantFor(allocID, task, stream), now)
}

// LogsGrant asks the servers for a grant to read a task stream of an
// allocation on its node (needs node:read and read-logs, as the logs).
func (c *Client) LogsGrant(ctx context.Context, allocID, task, stream string) (*LogsGrantResponse, error) {
	var out LogsGrantResponse
	q := &QueryOptions{Params: map[string]string{"task": task, "type": stream}}
	if _, err := c.query(ctx, "/v1/client/fs/logs-grant/"+url.PathEscape(allocID), q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
