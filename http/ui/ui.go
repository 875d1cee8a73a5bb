// Package ui serves the web UI: plain HTML, CSS and JavaScript modules
// embedded in the binary (no build step), under /ui/. Every path under
// /ui/ that is not an asset is a page of the single-page app and gets
// index.html, so that a reload or a pasted link opens that page.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the UI is mounted.
const Prefix = "/ui/"

// contentTypes fixes the types of the UI's own files: the system's MIME
// table may say otherwise (a module script must be JavaScript to run).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

type file struct {
	body        []byte
	etag        string
	contentType string
}

// Handler serves the UI. It answers GET and HEAD only.
type Handler struct {
	files map[string]*file
	// dirs are the directories that hold assets ("." and "pages"): a
	// missing name there is a missing asset, anywhere else a page.
	dirs map[string]bool
}

// New loads the embedded assets once and hashes them for their ETags.
func New() (*Handler, error) {
	h := &Handler{files: map[string]*file{}, dirs: map[string]bool{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := contentTypes[path.Ext(p)]
		if ct == "" {
			ct = mime.TypeByExtension(path.Ext(p))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		name := strings.TrimPrefix(p, "assets/")
		h.dirs[path.Dir(name)] = true
		h.files[name] = &file{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, contentType: ct}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.files["index.html"] == nil {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

// securityHeaders: scripts and styles only from this origin (no inline
// script runs, whatever a page renders), and no framing (clickjacking).
func securityHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	f, ok := h.files[name]
	if !ok || name == "" {
		// A page of the app (e.g. /ui/jobs/default/my.job, whatever
		// characters the job ID has): index.html. A missing asset (a name
		// with an extension where the assets are) is a real 404, so that a
		// typo in a script's name does not come back as HTML.
		if name != "" && h.dirs[path.Dir(name)] && strings.Contains(path.Base(name), ".") {
			http.Error(w, "UI asset "+name+" not found", http.StatusNotFound)
			return
		}
		f = h.files["index.html"]
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("ETag", f.etag)
	// Revalidate every time: a new binary ships new assets under the same
	// names, and a 304 costs one round trip on loopback.
	w.Header().Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatch(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(f.body)
}

// etagMatch says whether an If-None-Match list names etag.
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// Redirect sends the API's root to the UI (GET and HEAD: a 307 would
// repeat any other method at /ui/).
func Redirect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
		return
	}
	http.Redirect(w, r, Prefix, http.StatusTemporaryRedirect)
}
