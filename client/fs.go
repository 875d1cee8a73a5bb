package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/ctlplane/ctlplane/api"
	"github.com/google/uuid"
)

// The allocation directory through the node's API (Nomad's fs ls, stat,
// cat), confined to it: paths are opened through an os.Root on the
// allocation directory, which refuses ".." and symlinks that lead out
// (resolved by the kernel, component by component, so nothing can race it).

// Bounds of an answer.
const (
	maxListEntries = 10000
	maxCatBytes    = 16 << 20
)

// nodeRoutes registers the node API's endpoints other than logs.
func (c *Client) nodeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/client/fs/ls/{alloc_id}", c.handleFS(api.GrantFSList))
	mux.HandleFunc("/v1/client/fs/stat/{alloc_id}", c.handleFS(api.GrantFSStat))
	mux.HandleFunc("/v1/client/fs/cat/{alloc_id}", c.handleFS(api.GrantFSCat))
	mux.HandleFunc("/v1/client/fs/readat/{alloc_id}", c.handleFS(api.GrantFSReadAt))
	mux.HandleFunc("/v1/client/fs/stream/{alloc_id}", c.handleFS(api.GrantFSStream))
	mux.HandleFunc("/v1/client/stats", c.handleHostStats)
	mux.HandleFunc("/v1/client/allocation/{alloc_id}/stats", c.handleAllocStats)
	mux.HandleFunc("/v1/client/allocation/{alloc_id}/restart", c.handleRestart)
	mux.HandleFunc("/v1/client/allocation/{alloc_id}/signal", c.handleSignal)
}

// allocRequest checks the method and the allocation ID of a request.
func allocRequest(w http.ResponseWriter, r *http.Request, allowed ...string) (string, bool) {
	ok := false
	for _, m := range allowed {
		ok = ok || r.Method == m
	}
	if !ok {
		w.Header().Set("Allow", strings.Join(allowed, ","))
		plainError(w, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
		return "", false
	}
	id := r.PathValue("alloc_id")
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		plainError(w, http.StatusBadRequest, "Invalid allocation ID %q: a 36-character UUID is required", id)
		return "", false
	}
	return strings.ToLower(id), true
}

func writeNodeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// fsPath is the request's path, cleaned as the servers clean it (and
// signed it), and its name relative to the allocation directory.
func fsPath(r *http.Request) (clean, rel string, err error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	if len(p) > 4096 || strings.ContainsRune(p, 0) {
		return "", "", errors.New("invalid path: at most 4096 bytes, no NUL")
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", "", fmt.Errorf("invalid path %q: \"..\" is not allowed (paths are inside the allocation directory)", p)
		}
	}
	clean = path.Clean("/" + p)
	rel = strings.TrimPrefix(clean, "/")
	if rel == "" {
		rel = "."
	}
	return clean, rel, nil
}

// fsError answers an error of the allocation directory.
func fsError(w http.ResponseWriter, p string, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		plainError(w, http.StatusNotFound, "file %s not found in the allocation directory", p)
	case strings.Contains(err.Error(), "path escapes from parent"):
		plainError(w, http.StatusBadRequest, "path %s escapes the allocation directory", p)
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // not the node's own paths
		}
		plainError(w, http.StatusInternalServerError, "failed to read %s: %v", p, err)
	}
}

// openRO opens without blocking on a FIFO.
func openRO(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func fileInfo(name string, fi fs.FileInfo) *api.AllocFileInfo {
	return &api.AllocFileInfo{Name: name, IsDir: fi.IsDir(), Size: fi.Size(), FileMode: fi.Mode().String(), ModTime: fi.ModTime()}
}

func (c *Client) handleFS(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		allocID, ok := allocRequest(w, r, http.MethodGet)
		if !ok {
			return
		}
		clean, rel, err := fsPath(r)
		if err != nil {
			plainError(w, http.StatusBadRequest, "%v", err)
			return
		}
		// Nomad's API reads a file (cat, readat, stream) from the node directly.
		direct := op == api.GrantFSCat || op == api.GrantFSReadAt || op == api.GrantFSStream
		if code, err := c.authorizeGrant(r.Context(), r, api.Grant{Op: op, AllocID: allocID, Path: clean}, direct); err != nil {
			plainError(w, code, "%v", err)
			return
		}
		if c.cfg.DataDir == "" {
			plainError(w, http.StatusNotFound, "allocation %s has no directory on this node", allocID)
			return
		}
		root, err := os.OpenRoot(c.taskPaths(allocID, "").allocDir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				plainError(w, http.StatusNotFound, "allocation %s has no directory on this node", allocID)
				return
			}
			fsError(w, "/", err)
			return
		}
		defer root.Close()
		switch op {
		case api.GrantFSList:
			listDir(w, root, clean, rel)
		case api.GrantFSStat:
			statFile(w, root, clean, rel)
		case api.GrantFSCat:
			catFile(w, root, clean, rel)
		case api.GrantFSReadAt:
			readAt(w, r, root, clean, rel)
		case api.GrantFSStream:
			ctx, cancel := c.followWithToken(r, api.Grant{Op: op, AllocID: allocID, Path: clean})
			defer cancel()
			streamFile(w, r.WithContext(ctx), root, clean, rel, c.taskPaths(allocID, "").allocDir)
		}
	}
}

func listDir(w http.ResponseWriter, root *os.Root, clean, rel string) {
	f, err := openRO(root, rel)
	if err != nil {
		fsError(w, clean, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fsError(w, clean, err)
		return
	}
	if !fi.IsDir() {
		plainError(w, http.StatusBadRequest, "path %s is not a directory", clean)
		return
	}
	entries, err := f.ReadDir(maxListEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		fsError(w, clean, err)
		return
	}
	if len(entries) > maxListEntries {
		plainError(w, http.StatusBadRequest, "directory %s has more than %d entries", clean, maxListEntries)
		return
	}
	out := make([]*api.AllocFileInfo, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo(e.Name(), info))
	}
	writeNodeJSON(w, out)
}

func statFile(w http.ResponseWriter, root *os.Root, clean, rel string) {
	fi, err := root.Stat(rel)
	if err != nil {
		fsError(w, clean, err)
		return
	}
	info := fileInfo(path.Base(clean), fi)
	if fi.Mode().IsRegular() {
		if f, err := openRO(root, rel); err == nil {
			head := make([]byte, 512)
			n, _ := io.ReadFull(f, head)
			f.Close()
			info.ContentType = http.DetectContentType(head[:n])
		}
	}
	writeNodeJSON(w, info)
}

func catFile(w http.ResponseWriter, root *os.Root, clean, rel string) {
	f, err := openRO(root, rel)
	if err != nil {
		fsError(w, clean, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fsError(w, clean, err)
		return
	}
	switch {
	case fi.IsDir():
		plainError(w, http.StatusBadRequest, "path %s is a directory", clean)
		return
	case !fi.Mode().IsRegular():
		plainError(w, http.StatusBadRequest, "path %s is not a regular file", clean)
		return
	case fi.Size() > maxCatBytes:
		plainError(w, http.StatusBadRequest, "file %s is %d bytes: cat reads at most %d", clean, fi.Size(), maxCatBytes)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, io.LimitReader(f, maxCatBytes))
}
