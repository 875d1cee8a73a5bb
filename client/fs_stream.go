package client

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// fs readat (a range of a file) and fs stream (a file followed, in
// Nomad's frames), as Nomad's `alloc fs -tail` and `-f` read them.

// openRegular opens a regular file of the allocation directory (it
// answers the refusal itself).
func openRegular(w http.ResponseWriter, root *os.Root, clean, rel string) (*os.File, os.FileInfo, bool) {
	f, err := openRO(root, rel)
	if err != nil {
		fsError(w, clean, err)
		return nil, nil, false
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		fsError(w, clean, err)
		return nil, nil, false
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		plainError(w, http.StatusBadRequest, "path %s is not a regular file", clean)
		return nil, nil, false
	}
	return f, fi, true
}

// intParam reads a non-negative integer parameter (def when absent).
func intParam(r *http.Request, name string, def int64, allowNegative bool) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || (n < 0 && !allowNegative) {
		return 0, errors.New("invalid " + name + " " + strconv.Quote(v) + ": a non-negative integer is needed")
	}
	return n, nil
}

// readAt answers limit bytes from offset (limit <= 0: to the end), at most maxCatBytes.
func readAt(w http.ResponseWriter, r *http.Request, root *os.Root, clean, rel string) {
	offset, err := intParam(r, "offset", 0, false)
	if err != nil {
		plainError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := intParam(r, "limit", 0, true)
	if err != nil {
		plainError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if limit <= 0 || limit > maxCatBytes {
		limit = maxCatBytes
	}
	f, _, ok := openRegular(w, root, clean, rel)
	if !ok {
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, io.NewSectionReader(f, offset, limit))
}

// streamFile follows a file from offset (from its start, or its end with
// origin=end) until the caller leaves, in Nomad's frames, with a
// "file truncated" event when it shrinks.
func streamFile(w http.ResponseWriter, r *http.Request, root *os.Root, clean, rel, allocDir string) {
	offset, err := intParam(r, "offset", 0, false)
	if err != nil {
		plainError(w, http.StatusBadRequest, "%v", err)
		return
	}
	origin := r.URL.Query().Get("origin")
	if origin != "" && origin != "start" && origin != "end" {
		plainError(w, http.StatusBadRequest, "invalid origin %q: must be start or end", origin)
		return
	}
	f, fi, ok := openRegular(w, root, clean, rel)
	if !ok {
		return
	}
	defer f.Close()
	pos := offset
	if origin == "end" {
		pos = fi.Size() - offset
	}
	pos = max(0, min(pos, fi.Size()))
	var flush func()
	if fl, ok := w.(http.Flusher); ok {
		flush = fl.Flush
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fr := newFramer(w, allocDir, flush)
	path := filepath.Join(allocDir, filepath.FromSlash(rel))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := f.Stat()
		if err != nil {
			return
		}
		if st.Size() < pos {
			pos = 0
			fr.event(path, "file truncated")
		}
		if st.Size() > pos {
			fr.fileAt(path, pos)
			n, _ := io.Copy(fr, io.NewSectionReader(f, pos, st.Size()-pos))
			pos += n
		}
		fr.Flush()
		if fr.err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}
