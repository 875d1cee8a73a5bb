package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

const allocUsage = `Usage: ctlplane alloc <command> [flags] ID

Commands (Nomad's verbs; IDs by unique prefix):
  status ID                          show an allocation, its tasks' recent events, its service checks and its placement metrics
  checks ID                          show the latest result of each of the allocation's service checks
  logs [-f] [-stderr] ID [TASK]      print a task's output (-f: follow it as it is written)
  fs [-stat] ID [PATH]               list a directory of the allocation or print a file
  restart [-all-tasks] ID [TASK]     restart a task (default: every running task)
  signal [-s SIGNAL] ID [TASK]       send a signal to a task (default SIGKILL; every running task)

Every command takes -address (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR) and
-token (env CTLPLANE_TOKEN, then NOMAD_TOKEN).
`

const nodeUsage = `Usage: ctlplane node <command> [flags] [ID]

Commands (Nomad's verbs; node IDs by unique prefix):
  status [-stats] [-verbose] [ID]    list the client nodes, or show one with its allocations
                                     (-stats: and its host's CPU, memory, disk and uptime;
                                     -verbose: and its attributes and meta)
  drain -enable|-disable [flags] ID  start, update or cancel a node's drain:
      -deadline D      stop what is left after D (default 1h)
      -force           stop everything now (no migration)
      -no-deadline     never force: wait for every allocation to move
      -ignore-system   leave system jobs' allocations in place
      -keep-ineligible with -disable: leave the node ineligible
      -m MESSAGE       recorded in the drain's metadata (LastDrain.Meta["message"])
  eligibility -enable|-disable ID    let the scheduler place on the node, or not
  pool list|info|apply|delete|nodes|jobs   node pools ("ctlplane node pool help")

Every command takes -address (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR) and
-token (env CTLPLANE_TOKEN, then NOMAD_TOKEN).
`

func runAlloc(args []string, stdout, stderr io.Writer) int {
	return dispatch("alloc", allocUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"status":  allocStatus,
		"logs":    allocLogs,
		"fs":      allocFS,
		"restart": allocRestart,
		"signal":  allocSignal,
		"checks":  allocChecks,
	}, args, stdout, stderr)
}

func runNode(args []string, stdout, stderr io.Writer) int {
	return dispatch("node", nodeUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"status":      nodeStatus,
		"drain":       nodeDrain,
		"eligibility": nodeEligibility,
		"pool":        runNodePool,
	}, args, stdout, stderr)
}

func allocStatus(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("alloc status", allocUsage, stdout, stderr)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	id, err := c.allocID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	a, _, err := c.api.Allocation(c.ctx(), id, nil)
	if err != nil {
		return c.fail(err)
	}
	health := "<none>"
	if a.DeploymentStatus.IsHealthy() {
		health = "healthy"
	} else if a.DeploymentStatus.IsUnhealthy() {
		health = "unhealthy"
	} else if a.DeploymentID != "" {
		health = "unset"
	}
	kv(stdout, "ID", a.ID, "Eval ID", short(a.EvalID), "Name", a.Name, "Node ID", short(a.NodeID), "Node Name", a.NodeName,
		"Job ID", a.JobID, "Job Version", strconv.FormatUint(a.JobVersion, 10), "Client Status", a.ClientStatus,
		"Client Description", orNone(a.ClientDescription), "Desired Status", a.DesiredStatus,
		"Desired Description", orNone(a.DesiredDescription), "Created", fmtUnixNano(a.CreateTime),
		"Modified", fmtUnixNano(a.ModifyTime), "Deployment ID", orNone(short(a.DeploymentID)), "Deployment Health", health)
	printAllocAddresses(stdout, a)
	names := make([]string, 0, len(a.TaskStates))
	for n := range a.TaskStates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ts := a.TaskStates[n]
		c.out("\nTask %q is %q\n", n, ts.State)
		kv(stdout, "Started At", fmtTime(ts.StartedAt), "Finished At", fmtTime(ts.FinishedAt), "Total Restarts", strconv.FormatUint(ts.Restarts, 10),
			"Last Restart", fmtTime(ts.LastRestart))
		c.out("\nRecent Events:\n")
		t := newTable(stdout, "Time", "Type", "Description")
		for i := len(ts.Events) - 1; i >= 0; i-- {
			e := ts.Events[i]
			t.row(time.Unix(0, e.Time).UTC().Format(time.RFC3339), e.Type, eventDescription(e))
		}
		t.flush()
	}
	printAllocChecks(stdout, a.CheckResults)
	printPlacementMetrics(stdout, a.Metrics)
	return exitOK
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.UTC().Format(time.RFC3339)
}

// eventDescription is an event's text, as Nomad shows it.
func eventDescription(e *api.TaskEvent) string {
	if e.DisplayMessage != "" {
		return e.DisplayMessage
	}
	for _, s := range []string{e.DriverError, e.ValidationError, e.SetupError, e.KillError, e.RestartReason, e.Message} {
		if s != "" {
			return s
		}
	}
	return ""
}

func allocLogs(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("alloc logs", allocUsage, stdout, stderr)
	follow := c.flags.Bool("f", false, "follow the output as it is written")
	useStderr := c.flags.Bool("stderr", false, "print stderr instead of stdout")
	tailBytes := c.flags.Int64("c", -1, "print only the last N bytes")
	if !c.parse(args, 1, 2) {
		return exitError
	}
	id, err := c.allocID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	task := c.flags.Arg(1)
	if task == "" {
		a, _, err := c.api.Allocation(c.ctx(), id, nil)
		if err != nil {
			return c.fail(err)
		}
		var names []string
		for n := range a.TaskStates {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) != 1 {
			return c.fail(fmt.Errorf("Allocation %q is running the following tasks:\n  * %s\n\nPlease specify the task.", short(id), strings.Join(names, "\n  * ")))
		}
		task = names[0]
	}
	q := url.Values{"task": {task}, "type": {"stdout"}, "plain": {"true"}}
	if *useStderr {
		q.Set("type", "stderr")
	}
	if *follow {
		q.Set("follow", "true")
	}
	if *tailBytes >= 0 {
		q.Set("origin", "end")
		q.Set("offset", strconv.FormatInt(*tailBytes, 10))
	}
	req, err := c.conn.newRequest(http.MethodGet, "/v1/client/fs/logs/"+id+"?"+q.Encode(), nil)
	if err != nil {
		return c.fail(err)
	}
	hc, err := c.conn.http()
	if err != nil {
		return c.fail(err)
	}
	// A followed stream has no end: no client timeout.
	resp, err := (&http.Client{Transport: hc.Transport}).Do(req)
	if err != nil {
		return c.fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return c.fail(fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(msg))))
	}
	if _, err := io.Copy(flushWriter{stdout}, resp.Body); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// flushWriter writes through (the output of -f appears as it comes).
type flushWriter struct{ w io.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if s, ok := f.w.(interface{ Sync() error }); ok {
		_ = s.Sync()
	}
	return n, err
}

func nodeStatus(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node status", nodeUsage, stdout, stderr)
	stats := c.flags.Bool("stats", false, "show the node's host stats")
	verbose := c.flags.Bool("verbose", false, "also print the node's attributes and meta")
	if !c.parse(args, 0, 1) {
		return exitError
	}
	if c.flags.NArg() == 0 {
		nodes, _, err := c.api.Nodes(c.ctx(), nil)
		if err != nil {
			return c.fail(err)
		}
		if len(nodes) == 0 {
			c.out("No nodes registered\n")
			return exitOK
		}
		t := newTable(stdout, "ID", "DC", "Name", "Drivers", "Drain", "Eligibility", "Status")
		for _, n := range nodes {
			t.row(short(n.ID), n.Datacenter, n.Name, strings.Join(driverNames(n), ","), strconv.FormatBool(n.Drain), n.SchedulingEligibility, n.Status)
		}
		t.flush()
		return exitOK
	}
	id, err := c.nodeID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	n, _, err := c.api.Node(c.ctx(), id, nil)
	if err != nil {
		return c.fail(err)
	}
	kv(stdout, "ID", n.ID, "Name", n.Name, "Class", orNone(n.NodeClass), "Node Pool", orNone(n.NodePool), "Datacenter", n.Datacenter, "HTTP Addr", orNone(n.HTTPAddr),
		"Drivers", strings.Join(driverNames(n), ","), "Drain", drainText(n), "Eligibility", n.SchedulingEligibility, "Status", n.Status,
		"CPU", strconv.Itoa(n.Resources.CPU), "Memory MB", strconv.Itoa(n.Resources.MemoryMB))
	if *stats {
		if err := printNodeStats(c, id); err != nil {
			return c.fail(err)
		}
	}
	if *verbose {
		printNodeAttributes(stdout, n)
	}
	allocs, _, err := c.api.NodeAllocs(c.ctx(), id, nil)
	if err != nil {
		return c.fail(err)
	}
	c.out("\nAllocations\n")
	if len(allocs) == 0 {
		c.out("No allocations placed\n")
		return exitOK
	}
	t := newTable(stdout, "ID", "Job ID", "Task Group", "Version", "Desired", "Status")
	for _, a := range allocs {
		t.row(short(a.ID), a.JobID, a.TaskGroup, strconv.FormatUint(a.JobVersion, 10), a.DesiredStatus, a.ClientStatus)
	}
	t.flush()
	return exitOK
}

func driverNames(n *api.Node) []string {
	var out []string
	for name, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
