// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

package raftboltdb

import (
	"bytes"
	"encoding/binary"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The handles are made once and shared (ctlplane fork): a handle caches
// what it learns of each type, and making one per entry, as upstream does,
// rebuilt that cache on every log entry written or read (2.5% of a binding
// rule create's CPU, 6% of what it allocates). A handle is safe for
// concurrent use once set up; the bytes are the same.
var (
	decodeHandle      = &codec.MsgpackHandle{}
	encodeHandleOld   = &codec.MsgpackHandle{BasicHandle: codec.BasicHandle{TimeNotBuiltin: true}}
	encodeHandleNewTS = &codec.MsgpackHandle{BasicHandle: codec.BasicHandle{TimeNotBuiltin: false}}
)

// Decode reverses the encode operation on a byte slice input
func decodeMsgPack(buf []byte, out interface{}) error {
	return codec.NewDecoderBytes(buf, decodeHandle).Decode(out)
}

// Encode writes an encoded object to a new bytes buffer
func encodeMsgPack(in interface{}, useNewTimeFormat bool) (*bytes.Buffer, error) {
	buf := bytes.NewBuffer(nil)
	hd := encodeHandleOld
	if useNewTimeFormat {
		hd = encodeHandleNewTS
	}
	enc := codec.NewEncoder(buf, hd)
	err := enc.Encode(in)
	return buf, err
}

// Converts bytes to an integer
func bytesToUint64(b []byte) uint64 {
	return binary.BigEndian.Uint64(b)
}

// Converts a uint to a byte slice
func uint64ToBytes(u uint64) []byte {
	buf := make([]byte, 8)
	binary.BigEndian.PutUint64(buf, u)
	return buf
}
