package fsm

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/limits"
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

// msgpackHandle encodes and decodes log entries. Free-form values (an auth
// method's Config) decode as JSON would: strings and string-keyed maps.
var msgpackHandle = newMsgpackHandle(limits.LogMaxDepth)

// snapshotHandle decodes snapshots, whose rows may nest a few levels deeper
// than the entries they were applied from (see limits.SnapshotMaxDepth).
var snapshotHandle = newMsgpackHandle(limits.SnapshotMaxDepth)

func newMsgpackHandle(maxDepth int16) *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.MaxDepth = maxDepth
	return h
}

// entryEncoder is a msgpack encoder and its output buffer, reused: making
// them (and growing a bytes.Buffer) was most of what encoding an entry
// allocated.
type entryEncoder struct {
	buf []byte
	enc *codec.Encoder
}

var entryEncoders = sync.Pool{New: func() any {
	e := &entryEncoder{buf: make([]byte, 0, 512)}
	e.enc = codec.NewEncoderBytes(&e.buf, msgpackHandle)
	return e
}}

// maxPooledEntry bounds the buffers kept for reuse (a larger entry's buffer
// is left to the garbage collector). A plan of 1,000 placements or a batch
// of the nodes' reports is 0.3–2.5 MB: left to the collector, each grew its
// buffer from 512 bytes by doubling, twice its size in garbage before the
// copy (a quarter of all the bytes a 100,000-placement run allocated). The
// pool drops what two collections find unused.
const maxPooledEntry = 8 << 20

// Encode turns a request into a log entry: the type byte, then msgpack.
func Encode(t MessageType, req any) ([]byte, error) {
	e := entryEncoders.Get().(*entryEncoder)
	e.enc.ResetBytes(&e.buf)
	err := e.enc.Encode(req)
	var out []byte
	if err == nil {
		out = make([]byte, 1+len(e.buf))
		out[0] = byte(t)
		copy(out[1:], e.buf)
	}
	if cap(e.buf) <= maxPooledEntry {
		entryEncoders.Put(e)
	}
	if err != nil {
		return nil, fmt.Errorf("failed encoding %d request: %w", t, err)
	}
	return out, nil
}

var entryDecoders = sync.Pool{New: func() any { return codec.NewDecoderBytes(nil, msgpackHandle) }}

func decode(buf []byte, out any) error {
	dec := entryDecoders.Get().(*codec.Decoder)
	dec.ResetBytes(buf)
	err := dec.Decode(out)
	dec.ResetBytes(noBytes) // keep no entry alive through the pool
	entryDecoders.Put(dec)
	return err
}

var noBytes = []byte{}
