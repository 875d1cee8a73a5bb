package fsm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"sync"

	"github.com/ctlplane/ctlplane/state"
)

// prepared is a store decoded from a snapshot stream ahead of the Restore
// of that same stream, with the stream's SHA-256.
type prepared struct {
	sum   []byte
	store *state.Store
}

// preparedSlot holds at most one prepared store.
type preparedSlot struct {
	mu sync.Mutex
	p  *prepared
}

// errPreparedMismatch: Restore was handed another stream than the prepared
// one (a snapshot installed from a leader meanwhile): nothing is changed
// and the install is retried by Raft, without the prepared store.
var errPreparedMismatch = errors.New("snapshot stream differs from the one prepared for restore; not applied")

// PrepareRestore decodes a whole snapshot stream into a detached store, as
// DecodeSnapshot does (and with its errors), and keeps it for the next
// Restore: when that Restore is handed the same bytes, it swaps this store
// in after only hashing the stream, instead of decoding it a second time.
// A snapshot restore through Raft checks the archive with this first, then
// has Raft restore it; the caller must not prepare another stream before
// that Restore has run (or DropPrepared was called).
func (f *FSM) PrepareRestore(r io.Reader) error {
	h := sha256.New()
	store, err := DecodeSnapshot(io.TeeReader(r, h))
	if err != nil {
		return err
	}
	f.prep.mu.Lock()
	f.prep.p = &prepared{sum: h.Sum(nil), store: store}
	f.prep.mu.Unlock()
	return nil
}

// DropPrepared forgets a prepared store that no Restore took.
func (f *FSM) DropPrepared() {
	f.prep.mu.Lock()
	f.prep.p = nil
	f.prep.mu.Unlock()
}

// takePrepared returns and forgets the prepared store, if any.
func (f *FSM) takePrepared() *prepared {
	f.prep.mu.Lock()
	defer f.prep.mu.Unlock()
	p := f.prep.p
	f.prep.p = nil
	return p
}

// restorePrepared returns p's store when r holds the stream p was decoded
// from; it reads r to its end.
func restorePrepared(p *prepared, r io.Reader) (*state.Store, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return nil, err
	}
	if !bytes.Equal(h.Sum(nil), p.sum) {
		return nil, errPreparedMismatch
	}
	return p.store, nil
}
