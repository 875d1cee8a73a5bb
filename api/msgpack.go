package api

import (
	"bytes"
	"io"
	"reflect"
	"sync"

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

// MsgpackEncoder is a msgpack encoder and its buffer, for reuse (a node's
// changes of 1,000 allocations are ~1 MB: grown from nothing each time,
// the buffer made twice that in garbage).
type MsgpackEncoder struct {
	buf []byte
	enc *codec.Encoder
}

// NewMsgpackEncoder is an encoder of h's msgpack.
func NewMsgpackEncoder(h *codec.MsgpackHandle) *MsgpackEncoder {
	e := &MsgpackEncoder{}
	e.enc = codec.NewEncoderBytes(&e.buf, h)
	return e
}

// Encode encodes v; the bytes are the encoder's until the next Encode.
func (e *MsgpackEncoder) Encode(v any) ([]byte, error) {
	e.enc.ResetBytes(&e.buf)
	err := e.enc.Encode(v)
	return e.buf, err
}

// maxPooledMsgpack bounds the buffers kept for reuse.
const maxPooledMsgpack = 4 << 20

// MsgpackEncoders pools encoders of one handle.
type MsgpackEncoders struct{ pool sync.Pool }

// NewMsgpackEncoders pools encoders of h.
func NewMsgpackEncoders(h *codec.MsgpackHandle) *MsgpackEncoders {
	p := &MsgpackEncoders{}
	p.pool.New = func() any { return NewMsgpackEncoder(h) }
	return p
}

// Get is an encoder of the pool; Put it back when its bytes are no longer used.
func (p *MsgpackEncoders) Get() *MsgpackEncoder { return p.pool.Get().(*MsgpackEncoder) }

// Put returns e to the pool (unless its buffer grew past the bound).
func (p *MsgpackEncoders) Put(e *MsgpackEncoder) {
	if cap(e.buf) <= maxPooledMsgpack {
		p.pool.Put(e)
	}
}

// ReadBody reads r whole into a buffer of n bytes when n, the body's
// length, is known (io.ReadAll grows from 512 bytes by doubling: twice a
// megabyte answer in garbage); past n the buffer grows as needed.
func ReadBody(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 || n > maxPreallocatedBody {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, n+1)) // +1: the EOF read needs no growth
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// maxPreallocatedBody bounds what a Content-Length may make ReadBody allocate
// before any byte arrives.
const maxPreallocatedBody = 64 << 20

// decodeMsgpackBytes decodes buf, the client protocol's msgpack, into out.
func decodeMsgpackBytes(buf []byte, out any) error {
	return codec.NewDecoderBytes(buf, msgpackHandle).Decode(out)
}
