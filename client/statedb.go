package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The client's state in DATA_DIR/client/state.db, a bbolt file (as Nomad's
// client state DB): the node ID, and per allocation one record of what a
// restarted client needs to carry on. A change writes the records of the
// allocations it touched, never the whole state; many changes share one
// transaction (persist.go).
//
// Clients before this kept everything in DATA_DIR/client/state.json,
// rewritten whole on every change; the first start of this version moves
// that file's content into the DB and removes it.

const (
	stateDBFile     = "state.db"
	legacyStateFile = "state.json"
	// stateDBVersion is the layout of the buckets below.
	stateDBVersion = "1"
	// stateDBOpenTimeout bounds the wait for the file's lock (another agent
	// on the same data directory holds it).
	stateDBOpenTimeout = 5 * time.Second
)

var (
	metaBucket   = []byte("meta")
	allocsBucket = []byte("allocs")
	nodeIDKey    = []byte("node_id")
	versionKey   = []byte("version")
)

// stateDB is the open state file.
type stateDB struct {
	db   *bolt.DB
	path string
}

func stateDBPath(dataDir string) string { return filepath.Join(dataDir, "client", stateDBFile) }

// openStateDB opens (creating it when missing) the client's state DB,
// after moving an old-format state file into it.
func openStateDB(dataDir string) (*stateDB, error) {
	path := stateDBPath(dataDir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the client state directory: %w", err)
	}
	// Its pids are signalled and its tasks started again: only our own.
	if fi, err := os.Stat(path); err == nil {
		if err := checkOwned("client state", path, fi, false); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	legacy, err := loadLegacyState(dataDir)
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: stateDBOpenTimeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("client state %s is locked by another process (another agent on this data directory?)", path)
		}
		return nil, fmt.Errorf("opening the client state %s: %w", path, err)
	}
	s := &stateDB{db: db, path: path}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := meta.Get(versionKey); v != nil && string(v) != stateDBVersion {
			return fmt.Errorf("it has layout version %q; this agent reads version %s", v, stateDBVersion)
		}
		if err := meta.Put(versionKey, []byte(stateDBVersion)); err != nil {
			return err
		}
		if legacy != nil {
			// The old file is what the last run saw: it replaces the DB's allocations.
			if tx.Bucket(allocsBucket) != nil {
				if err := tx.DeleteBucket(allocsBucket); err != nil {
					return err
				}
			}
		}
		allocs, err := tx.CreateBucketIfNotExists(allocsBucket)
		if err != nil {
			return err
		}
		if legacy == nil {
			return nil
		}
		if legacy.NodeID != "" {
			if err := meta.Put(nodeIDKey, []byte(legacy.NodeID)); err != nil {
				return err
			}
		}
		for _, sa := range legacy.Allocs {
			if err := putAlloc(allocs, sa); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("client state %s: %w", path, err)
	}
	if legacy != nil {
		// Committed (and synced): the old file is no longer the state.
		old := filepath.Join(dataDir, "client", legacyStateFile)
		if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
			db.Close()
			return nil, fmt.Errorf("removing the migrated client state %s: %w", old, err)
		}
	}
	return s, nil
}

// loadLegacyState reads an old-format state file (nil when there is none).
func loadLegacyState(dataDir string) (*savedState, error) {
	path := filepath.Join(dataDir, "client", legacyStateFile)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := checkOwned("client state", path, fi, false); err != nil {
		return nil, err
	}
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedState
	if err := json.Unmarshal(buf, &s); err != nil {
		return nil, fmt.Errorf("client state %s is corrupt: %w", path, err)
	}
	return &s, nil
}

func putAlloc(b *bolt.Bucket, sa *savedAlloc) error {
	if sa == nil || sa.Alloc == nil || sa.Alloc.ID == "" {
		return nil
	}
	buf, err := json.Marshal(sa)
	if err != nil {
		return fmt.Errorf("encoding allocation %s: %w", sa.Alloc.ID, err)
	}
	return b.Put([]byte(sa.Alloc.ID), buf)
}

// load reads the node ID and every allocation's record.
func (s *stateDB) load() (*savedState, error) {
	out := &savedState{}
	err := s.db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(metaBucket); meta != nil {
			out.NodeID = string(meta.Get(nodeIDKey))
		}
		allocs := tx.Bucket(allocsBucket)
		if allocs == nil {
			return nil
		}
		return allocs.ForEach(func(k, v []byte) error {
			var sa savedAlloc
			if err := json.Unmarshal(v, &sa); err != nil {
				return fmt.Errorf("the record of allocation %s is corrupt: %w", k, err)
			}
			out.Allocs = append(out.Allocs, &sa)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("client state %s: %w", s.path, err)
	}
	return out, nil
}

// putNodeID records the node's ID.
func (s *stateDB) putNodeID(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(nodeIDKey, []byte(id))
	})
}

// write stores puts and deletes the records of gone, in one transaction.
func (s *stateDB) write(puts []*savedAlloc, gone []string) error {
	// Encoded before the transaction: bbolt allows one writer at a time.
	bufs := make([][]byte, len(puts))
	for i, sa := range puts {
		buf, err := json.Marshal(sa)
		if err != nil {
			return fmt.Errorf("encoding allocation %s: %w", sa.Alloc.ID, err)
		}
		bufs[i] = buf
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(allocsBucket)
		for i, sa := range puts {
			if err := b.Put([]byte(sa.Alloc.ID), bufs[i]); err != nil {
				return err
			}
		}
		for _, id := range gone {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// allocIDs lists the allocations with a record.
func (s *stateDB) allocIDs() ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(allocsBucket).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

func (s *stateDB) close() error { return s.db.Close() }
