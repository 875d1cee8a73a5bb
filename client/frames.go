package client

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// Nomad's framed stream (logs without plain=true): JSON StreamFrames
// {"Data": base64, "File", "Offset"} one after the other, each at most
// frameSize bytes of data, and a heartbeat {} after heartbeatEvery without
// a frame (while following).
const (
	frameSize      = 64 << 10
	heartbeatEvery = time.Second
)

// framer turns the bytes streamLogs writes into frames. streamLogs says
// which file the next bytes come from (fileAt); Flush sends what is
// buffered, or a heartbeat when nothing was sent for a while.
type framer struct {
	enc      *json.Encoder
	flush    func()
	allocDir string
	file     string
	offset   int64 // in file, after the buffered data
	buf      []byte
	last     time.Time
	err      error
}

func newFramer(w io.Writer, allocDir string, flush func()) *framer {
	return &framer{enc: json.NewEncoder(w), flush: flush, allocDir: allocDir, last: time.Now()}
}

// fileAt: the next bytes written are from path at offset.
func (f *framer) fileAt(path string, offset int64) {
	rel, err := filepath.Rel(f.allocDir, path)
	if err != nil {
		rel = filepath.Base(path)
	}
	if rel != f.file || offset != f.offset {
		f.emit()
	}
	f.file, f.offset = filepath.ToSlash(rel), offset
}

func (f *framer) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), frameSize-len(f.buf))
		f.buf = append(f.buf, p[:k]...)
		f.offset += int64(k)
		p = p[k:]
		if len(f.buf) >= frameSize {
			f.emit()
		}
	}
	return n, f.err
}

// emit sends the buffered data as one frame.
func (f *framer) emit() {
	if len(f.buf) == 0 || f.err != nil {
		return
	}
	f.err = f.enc.Encode(&api.StreamFrame{Data: f.buf, File: f.file, Offset: f.offset})
	f.buf = f.buf[:0]
	f.last = time.Now()
}

// Flush sends what is buffered (or a heartbeat) and pushes it out.
func (f *framer) Flush() {
	switch {
	case len(f.buf) > 0:
		f.emit()
	case f.err == nil && time.Since(f.last) >= heartbeatEvery:
		f.err = f.enc.Encode(struct{}{})
		f.last = time.Now()
	}
	if f.flush != nil {
		f.flush()
	}
}

// logPlain reads the plain parameter (false: frames).
func logPlain(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("failed to parse plain %q as a bool", v)
	}
	return b, nil
}

// event sends a frame naming a file event (e.g. "file truncated") at
// the start of path.
func (f *framer) event(path, name string) {
	f.emit()
	f.fileAt(path, 0)
	if f.err == nil {
		f.err = f.enc.Encode(&api.StreamFrame{File: f.file, Offset: 0, FileEvent: name})
		f.last = time.Now()
	}
}
