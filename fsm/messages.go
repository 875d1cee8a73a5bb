package fsm

import (
	"bytes"
	"fmt"

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

// msgpackHandle is shared by log entries and snapshots.
var msgpackHandle = &codec.MsgpackHandle{}

// Encode turns a request into a log entry: the type byte, then msgpack.
func Encode(t MessageType, req any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(req); err != nil {
		return nil, fmt.Errorf("failed encoding %d request: %w", t, err)
	}
	return buf.Bytes(), nil
}

func decode(buf []byte, out any) error {
	return codec.NewDecoderBytes(buf, msgpackHandle).Decode(out)
}
