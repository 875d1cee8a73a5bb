package raftboltdb

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// TestSharedHandlesSameBytes (ctlplane fork): the shared handles write the
// bytes a fresh handle per entry wrote, in both time formats, and read them
// back the same, one entry after another.
func TestSharedHandlesSameBytes(t *testing.T) {
	logs := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("one"), AppendedAt: time.Unix(1700000000, 5).UTC()},
		{Index: 2, Term: 3, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{7}, 5000), Extensions: []byte("x")},
		{Index: 3, Term: 3, Type: raft.LogNoop},
	}
	for _, newTS := range []bool{false, true} {
		for round := 0; round < 2; round++ { // the second round uses the warm caches
			for _, l := range logs {
				var want bytes.Buffer
				fresh := codec.MsgpackHandle{BasicHandle: codec.BasicHandle{TimeNotBuiltin: !newTS}}
				if err := codec.NewEncoder(&want, &fresh).Encode(l); err != nil {
					t.Fatal(err)
				}
				got, err := encodeMsgPack(l, newTS)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("log %d (new time format %v): shared handle wrote %x, a fresh one %x", l.Index, newTS, got.Bytes(), want.Bytes())
				}
				var back raft.Log
				if err := decodeMsgPack(got.Bytes(), &back); err != nil {
					t.Fatal(err)
				}
				if back.Index != l.Index || back.Term != l.Term || back.Type != l.Type || !bytes.Equal(back.Data, l.Data) ||
					!bytes.Equal(back.Extensions, l.Extensions) || !back.AppendedAt.Equal(l.AppendedAt) {
					t.Fatalf("log %d read back as %+v", l.Index, back)
				}
				if !reflect.DeepEqual(back.Data, l.Data) && len(l.Data) > 0 {
					t.Fatalf("log %d data changed", l.Index)
				}
			}
		}
	}
}
