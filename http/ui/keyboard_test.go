package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ctlplane/ctlplane/state"
)

// tabTo presses Tab until the focused element matches expr (a JavaScript
// predicate over `el`), at most 60 times.
func (p *page) tabTo(what, expr string) {
	p.t.Helper()
	check := fmt.Sprintf(`(() => { const el = document.activeElement; return !!el && (%s); })()`, expr)
	for range 60 {
		if eval[bool](p, "focus", check) {
			return
		}
		p.run("Tab", chromedp.KeyEvent("\t"))
	}
	p.t.Fatalf("Tab never reached %s; focus is on %q", what, eval[string](p, "focus", `document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : ""`))
}

// The pages work from the keyboard alone: a skip link first, the menu,
// a deployment's link, the job's action buttons.
func TestUIKeyboard(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobBody(2, 1, "v0"))
	waitDeployment(t, ts, 0, "successful", func(d *state.Deployment) bool { return d.Status == "successful" })
	register(t, ts, jobBody(2, 1, "v1"))
	waitDeployment(t, ts, 1, "with its canary", func(d *state.Deployment) bool { return len(d.TaskGroups["web"].PlacedCanaries) == 1 })

	p := openTab(t, ts.URL)
	p.open("/ui/", "#deployments table")
	p.run("Tab", chromedp.KeyEvent("\t"))
	if got := eval[string](p, "first stop", `document.activeElement.textContent`); got != "Skip to content" {
		t.Errorf("the first Tab stop is %q, want the skip link", got)
	}
	p.tabTo("the Nodes menu item", `el.matches('nav a[href="/ui/nodes"]')`)
	p.run("Enter", chromedp.KeyEvent("\r"))
	p.waitText("h1", "Nodes", 3*time.Second)
	if got := eval[string](p, "current", `document.querySelector('nav a[aria-current="page"]').textContent`); got != "Nodes" {
		t.Errorf("the menu marks %q as the current page", got)
	}
	if got := eval[string](p, "focus after navigation", `document.activeElement.id`); got != "main" {
		t.Errorf("after navigating the focus is on %q, want the main content", got)
	}
	p.tabTo("the Deployments menu item", `el.matches('nav a[data-nav="deployments"]')`)
	p.run("Enter", chromedp.KeyEvent("\r"))
	p.waitText("h1", "Deployments", 3*time.Second)
	p.tabTo("a job link", `el.matches('#deployments a[href="/ui/jobs/default/web"]')`)
	p.run("Enter", chromedp.KeyEvent("\r"))
	p.waitText("h1", "Job web", 3*time.Second)
	p.waitText("#deployment", "Canaries", 5*time.Second)
	p.tabTo("the Pause button", `el.matches('#deployment button[data-action="pause"]')`)
	p.run("Enter", chromedp.KeyEvent("\r"))
	p.waitText("#deployment", "paused", 5*time.Second)
	// The live redraw kept the focus in the actions: Resume replaced Pause.
	p.waitJS("the focus on an action", `!!document.activeElement.closest('#deployment .actions')`, `document.activeElement.outerHTML`, 3*time.Second)
	p.tabTo("the Resume button", `el.matches('#deployment button[data-action="resume"]')`)
	p.run("Space", chromedp.KeyEvent(" "))
	p.waitJS("the deployment running again", `!!document.querySelector('#deployment button[data-action="pause"]')`, textOf("#deployment"), 5*time.Second)
}
