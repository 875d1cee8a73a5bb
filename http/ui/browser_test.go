package ui_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The UI's tests drive one headless Chromium (Debian's chromium package;
// `make deps` installs it) shared by the whole test binary: each test
// opens its own tabs. Without Chromium the tests fail, never skip.

var (
	screenshotDir = flag.String("ui-screenshots", "", "directory for the screenshots of a failed UI test's pages (default: a ctlplane-ui-screenshots directory under the system's temporary directory)")
	docsDir       = flag.String("ui-docs", "", "when set, the canary test also writes the README's screenshots into this directory")
)

// browser is the shared browser's context; tabs are opened from it.
var browser context.Context

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The fast tier starts no Chromium: every test skips at openTab.
		os.Exit(m.Run())
	}
	path := chromiumPath()
	if path == "" {
		fmt.Fprintln(os.Stderr, "FAIL: the web UI tests need Chromium and none was found on PATH (chromium, chromium-browser, google-chrome): run `make deps` (Debian's chromium package)")
		os.Exit(1)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting Chromium (%s): %v\n", path, err)
		os.Exit(1)
	}
	browser = bctx
	code := m.Run()
	cancelBrowser()
	cancelAlloc()
	os.Exit(code)
}

// page is one browser tab of a test. It records the JavaScript
// exceptions the page throws (each fails the test) and, when the test
// fails, saves a screenshot of every page it showed.
type page struct {
	t    testing.TB
	ctx  context.Context
	base string

	mu    sync.Mutex
	shots []shot
	errs  []string

	closeOnce sync.Once
	closeTab  func()
}

type shot struct {
	name string
	png  []byte
}

var shotSeq struct {
	sync.Mutex
	n int
}

// openTab opens a tab on the agent at base (http://127.0.0.1:port).
func openTab(t testing.TB, base string) *page {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: drives Chromium")
	}
	p := &page{t: t, base: base}
	tab, cancel := chromedp.NewContext(browser, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok && e.ExceptionDetails != nil {
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			p.exception(msg)
		}
	}))
	// The tab's first run opens it: without a timeout (it would be the tab's).
	if err := chromedp.Do(tab); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(tab, 3*time.Minute)
	p.ctx = ctx
	p.closeTab = func() {
		p.checkExceptions()
		if t.Failed() {
			p.snapshot("at-failure")
			p.saveShots()
		}
		cancelTimeout()
		cancel()
	}
	t.Cleanup(p.close)
	return p
}

// close closes the tab (and its event stream: Chromium keeps at most six
// connections to one host) before the test ends; the test's cleanup
// closes it otherwise.
func (p *page) close() { p.closeOnce.Do(p.closeTab) }

// exception records an uncaught JavaScript exception (listeners may not
// call the testing.T from the tab's reader goroutine after the test).
func (p *page) exception(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, msg)
}

// checkExceptions fails the test for every exception the page threw.
func (p *page) checkExceptions() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errs {
		p.t.Errorf("JavaScript exception in the page: %s", e)
	}
	p.errs = nil
}

// run runs actions, failing the test with what went wrong.
func (p *page) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// open loads an app path (e.g. /ui/nodes) and waits for sel.
func (p *page) open(path, sel string) {
	p.t.Helper()
	p.snapshot("leaving-for-" + path)
	p.run("open "+path, chromedp.Navigate(p.base+path))
	p.waitJS(path+" showing "+sel, fmt.Sprintf(`!!document.querySelector(%s)`, jsString(sel)),
		`document.querySelector("main") ? document.querySelector("main").textContent : ""`, 10*time.Second)
}

// snapshot keeps a screenshot of the page now (written only on failure).
func (p *page) snapshot(name string) {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || url == "" || url == "about:blank" {
		return
	}
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return
	}
	p.mu.Lock()
	p.shots = append(p.shots, shot{name, buf})
	p.mu.Unlock()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func (p *page) saveShots() {
	dir := *screenshotDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "ctlplane-ui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Logf("screenshots: %v", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.shots {
		shotSeq.Lock()
		shotSeq.n++
		n := shotSeq.n
		shotSeq.Unlock()
		name := filepath.Join(dir, unsafeName.ReplaceAllString(fmt.Sprintf("%s-%02d-%s", p.t.Name(), n, s.name), "_")+".png")
		if err := os.WriteFile(name, s.png, 0o644); err != nil {
			p.t.Logf("screenshot: %v", err)
			continue
		}
		p.t.Logf("screenshot of the page: %s", name)
	}
}

// slack stretches the tests' waits: `make test` runs every package at
// once on a small machine. The one promise about time, a live update
// within a second, is checked with waitLive, unstretched.
const slack = 3

// waitJS waits until the expression is true, within d (times slack); on
// timeout it fails with what describe (an expression) says the page shows.
func (p *page) waitJS(what, expr, describe string, d time.Duration) {
	p.t.Helper()
	p.waitExactly(what, expr, describe, d*slack)
}

// waitLive waits for sel to show want within d exactly: the UI's promise
// that a change is on the page within a second.
func (p *page) waitLive(sel, want string, d time.Duration) {
	p.t.Helper()
	p.waitExactly(fmt.Sprintf("%s to show %q live within %v", sel, want, d),
		fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()`, jsString(sel), jsString(want)),
		textOf(sel), d)
}

func (p *page) waitExactly(what, expr, describe string, d time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		got, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](describe))
		p.t.Fatalf("waiting for %s: %v; the page shows: %q", what, err, got)
	}
}

// waitText waits until the element sel exists and its text contains want.
func (p *page) waitText(sel, want string, d time.Duration) {
	p.t.Helper()
	p.waitJS(fmt.Sprintf("%s to show %q", sel, want),
		fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()`, jsString(sel), jsString(want)),
		textOf(sel), d)
}

// text is the text of sel now ("" when absent).
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, "read "+sel, textOf(sel))
}

// count is how many elements match sel now.
func (p *page) count(sel string) int {
	p.t.Helper()
	return eval[int](p, "count "+sel, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel)))
}

func textOf(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.textContent : "(no " + %s + ")"; })()`, jsString(sel), jsString(sel))
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// markNoReload sets a marker that a reload would drop; stillNoReload
// checks it (a live update must not have reloaded the page).
func (p *page) markNoReload() {
	p.t.Helper()
	eval[int](p, "mark", `window.__noReload = 42`)
}

func (p *page) stillNoReload() {
	p.t.Helper()
	if v := eval[int](p, "check the marker", `window.__noReload || 0`); v != 42 {
		p.t.Fatalf("the page was reloaded: the UI must update live, without reloading")
	}
}

// eval evaluates expr in the page.
func eval[T any](p *page, what, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// click clicks the element sel once it is there. The click is dispatched
// on the element (HTMLElement.click), not at its coordinates: a live
// redraw may replace the element between finding it and a mouse press.
// (TestUIKeyboard presses real keys.)
func (p *page) click(sel string) {
	p.t.Helper()
	p.waitJS(sel+" to click", fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && !e.disabled && e.offsetParent !== null; })()`, jsString(sel)),
		`document.querySelector("main") ? document.querySelector("main").textContent : ""`, 5*time.Second)
	if !eval[bool](p, "click "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.click(); return true; })()`, jsString(sel))) {
		p.t.Fatalf("click %s: gone", sel)
	}
}

// fill replaces the value of the input sel with v, as typed.
func (p *page) fill(sel, v string) {
	p.t.Helper()
	eval[bool](p, "clear "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (e) e.value = ""; return !!e; })()`, jsString(sel)))
	p.run("fill "+sel, chromedp.SendKeys(chromedp.CSS(sel), v))
}

// setSelect picks value in the select sel, as a person would (a change event).
func setSelect(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.value = %s; e.dispatchEvent(new Event("change", {bubbles: true})); return e.value === %s; })()`, jsString(sel), jsString(value), jsString(value)))(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("no option %q in %s", value, sel)
		}
		return err
	})
}
