package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// sortedChecks orders check results by service, task, name.
func sortedChecks(m map[string]*api.CheckResult) []*api.CheckResult {
	out := make([]*api.CheckResult, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		return a.Check < b.Check
	})
	return out
}

// printAllocChecks prints the allocation's check results as Nomad's alloc
// status does ("Nomad Service Checks"), nothing without checks.
func printAllocChecks(w io.Writer, m map[string]*api.CheckResult) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(w, "\nNomad Service Checks:\n")
	t := newTable(w, "Service", "Task", "Name", "Mode", "Status", "Code", "Output")
	for _, c := range sortedChecks(m) {
		task := c.Task
		if task == "" {
			task = "(group)"
		}
		code := ""
		if c.StatusCode > 0 {
			code = strconv.Itoa(c.StatusCode)
		}
		t.row(c.Service, task, c.Check, c.Mode, c.Status, code, firstLine(c.Output, 60))
	}
	t.flush()
}

// firstLine is s's first line, cut at n characters.
func firstLine(s string, n int) string {
	for i, r := range s {
		if r == '\n' || r == '\r' {
			s = s[:i]
			break
		}
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// allocChecks is `alloc checks ID`: every check's latest result, as
// Nomad's `nomad alloc checks`.
func allocChecks(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("alloc checks", allocUsage, stdout, stderr)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	id, err := c.allocID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	checks, _, err := c.api.AllocChecks(c.ctx(), id, nil)
	if err != nil {
		return c.fail(err)
	}
	c.out("Status of %d Nomad Service Checks\n", len(checks))
	for _, ch := range sortedChecks(checks) {
		c.out("\n")
		pairs := []string{"ID", ch.ID, "Name", ch.Check, "Group", ch.Group, "Mode", ch.Mode, "Output", ch.Output,
			"Service", ch.Service, "Status", ch.Status}
		if ch.StatusCode > 0 {
			pairs = append(pairs, "StatusCode", strconv.Itoa(ch.StatusCode))
		}
		if ch.Task != "" {
			pairs = append(pairs, "Task", ch.Task)
		}
		pairs = append(pairs, "Timestamp", time.Unix(ch.Timestamp, 0).UTC().Format(time.RFC3339))
		kv(stdout, pairs...)
	}
	return exitOK
}
