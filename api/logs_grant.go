package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Logs grants: the servers read a node's task logs with a grant they mint
// for one allocation, task and stream, valid for a minute (to start the
// stream), instead of forwarding the caller's credentials. A grant is
// "v1.<expiry unix seconds>.<HMAC-SHA256>" under the node's secret, which
// only the servers and the node know, over the allocation ID, task, stream
// type and expiry; the node verifies it with VerifyLogsGrant.

// LogsGrantHeader carries a grant to a node's logs endpoint.
const LogsGrantHeader = "X-Ctlplane-Logs-Grant"

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

func logsGrantMAC(secret, allocID, task, stream string, expiry int64) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	// NUL-separated: no field may contain NUL (IDs are UUIDs, task names
	// are checked, streams are stdout or stderr), so no two tuples collide.
	m.Write([]byte("ctlplane-logs-grant-v1\x00" + allocID + "\x00" + task + "\x00" + stream + "\x00" + strconv.FormatInt(expiry, 10)))
	return m.Sum(nil)
}

// SignLogsGrant mints a grant for one allocation's task stream, valid until expiry.
func SignLogsGrant(secret, allocID, task, stream string, expiry time.Time) string {
	exp := expiry.Unix()
	return "v1." + strconv.FormatInt(exp, 10) + "." + base64.RawURLEncoding.EncodeToString(logsGrantMAC(secret, allocID, task, stream, exp))
}

// VerifyLogsGrant checks a grant for that allocation, task and stream at now.
func VerifyLogsGrant(secret, grant, allocID, task, stream string, now time.Time) error {
	if secret == "" {
		return errors.New("this node has no secret yet")
	}
	parts := strings.Split(grant, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return errors.New("malformed logs grant")
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return errors.New("malformed logs grant")
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("malformed logs grant")
	}
	if !hmac.Equal(mac, logsGrantMAC(secret, allocID, task, stream, exp)) {
		return errors.New("the logs grant is not for this allocation, task and stream")
	}
	if now.Unix() > exp {
		return errors.New("the logs grant has expired")
	}
	return nil
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
