package api

import (
	"bytes"
	"strings"
	"testing"
)

// ReadBody reads the whole body whatever the length said: none, exact,
// short or long.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 1000)
	for _, n := range []int64{-1, 0, 10, 1000, 5000} {
		got, err := ReadBody(strings.NewReader(body), n)
		if err != nil || string(got) != body {
			t.Errorf("length %d: %d bytes, %v", n, len(got), err)
		}
	}
}

// An encoder's bytes are its buffer's, reused by the next Encode.
func TestMsgpackEncoderRoundTrip(t *testing.T) {
	e := NewMsgpackEncoder(NewMsgpackHandle())
	for _, want := range []AllocUpdateRequest{{NodeID: "a"}, {NodeID: "bb", Allocs: []*AllocClientUpdate{{ID: "x", ClientStatus: "running"}}}} {
		buf, err := e.Encode(&want)
		if err != nil {
			t.Fatal(err)
		}
		var got AllocUpdateRequest
		if err := decodeMsgpackBytes(buf, &got); err != nil || got.NodeID != want.NodeID || len(got.Allocs) != len(want.Allocs) {
			t.Fatalf("%+v: got %+v, %v", want, got, err)
		}
	}
}

// A pooled body releases its buffer once, however often it is closed.
func TestPooledBodyReleasesOnce(t *testing.T) {
	n := 0
	b := &pooledBody{Reader: bytes.NewReader([]byte("x")), release: func() { n++ }}
	b.Close()
	b.Close()
	if n != 1 {
		t.Fatalf("released %d times", n)
	}
}
