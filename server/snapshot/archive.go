// Package snapshot reads and writes snapshot archives: a gzip-compressed tar
// of meta.json (the Raft snapshot's metadata), state.bin (the FSM's snapshot
// stream) and SHA256SUMS (checksums of both).
package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

const (
	metaFile  = "meta.json"
	stateFile = "state.bin"
	sumsFile  = "SHA256SUMS"
	product   = "ctlplane"
)

// Meta describes an archive.
type Meta struct {
	Product   string
	Version   int // archive format version
	ID        string
	Index     uint64
	Term      uint64
	Size      int64 // bytes of state.bin
	CreatedAt time.Time
	// SnapshotVersion is raft's snapshot format version.
	SnapshotVersion raft.SnapshotVersion
}

// RaftMeta is the Raft snapshot metadata a restore needs.
func (m *Meta) RaftMeta() *raft.SnapshotMeta {
	return &raft.SnapshotMeta{Version: m.SnapshotVersion, ID: m.ID, Index: m.Index, Term: m.Term, Size: m.Size}
}

// Write streams an archive of a Raft snapshot to w.
func Write(w io.Writer, rm *raft.SnapshotMeta, state io.Reader) error {
	meta := Meta{
		Product: product, Version: 1, ID: rm.ID, Index: rm.Index, Term: rm.Term,
		Size: rm.Size, CreatedAt: time.Now().UTC(), SnapshotVersion: rm.Version,
	}
	metaJSON, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	put := func(name string, size int64, body io.Reader) (string, error) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: now}); err != nil {
			return "", err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(tw, h), body)
		if err != nil {
			return "", err
		}
		if n != size {
			return "", fmt.Errorf("%s: wrote %d bytes, expected %d", name, n, size)
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	metaSum, err := put(metaFile, int64(len(metaJSON)), strings.NewReader(string(metaJSON)))
	if err != nil {
		return err
	}
	stateSum, err := put(stateFile, rm.Size, state)
	if err != nil {
		return err
	}
	sums := fmt.Sprintf("%s  %s\n%s  %s\n", metaSum, metaFile, stateSum, stateFile)
	if _, err := put(sumsFile, int64(len(sums)), strings.NewReader(sums)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Archive is a verified archive whose state is kept in a temporary file.
type Archive struct {
	Meta  Meta
	state *os.File
}

// State returns a reader of state.bin from its start.
func (a *Archive) State() (io.Reader, error) {
	if _, err := a.state.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return bufio.NewReader(a.state), nil
}

// Close removes the temporary file.
func (a *Archive) Close() {
	a.state.Close()
	os.Remove(a.state.Name())
}

// ErrInvalid wraps every reason an archive is refused.
var ErrInvalid = errors.New("invalid snapshot archive")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Read reads and verifies an archive: the three files must be there, the
// checksums must match, and the metadata must be ctlplane's.
func Read(r io.Reader) (*Archive, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, invalid("not a gzip stream: %v", err)
	}
	tmp, err := os.CreateTemp("", "ctlplane-snapshot-*")
	if err != nil {
		return nil, err
	}
	a := &Archive{state: tmp}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	sums := map[string]string{}
	var metaJSON []byte
	var sumsText string
	seen := map[string]bool{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, invalid("reading the archive failed (truncated or corrupt?): %v", err)
		}
		h := sha256.New()
		switch hdr.Name {
		case metaFile:
			metaJSON, err = io.ReadAll(io.TeeReader(io.LimitReader(tr, 1<<20), h))
		case stateFile:
			_, err = io.Copy(io.MultiWriter(tmp, h), tr)
		case sumsFile:
			var b []byte
			b, err = io.ReadAll(io.LimitReader(tr, 1<<16))
			sumsText = string(b)
		default:
			return nil, invalid("unexpected file %q in the archive", hdr.Name)
		}
		if err != nil {
			return nil, invalid("reading %s failed (truncated or corrupt?): %v", hdr.Name, err)
		}
		seen[hdr.Name] = true
		sums[hdr.Name] = hex.EncodeToString(h.Sum(nil))
	}
	// The tar stream ends before the gzip trailer: read to the end so that
	// gzip checks its CRC and length, and a cut-off archive is refused.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, invalid("reading the archive failed (truncated or corrupt?): %v", err)
	}
	for _, name := range []string{metaFile, stateFile, sumsFile} {
		if !seen[name] {
			return nil, invalid("%s is missing", name)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(sumsText), "\n") {
		sum, name, found := strings.Cut(line, "  ")
		if !found {
			return nil, invalid("malformed %s line %q", sumsFile, line)
		}
		if got, ok := sums[name]; !ok || name == sumsFile {
			return nil, invalid("%s names unexpected file %q", sumsFile, name)
		} else if got != sum {
			return nil, invalid("checksum mismatch for %s", name)
		}
		delete(sums, name)
	}
	delete(sums, sumsFile)
	if len(sums) != 0 {
		return nil, invalid("%s does not cover every file", sumsFile)
	}
	if err := json.Unmarshal(metaJSON, &a.Meta); err != nil {
		return nil, invalid("bad %s: %v", metaFile, err)
	}
	if a.Meta.Product != product || a.Meta.Version != 1 {
		return nil, invalid("not a ctlplane snapshot (product %q, version %d)", a.Meta.Product, a.Meta.Version)
	}
	info, err := tmp.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() != a.Meta.Size {
		return nil, invalid("state is %d bytes, metadata says %d", info.Size(), a.Meta.Size)
	}
	ok = true
	return a, nil
}
