package server

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkBoltFreelist appends batches of 14 entries of 275 bytes (what a
// Raft batch of binding-rule creates at 64 clients carries) to a boltdb log
// store whose file has the free pages a busy server's has: 200,000 entries
// written, then truncated to the last 10,240 (TrailingLogs) as after a
// snapshot. Writes skip the fsync (bbolt's NoSync), so what is measured is
// the CPU and memory of a commit: with the array freelist every commit
// merges a new sorted copy of all free page IDs and writes them all out.
//
//	go test -run '^$' -bench BoltFreelist -benchmem ./server/
func BenchmarkBoltFreelist(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts BoltOptions
	}{
		{"array,synced", BoltOptions{}},
		{"map,synced", BoltOptions{FreelistMap: true}},
		{"default", DefaultConfig().RaftBolt},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bo := tc.opts.bbolt()
			bo.NoSync = true
			store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db"), BoltOptions: bo})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			data := make([]byte, 240) // + the entry's framing: ~275 bytes
			next := uint64(1)
			appendLogs := func(n int) {
				logs := make([]*raft.Log, n)
				for i := range logs {
					logs[i] = &raft.Log{Index: next, Term: 2, Type: raft.LogCommand, Data: data}
					next++
				}
				if err := store.StoreLogs(logs); err != nil {
					b.Fatal(err)
				}
			}
			for range 200 {
				appendLogs(1000)
			}
			if err := store.DeleteRange(1, next-10_241); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				appendLogs(14)
			}
		})
	}
}
