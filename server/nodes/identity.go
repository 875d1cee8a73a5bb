package nodes

import (
	"crypto/subtle"
	"fmt"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// Caller is who makes a call, as the transport resolved it: the node
// secret it presented (a client), its ACL authorizer (an operator or an
// introduction token), or both. The service checks it itself, so that no
// caller, HTTP or not, skips a check.
type Caller struct {
	// NodeSecret is the node secret presented ("" for none).
	NodeSecret string
	// ACL is the caller's authorizer (nil: the calls that only a node
	// makes do not resolve one).
	ACL *acl.Authorizer
}

// nodeSecretMismatch refuses a re-registration without the node's secret
// (Nomad's text).
const nodeSecretMismatch = "node secret ID does not match"

func forbidden(format string, args ...any) error {
	return &state.Error{Code: state.ErrForbidden, Msg: fmt.Sprintf(format, args...)}
}

// errNoNodeSecret refuses a node-only call without a valid node secret.
var errNoNodeSecret = forbidden("Permission denied: a client call needs the secret its node got at registration")

// secretMatches compares in constant time.
func secretMatches(presented, want string) bool {
	return presented != "" && want != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(want)) == 1
}

// confine resolves the caller as node nodeID: its secret must be that
// node's. An unknown node is not found (its client registers again),
// whatever the secret, so that a client whose node the servers forgot
// (e.g. a restored snapshot) learns it.
func (s *Service) confine(store *state.Store, c Caller, nodeID string) (*state.Node, error) {
	_, n, err := store.Node(nil, nodeID)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, nodeNotFound(nodeID)
	}
	if c.NodeSecret == "" {
		return nil, errNoNodeSecret
	}
	if !secretMatches(c.NodeSecret, n.SecretID) {
		return nil, forbidden("Permission denied: the node secret presented is not node %s's", nodeID)
	}
	return n, nil
}

// mayRegister checks a registration: a new node (old nil) needs node:write
// (an introduction token); an existing one its own secret, whatever the
// ACL token says. A node registered before node secrets existed has none:
// node:write then, and it gets one.
func mayRegister(c Caller, old *state.Node) error {
	if old != nil && old.SecretID != "" {
		if !secretMatches(c.NodeSecret, old.SecretID) {
			return forbidden("Permission denied: %s", nodeSecretMismatch)
		}
		return nil
	}
	if c.ACL == nil || !c.ACL.NodeWrite() {
		return forbidden("Permission denied: registering a new node needs a token with node:write")
	}
	return nil
}
