package server

import (
	"bytes"
	"io"
	"math/rand"
	"testing"

	"github.com/hashicorp/raft"
)

// TestMemSnapshots: contents written in pieces of every size across chunk
// boundaries read back whole; a snapshot is the latest only once closed;
// a cancelled one leaves the latest as it was.
func TestMemSnapshots(t *testing.T) {
	store := newMemSnapshots()
	if l, err := store.List(); err != nil || len(l) != 0 {
		t.Fatalf("empty store lists %v, %v", l, err)
	}
	if _, err := store.Create(0, 1, 1, raft.Configuration{}, 1, nil); err == nil {
		t.Fatal("version 0 accepted")
	}
	conf := raft.Configuration{Servers: []raft.Server{{ID: "a", Address: "127.0.0.1:1", Suffrage: raft.Voter}}}
	rng := rand.New(rand.NewSource(1))
	write := func(index uint64, size int) (raft.SnapshotSink, []byte) {
		t.Helper()
		sink, err := store.Create(1, index, 2, conf, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, size)
		rng.Read(want)
		for p := want; len(p) > 0; {
			k := min(len(p), 1+rng.Intn(3*memSnapshotChunk/2))
			if n, err := sink.Write(p[:k]); n != k || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			p = p[k:]
		}
		return sink, want
	}
	check := func(id string, want []byte, index uint64) {
		t.Helper()
		l, err := store.List()
		if err != nil || len(l) != 1 || l[0].ID != id || l[0].Index != index || l[0].Size != int64(len(want)) ||
			l[0].ConfigurationIndex != 3 || len(l[0].Configuration.Servers) != 1 {
			t.Fatalf("List: %+v, %v; want %s at %d, %d bytes", l, err, id, index, len(want))
		}
		for range 2 { // readers share the chunks: twice alike
			meta, rc, err := store.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, want) || meta.Size != int64(len(want)) {
				t.Fatalf("Open %s: %d bytes (meta %d), %v; want %d", id, len(got), meta.Size, err, len(want))
			}
		}
	}

	first, want := write(10, 3*memSnapshotChunk+17)
	if l, _ := store.List(); len(l) != 0 {
		t.Fatalf("a snapshot not closed is listed: %+v", l)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	check(first.ID(), want, 10)
	if _, err := first.Write([]byte("x")); err == nil {
		t.Fatal("a write after Close was taken")
	}

	cancelled, _ := write(20, memSnapshotChunk)
	if err := cancelled.Cancel(); err != nil {
		t.Fatal(err)
	}
	check(first.ID(), want, 10)
	if _, _, err := store.Open(cancelled.ID()); err == nil {
		t.Fatal("a cancelled snapshot opens")
	}

	second, want2 := write(30, 5)
	second.Close()
	check(second.ID(), want2, 30)
	if _, _, err := store.Open(first.ID()); err == nil {
		t.Fatal("a replaced snapshot opens")
	}
}
