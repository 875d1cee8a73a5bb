package http

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/limits"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The client protocol's msgpack (api.Config.Msgpack): a status report's
// body and a node's allocation changes' answer, when the client asks; JSON
// stays the default. Decoding is as strict as the JSON's: a field the
// request's type lacks is refused.
var clientMsgpack = func() *codec.MsgpackHandle {
	h := api.NewMsgpackHandle()
	h.ErrorIfNoField = true
	return h
}()

var clientEncoders = api.NewMsgpackEncoders(clientMsgpack)

// decodeClientBody is decodeBody, or msgpack when the body says it is.
func decodeClientBody(r *http.Request, what string, out any) error {
	if r.Header.Get("Content-Type") != api.MsgpackContentType {
		return decodeBody(r, what, out)
	}
	prefix := what + " decoding failed"
	if r.Body == nil {
		return decodeFailed(prefix, io.EOF)
	}
	// At most the route's body limit is read; at most 4 MiB made up front.
	buf, err := api.ReadBody(r.Body, min(r.ContentLength, 4<<20))
	if err != nil {
		return decodeFailed(prefix, err)
	}
	if err := limits.CheckMsgpack(buf); err != nil {
		return decodeFailed(prefix, err)
	}
	dec := codec.NewDecoderBytes(buf, clientMsgpack)
	if err := dec.Decode(out); err != nil {
		return decodeFailed(prefix, err)
	}
	if dec.NumBytesRead() != len(buf) {
		return decodeFailed(prefix, errDataAfterMsgpack)
	}
	return nil
}

var errDataAfterMsgpack = errors.New("unexpected data after the msgpack object")

// wantsMsgpack says whether the request asks for a msgpack answer.
func wantsMsgpack(r *http.Request) bool {
	return r.Header.Get("Accept") == api.MsgpackContentType
}

// writeMsgpack answers obj in msgpack (the handler then returns written).
func writeMsgpack(w http.ResponseWriter, obj any) (any, error) {
	enc := clientEncoders.Get()
	defer clientEncoders.Put(enc)
	buf, err := enc.Encode(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the response: %w", err)
	}
	w.Header().Set("Content-Type", api.MsgpackContentType)
	// Its length, not chunks: the client reads it into one buffer.
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.Write(buf)
	return written, nil
}
