package api

import (
	"reflect"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MsgpackContentType is the client protocol's msgpack body (Config.Msgpack):
// a status report's request, a node's allocation changes' answer.
const MsgpackContentType = "application/msgpack"

// NewMsgpackHandle is the client protocol's msgpack encoding, the servers'
// and the clients' alike: structs as maps by field name (api's types and the
// servers' own decode each other, as with JSON), strings as strings,
// free-form maps (a task's Config) as map[string]any; integers in them stay
// integers (JSON made them float64: the drivers read both). A handle keeps
// what it learned of each type: make one and share it.
func NewMsgpackHandle() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}

var msgpackHandle = NewMsgpackHandle()

// encodeMsgpack is v in the client protocol's msgpack.
func encodeMsgpack(v any) ([]byte, error) {
	var buf []byte
	err := codec.NewEncoderBytes(&buf, msgpackHandle).Encode(v)
	return buf, err
}
