package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Grants: the servers call a node's own API (logs, files, stats, restart,
// signal) with a grant they mint for one operation on one allocation (or
// the node itself), valid GrantTTL, instead of forwarding the caller's
// credentials. A grant is "v2.<expiry unix seconds>.<HMAC-SHA256>" under
// the node's secret, which only the servers and the node know, over every
// field of Grant and the expiry; the node verifies it with VerifyGrant.

// GrantHeader carries a grant to a node's API.
const GrantHeader = "X-Ctlplane-Grant"

// Grant operations.
const (
	GrantLogs         = "logs"          // Task, Stream
	GrantFSList       = "fs/ls"         // Path
	GrantFSStat       = "fs/stat"       // Path
	GrantFSCat        = "fs/cat"        // Path
	GrantFSReadAt     = "fs/readat"     // Path (offset and limit are the caller's)
	GrantFSStream     = "fs/stream"     // Path (offset and origin are the caller's)
	GrantHostStats    = "stats"         // the node's host stats (no AllocID)
	GrantAllocStats   = "alloc/stats"   // AllocID
	GrantAllocRestart = "alloc/restart" // Task or AllTasks
	GrantAllocSignal  = "alloc/signal"  // Task, Signal
)

// Grant names what a grant allows: one operation, on one allocation (""
// for the node's own host stats), with its arguments.
type Grant struct {
	Op       string
	NodeID   string
	AllocID  string
	Task     string
	Stream   string
	Path     string
	Signal   string
	AllTasks bool
}

// mac is the HMAC of the grant's fields (each length-prefixed, so no two
// grants share an input) and its expiry.
func (g Grant) mac(secret string, expiry int64) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("ctlplane-grant-v2"))
	all := "0"
	if g.AllTasks {
		all = "1"
	}
	for _, f := range []string{g.Op, g.NodeID, g.AllocID, g.Task, g.Stream, g.Path, g.Signal, all, strconv.FormatInt(expiry, 10)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

// SignGrant mints a grant, valid until expiry.
func SignGrant(secret string, g Grant, expiry time.Time) string {
	exp := expiry.Unix()
	return "v2." + strconv.FormatInt(exp, 10) + "." + base64.RawURLEncoding.EncodeToString(g.mac(secret, exp))
}

// VerifyGrant checks that grant allows exactly g at now: the one verifier
// of every node endpoint.
func VerifyGrant(secret, grant string, g Grant, now time.Time) error {
	if secret == "" {
		return errors.New("this node has no secret yet")
	}
	parts := strings.Split(grant, ".")
	if len(parts) != 3 || parts[0] != "v2" {
		return errors.New("malformed grant")
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return errors.New("malformed grant")
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("malformed grant")
	}
	if !hmac.Equal(mac, g.mac(secret, exp)) {
		return errors.New("the grant is not for this " + grantWhat(g.Op))
	}
	if now.Unix() > exp {
		return errors.New("the grant has expired")
	}
	return nil
}

func grantWhat(op string) string {
	switch op {
	case GrantLogs:
		return "allocation, task and stream"
	case GrantFSList, GrantFSStat, GrantFSCat, GrantFSReadAt, GrantFSStream:
		return "operation, allocation and path"
	case GrantHostStats:
		return "operation and node"
	}
	return "operation and allocation"
}

// GrantTTL is how long a grant may be used to start a call.
const GrantTTL = LogsGrantTTL

// GrantResponse answers GET /v1/client/grant/:op.
type GrantResponse = LogsGrantResponse

// Params are the query parameters naming g on GET /v1/client/grant
// (which grants only logs, fs/cat, fs/readat and fs/stream).
func (g Grant) Params() map[string]string {
	p := map[string]string{"op": g.Op}
	for k, v := range map[string]string{"alloc_id": g.AllocID, "task": g.Task, "type": g.Stream, "path": g.Path} {
		if v != "" {
			p[k] = v
		}
	}
	return p
}

// GetGrant asks the servers for a grant for g (they check the caller's
// token as for the same call through them); a node's API uses it for a
// caller that came to it directly with a token.
func (c *Client) GetGrant(ctx context.Context, g Grant) (*GrantResponse, error) {
	var out GrantResponse
	if _, err := c.query(ctx, "/v1/client/grant", &QueryOptions{Params: g.Params()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
