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
	// BestSpeed: compressing the state was most of a save's time at the
	// default level, for an archive only about a third larger.
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
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

// MaxStateSize caps the state a restore accepts (the size meta.json
// declares, and what is copied): a forged archive cannot fill the disk.
var MaxStateSize int64 = 8 << 30

// Read reads and verifies an archive: exactly meta.json, state.bin and
// SHA256SUMS, in that order, each a regular file appearing once; state.bin
// no larger than meta.json declares (itself capped by MaxStateSize); the
// checksums must match what was read, and the metadata must be ctlplane's.
func Read(r io.Reader) (*Archive, error) {
	raw := &countingReader{r: r}
	gz, err := gzip.NewReader(raw)
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
	var sumsText string
	order := []string{metaFile, stateFile, sumsFile}
	tr := tar.NewReader(gz)
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			if i < len(order) {
				return nil, invalid("%s is missing", order[i])
			}
			break
		}
		if err != nil {
			return nil, invalid("reading the archive failed (truncated or corrupt?): %v", err)
		}
		if i >= len(order) {
			return nil, invalid("unexpected extra entry %q after %s", hdr.Name, sumsFile)
		}
		if hdr.Name != order[i] {
			if i > 0 && hdr.Name == order[i-1] {
				return nil, invalid("%s appears twice", hdr.Name)
			}
			if hdr.Name != metaFile && hdr.Name != stateFile && hdr.Name != sumsFile {
				return nil, invalid("unexpected file %q in the archive", hdr.Name)
			}
			for _, later := range order[i+1:] {
				if hdr.Name == later {
					return nil, invalid("%s is missing", order[i])
				}
			}
			return nil, invalid("%s must come before %s", order[i], hdr.Name)
		}
		if err := regularFile(hdr); err != nil {
			return nil, err
		}
		h := sha256.New()
		switch hdr.Name {
		case metaFile:
			if hdr.Size > 1<<20 {
				return nil, invalid("%s is %d bytes, over the 1 MiB limit", metaFile, hdr.Size)
			}
			var metaJSON []byte
			if metaJSON, err = io.ReadAll(io.TeeReader(tr, h)); err != nil {
				break
			}
			if err := json.Unmarshal(metaJSON, &a.Meta); err != nil {
				return nil, invalid("bad %s: %v", metaFile, err)
			}
			if a.Meta.Product != product || a.Meta.Version != 1 {
				return nil, invalid("not a ctlplane snapshot (product %q, version %d)", a.Meta.Product, a.Meta.Version)
			}
			if a.Meta.Size < 0 || a.Meta.Size > MaxStateSize {
				return nil, invalid("%s declares a state of %d bytes; the limit is %d", metaFile, a.Meta.Size, MaxStateSize)
			}
		case stateFile:
			if hdr.Size != a.Meta.Size {
				return nil, invalid("state is %d bytes, metadata says %d", hdr.Size, a.Meta.Size)
			}
			var n int64
			n, err = io.Copy(io.MultiWriter(&bombGuard{w: tmp, raw: raw}, h), io.LimitReader(tr, a.Meta.Size))
			if err == nil && n != a.Meta.Size {
				err = io.ErrUnexpectedEOF
			}
		case sumsFile:
			if hdr.Size > 1<<16 {
				return nil, invalid("%s is %d bytes, over the 64 KiB limit", sumsFile, hdr.Size)
			}
			var b []byte
			b, err = io.ReadAll(tr)
			sumsText = string(b)
		}
		if err != nil {
			return nil, invalid("reading %s failed (truncated or corrupt?): %v", hdr.Name, err)
		}
		sums[hdr.Name] = hex.EncodeToString(h.Sum(nil))
	}
	// The tar stream ends before the gzip trailer: read to the end so that
	// gzip checks its CRC and length, and a cut-off archive is refused. What
	// follows the tar end is bounded too (a gzip bomb of padding).
	if n, err := io.Copy(io.Discard, io.LimitReader(gz, 1<<20)); err != nil {
		return nil, invalid("reading the archive failed (truncated or corrupt?): %v", err)
	} else if n == 1<<20 {
		return nil, invalid("unexpected data after the archive's end")
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
	ok = true
	return a, nil
}

// regularFile refuses every tar entry that is not a plain regular file:
// sparse files (whose holes expand on reading), links, devices, directories.
func regularFile(hdr *tar.Header) error {
	if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
		return invalid("%s is not a regular file (tar type %q)", hdr.Name, hdr.Typeflag)
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return invalid("%s is a sparse file", hdr.Name)
		}
	}
	return nil
}

// maxExpansion bounds how many times larger the state may be than the
// compressed bytes read so far: real states compress a few times, a gzip
// bomb or a sparse file thousands of times.
const maxExpansion = 256

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bombGuard writes to w until the output outgrows maxExpansion times the input.
type bombGuard struct {
	w       io.Writer
	raw     *countingReader
	written int64
}

func (b *bombGuard) Write(p []byte) (int, error) {
	b.written += int64(len(p))
	if b.written > maxExpansion*b.raw.n+16<<20 {
		return 0, invalid("state.bin expands more than %d times its compressed size (a compression bomb?)", maxExpansion)
	}
	return b.w.Write(p)
}
