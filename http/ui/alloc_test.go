package ui_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// rawJob is a job "ticker" of one raw_exec task running script with sh.
func rawJob(script string) string {
	task := map[string]any{"Name": "tick", "Driver": "raw_exec",
		"Config":      map[string]any{"command": "/bin/sh", "args": []string{"-c", script}},
		"KillTimeout": int64(200 * time.Millisecond), "Resources": map[string]any{"CPU": 100, "MemoryMB": 64}}
	group := map[string]any{"Name": "g", "Count": 1, "Tasks": []any{task},
		"RestartPolicy": map[string]any{"Attempts": 3, "Interval": int64(time.Minute), "Delay": int64(100 * time.Millisecond), "Mode": "fail"}}
	buf, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": "ticker", "Datacenters": []string{"dc1"}, "TaskGroups": []any{group}}})
	return string(buf)
}

// An allocation's page: its task and events, its logs followed live
// (stdout, then stderr), and Restart and Stop, each seen live.
func TestUIAllocation(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, rawJob(`i=0; echo "err line" >&2; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done`))
	var alloc *state.Allocation
	waitFor(t, 20*time.Second, "the ticker running", func() bool {
		var allocs []*state.Allocation
		ts.Do(t, http.MethodGet, "/v1/job/ticker/allocations", "").JSON(t, &allocs)
		if len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			alloc = allocs[0]
		}
		return alloc != nil
	})

	p := openTab(t, ts.URL)
	p.open("/ui/allocations/"+alloc.ID, `#tasks [data-task="tick"]`)
	p.waitText("#alloc-summary", "running", 3*time.Second)
	p.waitText(`#tasks [data-task="tick"]`, "Started", 3*time.Second)
	p.markNoReload()
	// Followed: later lines arrive on the open page.
	p.waitText("#log-output", "tick 1", 5*time.Second)
	p.waitText("#log-output", "tick 8", 5*time.Second)
	if got := p.text("#log-output"); contains(got, "err line") {
		t.Errorf("stdout shows stderr's line: %q", got)
	}
	p.run("stderr", setSelect("#log-type", "stderr"))
	p.waitText("#log-output", "err line", 5*time.Second)
	if got := p.text("#log-output"); contains(got, "tick") {
		t.Errorf("stderr shows stdout's lines: %q", got)
	}

	p.click(`#alloc-summary button[data-action="restart"]`)
	p.waitText("#action-result", "Restart: done", 5*time.Second)
	p.waitText(`#tasks [data-task="tick"]`, "Restart Signaled", 5*time.Second)
	p.waitText(`#tasks [data-task="tick"]`, "restarts 1", 5*time.Second)

	p.click(`#alloc-summary button[data-action="stop"]`)
	p.waitText("#alloc-summary", "desired stop", 5*time.Second)
	p.waitText("#alloc-summary", "complete", 10*time.Second)
	p.stillNoReload()
	if n := p.count("#alloc-summary button[data-action]"); n != 0 {
		t.Errorf("a stopped allocation offers %d actions", n)
	}
}

// Nodes: status, eligibility and drain toggles, each change seen live;
// resources in use and the node's allocations.
func TestUINodes(t *testing.T) {
	ts := devAgent(t)
	register(t, ts, jobBody(2, 0, "v0"))
	waitDeployment(t, ts, 0, "successful", func(d *state.Deployment) bool { return d.Status == "successful" })
	var nodes []*state.Node
	ts.Do(t, http.MethodGet, "/v1/nodes", "").JSON(t, &nodes)

	p := openTab(t, ts.URL)
	p.open("/ui/nodes", "#nodes table")
	p.waitText("#nodes tbody tr", "ready", 3*time.Second)
	p.waitText("#nodes tbody tr td:nth-child(2)", "default", time.Second) // its node pool
	p.waitText("#nodes tbody tr .status-eligible", "eligible", time.Second)
	p.waitText("#nodes tbody tr", "2 running", time.Second)
	p.waitText("#nodes tbody tr", "200 / ", time.Second) // two tasks of 100 MHz
	p.markNoReload()

	p.click(`#nodes button[data-action="mark-ineligible"]`)
	p.waitText("#nodes tbody tr .status-ineligible", "ineligible", 3*time.Second)
	p.click(`#nodes button[data-action="mark-eligible"]`)
	p.waitJS("eligible again", `!document.querySelector("#nodes tbody tr .status-ineligible")`, textOf("#nodes"), 3*time.Second)

	p.click(`#nodes button[data-action="drain"]`)
	p.waitText("#nodes tbody tr .status-draining", "draining", 3*time.Second)
	p.waitText("#nodes tbody tr .status-ineligible", "ineligible", time.Second)
	p.click(`#nodes button[data-action="stop-drain"]`)
	p.waitJS("the drain stopped", `!document.querySelector("#nodes tbody tr .status-draining") && !document.querySelector("#nodes tbody tr .status-ineligible")`, textOf("#nodes"), 3*time.Second)
	p.stillNoReload()
	var n state.Node
	ts.Do(t, http.MethodGet, "/v1/node/"+nodes[0].ID, "").JSON(t, &n)
	if n.Drain || n.SchedulingEligibility != "eligible" {
		t.Errorf("after stopping the drain: drain %v, %s", n.Drain, n.SchedulingEligibility)
	}

	p.click(`#nodes tbody tr a`)
	p.waitText("#node-allocations", "web", 3*time.Second)
	if got := p.count("#node-allocations tbody tr"); got < 2 {
		t.Errorf("the node's page lists %d allocations", got)
	}
	// The job stopped: its allocations leave the node's use, live.
	if r := ts.Do(t, http.MethodDelete, "/v1/job/web", ""); r.Status != http.StatusOK {
		t.Fatalf("stop: %d %s", r.Status, r.Body)
	}
	p.waitText("#nodes tbody tr", "0 running", 10*time.Second)
	p.waitText("#nodes tbody tr", "0 / ", time.Second)
}
