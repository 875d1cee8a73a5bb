package server

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

// Raft log stores a persistent server can keep its log in.
const (
	// LogStoreBoltDB is raft-boltdb (bbolt): one file, two fdatasyncs per
	// commit. The default.
	LogStoreBoltDB = "boltdb"
	// LogStoreWAL is HashiCorp's raft-wal: append-only segment files, one
	// fsync per append, what Consul offers as raft_logstore backend "wal".
	LogStoreWAL = "wal"
)

// BoltOptions are the bbolt settings of the boltdb log store. DefaultConfig
// turns NoFreelistSync and FreelistMap on, as etcd does for its bbolt: a
// Raft log is appended at one end and truncated at the other after each
// snapshot, which leaves the file with thousands of free pages (the log
// between two snapshot checks), and bbolt's array freelist merges a new
// sorted copy of all of them on every commit and writes them all out
// (BenchmarkBoltFreelist). Either setting reads a file the other wrote.
type BoltOptions struct {
	// NoFreelistSync skips writing bbolt's freelist on every commit (it is
	// rebuilt by a scan when the file is opened).
	NoFreelistSync bool
	// FreelistMap uses bbolt's hashmap freelist instead of the array one.
	FreelistMap bool
	// InitialMmapSize maps this many bytes up front, so the file can grow
	// that far without a remap (bytes; 0: bbolt's default).
	InitialMmapSize int
}

// bbolt is o as bbolt's options.
func (o BoltOptions) bbolt() *bbolt.Options {
	bo := &bbolt.Options{Timeout: bbolt.DefaultOptions.Timeout, NoFreelistSync: o.NoFreelistSync,
		FreelistType: bbolt.FreelistArrayType, InitialMmapSize: o.InitialMmapSize}
	if o.FreelistMap {
		bo.FreelistType = bbolt.FreelistMapType
	}
	return bo
}

// openLogStore opens the Raft log and stable store of a persistent server in
// dir: the log store cfg.RaftLogStore names. A directory holding the other
// store's files is refused: switching would lose the log.
func (s *Server) openLogStore(dir string) (raft.LogStore, raft.StableStore, error) {
	kind := s.config.RaftLogStore
	if kind == "" {
		kind = LogStoreBoltDB
	}
	boltPath, walDir := filepath.Join(dir, "raft.db"), filepath.Join(dir, "wal")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch kind {
	case LogStoreBoltDB:
		if exists(walDir) {
			return nil, nil, fmt.Errorf("-raft-log-store=boltdb, but %s holds a wal log store: start with -raft-log-store=wal", dir)
		}
		store, err := raftboltdb.New(raftboltdb.Options{Path: boltPath, BoltOptions: s.config.RaftBolt.bbolt()})
		if err != nil {
			return nil, nil, fmt.Errorf("failed to open Raft store %s: %w", boltPath, err)
		}
		s.logStoreCloser = store
		return newLogCache(store, logCacheEntries, logCacheBytes), store, nil
	case LogStoreWAL:
		if exists(boltPath) {
			return nil, nil, fmt.Errorf("-raft-log-store=wal, but %s holds a boltdb log store (raft.db): start with -raft-log-store=boltdb", dir)
		}
		if err := os.MkdirAll(walDir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("failed to create %s: %w", walDir, err)
		}
		// WAL.Close leaves its metadata store open (and its file locked):
		// we hand it one we close ourselves.
		meta := &metadb.BoltMetaDB{}
		segment := s.config.RaftWALSegmentSize
		if segment <= 0 {
			segment = wal.DefaultSegmentSize
		}
		w, err := wal.Open(walDir, wal.WithLogger(s.logger.Named("wal")), wal.WithMetaStore(meta), wal.WithSegmentSize(segment))
		if err != nil {
			meta.Close()
			return nil, nil, fmt.Errorf("failed to open Raft WAL %s: %w", walDir, err)
		}
		s.logStoreCloser = closers{w, meta}
		return newLogCache(w, logCacheEntries, logCacheBytes), w, nil
	default:
		return nil, nil, fmt.Errorf("unknown -raft-log-store %q: use boltdb or wal", kind)
	}
}

// closers closes each in order and returns the first error.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// closeLogStore closes the log store, if one is open.
func (s *Server) closeLogStore() error {
	if s.logStoreCloser == nil {
		return nil
	}
	c := s.logStoreCloser
	s.logStoreCloser = nil
	return c.Close()
}
