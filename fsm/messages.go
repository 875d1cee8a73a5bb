package fsm

import (
	"bytes"
	"fmt"
	"reflect"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType is the first byte of every Raft log entry.
type MessageType uint8

const (
	BindingRuleSetType    MessageType = 1
	BindingRuleDeleteType MessageType = 2
	ServerRegisterType    MessageType = 3
	ServerDeregisterType  MessageType = 4

	ACLPolicySetType        MessageType = 5
	ACLPolicyDeleteType     MessageType = 6
	ACLTokenSetType         MessageType = 7
	ACLTokenDeleteType      MessageType = 8
	ACLRoleSetType          MessageType = 9
	ACLRoleDeleteType       MessageType = 10
	ACLAuthMethodSetType    MessageType = 11
	ACLAuthMethodDeleteType MessageType = 12
	ACLBootstrapType        MessageType = 13
	ACLInitType             MessageType = 14
	ACLTokenReapType        MessageType = 15
)

// IgnoreUnknownTypeFlag marks an entry that an older server may skip: an
// unknown type without it stops the node instead of being silently dropped.
const IgnoreUnknownTypeFlag MessageType = 128

// BindingRuleSetRequest creates a rule (Create) or replaces an existing one.
type BindingRuleSetRequest struct {
	Rule   state.BindingRule
	Create bool
}

// BindingRuleDeleteRequest deletes the rule with ID from Namespace.
type BindingRuleDeleteRequest struct {
	ID        string
	Namespace string
}

// ServerRegisterRequest records (or updates) a server of the cluster.
type ServerRegisterRequest struct {
	Server state.ServerInfo
}

// ServerDeregisterRequest forgets a server that left the cluster.
type ServerDeregisterRequest struct {
	ID string
}

// ACLPolicySetRequest creates or replaces a policy.
type ACLPolicySetRequest struct{ Policy state.ACLPolicy }

// ACLPolicyDeleteRequest deletes a policy.
type ACLPolicyDeleteRequest struct{ ID string }

// ACLTokenSetRequest creates (Create) or replaces a token; also the bootstrap token.
type ACLTokenSetRequest struct {
	Token  state.ACLToken
	Create bool
}

// ACLTokenDeleteRequest deletes a token.
type ACLTokenDeleteRequest struct{ AccessorID string }

// ACLTokenReapRequest deletes the listed tokens that have expired at Now.
type ACLTokenReapRequest struct {
	AccessorIDs []string
	Now         time.Time
}

// ACLRoleSetRequest creates or replaces a role.
type ACLRoleSetRequest struct{ Role state.ACLRole }

// ACLRoleDeleteRequest deletes a role.
type ACLRoleDeleteRequest struct{ ID string }

// ACLAuthMethodSetRequest creates (Create) or replaces an auth method.
type ACLAuthMethodSetRequest struct {
	Method state.ACLAuthMethod
	Create bool
}

// ACLAuthMethodDeleteRequest deletes an auth method, its rules and its tokens.
type ACLAuthMethodDeleteRequest struct{ Name string }

// ACLInitRequest makes sure the built-in ACL objects exist.
type ACLInitRequest struct {
	ManagementPolicy state.ACLPolicy
	Anonymous        state.ACLToken
	Initial          *state.ACLToken
}

// msgpackHandle is shared by log entries and snapshots. Free-form values
// (an auth method's Config) decode as JSON would: strings and string-keyed maps.
var msgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}()

// Encode turns a request into a log entry: the type byte, then msgpack.
func Encode(t MessageType, req any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(req); err != nil {
		return nil, fmt.Errorf("failed encoding %d request: %w", t, err)
	}
	// Raft keeps the entry (its log cache, -dev's log store): not the
	// buffer's spare room too, up to as much again as the entry after
	// its last doubling (a third of the server's heap with 100,000
	// allocations placed).
	if out := buf.Bytes(); cap(out)-len(out) > len(out)/16 {
		return bytes.Clone(out), nil
	}
	return buf.Bytes(), nil
}

func decode(buf []byte, out any) error {
	return codec.NewDecoderBytes(buf, msgpackHandle).Decode(out)
}
