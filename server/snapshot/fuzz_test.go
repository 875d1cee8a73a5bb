package snapshot

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

// FuzzRead (issue 8): the snapshot archive reader, which restores take from
// the network. No input panics; every refusal is ErrInvalid (a 400); an
// archive it accepts has exactly the declared state and the state file is
// cleaned up.
func FuzzRead(f *testing.F) {
	defer func(old int64) { MaxStateSize = old }(MaxStateSize)
	MaxStateSize = 1 << 20 // a fuzzed archive must not write gigabytes
	state := []byte("the FSM's snapshot stream")
	meta, sums := valid(state)
	good := build(f, []entry{{name: metaFile, body: meta}, {name: stateFile, body: state}, {name: sumsFile, body: sums}}, nil)
	f.Add(good)
	f.Add(build(f, []entry{{name: metaFile, body: meta}, {name: stateFile, body: state}, {name: stateFile, body: state}, {name: sumsFile, body: sums}}, nil))
	f.Add(build(f, []entry{{name: metaFile, body: meta}, {name: sumsFile, body: sums}}, nil))
	f.Add(good[:len(good)/2])
	if sparse, err := base64.StdEncoding.DecodeString(gnuSparse); err == nil {
		f.Add(sparse)
	}
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := Read(bytes.NewReader(raw))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Read: %v; want ErrInvalid (a 400)", err)
			}
			return
		}
		defer a.Close()
		r, err := a.State()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(r); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != a.Meta.Size {
			t.Fatalf("accepted an archive whose state is %d bytes, meta says %d", buf.Len(), a.Meta.Size)
		}
	})
}
