package ui_test

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// The UI's files: types, caching, security headers, the app's pages
// falling back to index.html, / redirecting to /ui/.
func TestUIServing(t *testing.T) {
	ts := servertest.Start(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, path := range []string{"/", "/ui"} {
		if resp, _ := get(path); resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "/ui/" {
			t.Errorf("GET %s: %d Location %q, want 307 to /ui/", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for path, want := range map[string]string{
		"/ui/":                     "text/html; charset=utf-8",
		"/ui/jobs/default/web":     "text/html; charset=utf-8",
		"/ui/acl/explain":          "text/html; charset=utf-8",
		"/ui/app.js":               "text/javascript; charset=utf-8",
		"/ui/pages/deployments.js": "text/javascript; charset=utf-8",
		"/ui/style.css":            "text/css; charset=utf-8",
	} {
		resp, body := get(path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
		if strings.HasSuffix(want, "html; charset=utf-8") && !strings.Contains(body, `<script type="module" src="/ui/app.js">`) {
			t.Errorf("GET %s: not the app's index.html: %.200s", path, body)
		}
		for h, v := range map[string]string{"Content-Security-Policy": "default-src 'self'", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"} {
			if got := resp.Header.Get(h); !strings.HasPrefix(got, v) {
				t.Errorf("GET %s: %s %q, want %q", path, h, got, v)
			}
		}
		etag := resp.Header.Get("ETag")
		if len(etag) < 10 || etag[0] != '"' {
			t.Errorf("GET %s: ETag %q", path, etag)
			continue
		}
		if resp, body := get(path, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified || body != "" {
			t.Errorf("GET %s with its ETag: %d %q, want 304 and no body", path, resp.StatusCode, body)
		}
		if resp, _ := get(path, "If-None-Match", `"other"`); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with another ETag: %d, want 200", path, resp.StatusCode)
		}
	}
	if resp, body := get("/ui/missing.js"); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "UI asset missing.js not found") {
		t.Errorf("GET a missing asset: %d %q, want 404", resp.StatusCode, body)
	}
	if r := ts.Do(t, http.MethodPost, "/ui/", ""); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", r.Status)
	}
	// No inline script anywhere: the CSP would block it.
	if _, body := get("/ui/"); strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") {
		t.Errorf("index.html has inline script: %s", body)
	}
}

// Only GET and HEAD are redirected: a 307 would repeat a PUT at /ui/.
func TestUIRedirectMethods(t *testing.T) {
	ts := servertest.Start(t)
	for _, path := range []string{"/", "/ui"} {
		r := ts.Do(t, http.MethodPut, path, "")
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(r.Body, "method PUT not allowed") {
			t.Errorf("PUT %s: %d Allow %q %q", path, r.Status, r.Header.Get("Allow"), r.Body)
		}
	}
}

// index.html preloads every shared module (one round instead of one per
// level of imports): a new one must be listed there; page modules are
// loaded by their route.
func TestUIModulesPreloaded(t *testing.T) {
	index, err := os.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	shared, pages := 0, 0
	err = filepath.WalkDir("assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") || p == "assets/app.js" {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		link := `<link rel="modulepreload" href="/ui/` + name + `">`
		if strings.HasPrefix(name, "pages/") {
			// A page's module loads when the page is opened: the first
			// paint waits for the shared modules and one page only.
			pages++
			if strings.Contains(string(index), link) {
				t.Errorf("index.html preloads the page module %s", name)
			}
			if imp := "import('./" + name + "')"; !strings.Contains(string(app), imp) {
				t.Errorf("app.js has no route that loads %s (%s)", name, imp)
			}
			return nil
		}
		shared++
		if !strings.Contains(string(index), link) {
			t.Errorf("index.html lacks %s", link)
		}
		return nil
	})
	if err != nil || shared < 4 || pages < 10 {
		t.Fatalf("%d shared modules, %d pages, %v", shared, pages, err)
	}
}

// Each server serves the UI itself: a server left without a leader (the
// other two stopped) still serves it, while the API it would forward is
// unavailable.
func TestUIServedByEveryServer(t *testing.T) {
	nodes := servertest.StartCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	var rest []*servertest.TestServer
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	for _, n := range nodes {
		if r := n.Do(t, http.MethodGet, "/ui/", ""); r.Status != http.StatusOK || !strings.Contains(r.Body, "/ui/app.js") {
			t.Fatalf("%s: GET /ui/: %d", n.URL, r.Status)
		}
	}
	if err := leader.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := rest[0].Shutdown(); err != nil {
		t.Fatal(err)
	}
	alone := rest[1]
	waitFor(t, 20*time.Second, "the last server to lose its leader", func() bool {
		return alone.Do(t, http.MethodGet, "/v1/deployments", "").Status == http.StatusServiceUnavailable
	})
	for _, path := range []string{"/ui/", "/ui/jobs/default/web", "/ui/app.js"} {
		if r := alone.Do(t, http.MethodGet, path, ""); r.Status != http.StatusOK {
			t.Errorf("without a leader: GET %s: %d %s", path, r.Status, r.Body)
		}
	}
}

// The UI opened on a follower: its reads are forwarded to the leader, its
// event stream is the follower's own, and a change made through the leader
// shows on the page live.
func TestUIOnAFollower(t *testing.T) {
	nodes := servertest.StartCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	follower := nodes[0]
	if follower == leader {
		follower = nodes[1]
	}
	p := openTab(t, follower.URL)
	p.open("/ui/acl/binding-rules", "#rule-form")
	p.waitText("#rules", "No binding rules.", 3*time.Second)
	p.waitText("#live", "live", time.Second)
	if r := leader.Do(t, http.MethodPut, "/v1/acl/binding-rule", `{"AuthMethod":"k8s","Selector":"serviceaccount.name == \"api\"","BindType":"service","BindName":"api"}`); r.Status != http.StatusOK {
		t.Fatalf("create at the leader: %d %s", r.Status, r.Body)
	}
	p.waitText("#rules table", `serviceaccount.name == "api"`, 3*time.Second)
	// And a write from the follower's page goes through (forwarded).
	p.fill("#f-AuthMethod", "k8s")
	p.fill("#f-BindName", "web")
	p.click(`#rule-form button[type="submit"]`)
	p.waitText("#rules table", "service: web", 3*time.Second)
	if r := leader.Do(t, http.MethodGet, "/v1/acl/binding-rules", ""); !strings.Contains(r.Body, `"BindName":"web"`) {
		t.Errorf("the leader has %s", r.Body)
	}
}

// With the event stream off, pages still load and say they are not live.
func TestUIWithoutEventStream(t *testing.T) {
	ts := servertest.Start(t, func(c *server.Config) { c.EventBufferSize = -1 })
	p := openTab(t, ts.URL)
	p.open("/ui/", "#deployments")
	p.waitText("#deployments", "No deployments.", 3*time.Second)
	p.waitText("#live", "event stream: The event stream is not served by this agent (its event buffer is off)", 3*time.Second)
}
