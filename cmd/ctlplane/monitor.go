package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// The live monitor of `job run` and `deployment status -monitor`, as
// Nomad's: an evaluation's progress as lines, then the deployment's state
// per task group (placed, healthy, unhealthy, canaries against desired),
// redrawn in place on a terminal and printed as a line per change
// otherwise, until the deployment ends: exit 0 when it succeeded, 2 when
// it failed or was cancelled.

type monitor struct {
	api *api.Client
	out io.Writer
	tty bool
	// drawn is how many lines the last redraw wrote (terminal only).
	drawn int
}

func newMonitor(c *nomadCmd) *monitor {
	return &monitor{api: c.api, out: c.stdout, tty: isTerminal(c.stdout)}
}

// retry calls fn until it works, a few times over transient failures
// (a leader election, a restarting server).
func retry[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var last error
	for i := 0; i < 10; i++ {
		v, err := fn()
		if err == nil {
			return v, nil
		}
		last = err
		var apiErr *api.Error
		if asAPIError(err, &apiErr) && apiErr.StatusCode < 500 {
			break
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(time.Duration(i+1) * 200 * time.Millisecond):
		}
	}
	var zero T
	return zero, last
}

// evaluation follows an evaluation until it is no longer pending and
// returns it, printing Nomad's lines.
func (m *monitor) evaluation(ctx context.Context, evalID string) (*api.Evaluation, error) {
	fmt.Fprintf(m.out, "==> %s: Monitoring evaluation %q\n", stamp(), short(evalID))
	var index uint64
	var status string
	for {
		type res struct {
			e    *api.Evaluation
			meta *api.QueryMeta
		}
		r, err := retry(ctx, func() (res, error) {
			e, meta, err := m.api.Evaluation(ctx, evalID, &api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second})
			return res{e, meta}, err
		})
		if err != nil {
			return nil, err
		}
		e := r.e
		index = r.meta.LastIndex
		if status == "" {
			fmt.Fprintf(m.out, "    %s: Evaluation triggered by job %q\n", stamp(), e.JobID)
		}
		if e.Status != status && status != "" {
			fmt.Fprintf(m.out, "    %s: Evaluation status changed: %q -> %q\n", stamp(), status, e.Status)
		}
		status = e.Status
		if e.Status == api.EvalStatusPending {
			continue
		}
		if e.DeploymentID != "" {
			fmt.Fprintf(m.out, "    %s: Evaluation within deployment: %q\n", stamp(), short(e.DeploymentID))
		}
		allocs, _, err := m.api.EvaluationAllocations(ctx, evalID, nil)
		if err == nil {
			for _, a := range allocs {
				fmt.Fprintf(m.out, "    %s: Allocation %q created: node %q, group %q\n", stamp(), short(a.ID), short(a.NodeID), a.TaskGroup)
			}
		}
		if len(e.FailedTGAllocs) > 0 {
			m.failedPlacements(e)
			return e, nil
		}
		for g, n := range e.QueuedAllocations {
			if n > 0 {
				fmt.Fprintf(m.out, "    %s: Task Group %q (failed to place %d allocation(s))\n", stamp(), g, n)
			}
		}
		fmt.Fprintf(m.out, "==> %s: Evaluation %q finished with status %q\n", stamp(), short(evalID), e.Status)
		return e, nil
	}
}

// deployment follows a deployment until it ends and returns the exit code.
func (m *monitor) deployment(ctx context.Context, id string) int {
	fmt.Fprintf(m.out, "==> %s: Monitoring deployment %q\n", stamp(), short(id))
	var index uint64
	var lastLine string
	followed := false
	for {
		type res struct {
			d    *api.Deployment
			meta *api.QueryMeta
		}
		r, err := retry(ctx, func() (res, error) {
			d, meta, err := m.api.Deployment(ctx, id, &api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second})
			return res{d, meta}, err
		})
		if err != nil {
			fmt.Fprintf(m.out, "Error: following deployment %q: %v\n", short(id), err)
			return exitError
		}
		index = r.meta.LastIndex
		if done, code := m.show(r.d, &lastLine); done {
			return code
		}
		if !followed {
			// Then its changes as the event stream sends them; blocking
			// queries again if the stream is not served or breaks.
			followed = true
			last, done, code := m.followStream(ctx, r.d, index, &lastLine)
			if done {
				return code
			}
			index = max(index, last)
		}
	}
}

// show prints a state of the deployment; done when it has ended, with the
// exit code.
func (m *monitor) show(d *api.Deployment, lastLine *string) (bool, int) {
	done := !d.Active() || d.Status == api.DeploymentStatusBlocked
	if m.tty {
		m.redraw(deploymentView(d, done))
	} else if line := progressLine(d); line != *lastLine {
		fmt.Fprintf(m.out, "    %s: %s\n", stamp(), line)
		*lastLine = line
	}
	if !done {
		return false, 0
	}
	if !m.tty {
		fmt.Fprint(m.out, deploymentView(d, true))
	}
	switch d.Status {
	case api.DeploymentStatusSuccessful, api.DeploymentStatusBlocked:
		return true, exitOK
	}
	return true, exitFailed
}

// followStream shows the deployment's states from the event stream, from
// after index, until it ends (done) or the stream does (the index of the
// last state shown, to go on from with blocking queries).
func (m *monitor) followStream(ctx context.Context, d *api.Deployment, index uint64, lastLine *string) (uint64, bool, int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	params := url.Values{"topic": {"Deployment:" + d.ID}, "namespace": {d.Namespace}, "index": {strconv.FormatUint(index+1, 10)}}
	s, err := m.api.EventStream(ctx, params)
	if err != nil {
		return index, false, 0
	}
	defer s.Close()
	if s.Truncated {
		return index, false, 0 // changes were dropped: read the deployment again
	}
	for {
		b, err := s.Next()
		if err != nil {
			return index, false, 0
		}
		for _, e := range b.Events {
			if e.Topic != "Deployment" || e.Key != d.ID {
				continue
			}
			var next api.Deployment
			if err := json.Unmarshal(e.Payload["Deployment"], &next); err != nil {
				return index, false, 0
			}
			if done, code := m.show(&next, lastLine); done {
				return b.Index, true, code
			}
		}
		index = b.Index
	}
}

func (m *monitor) redraw(s string) {
	if m.drawn > 0 {
		fmt.Fprintf(m.out, "\x1b[%dA\x1b[J", m.drawn)
	}
	fmt.Fprint(m.out, s)
	m.drawn = strings.Count(s, "\n")
}

// progressLine is one line of a deployment's progress (non-terminal output).
func progressLine(d *api.Deployment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Deployment %q %s", short(d.ID), d.Status)
	for _, g := range sortedGroups(d) {
		s := d.TaskGroups[g]
		fmt.Fprintf(&b, "; %s: placed %d/%d, healthy %d, unhealthy %d", g, s.PlacedAllocs, s.DesiredTotal, s.HealthyAllocs, s.UnhealthyAllocs)
		if s.DesiredCanaries > 0 {
			fmt.Fprintf(&b, ", canaries %d/%d", len(s.PlacedCanaries), s.DesiredCanaries)
			if s.Promoted {
				b.WriteString(" (promoted)")
			}
		}
	}
	if d.StatusDescription != "" {
		fmt.Fprintf(&b, " (%s)", d.StatusDescription)
	}
	return b.String()
}

func sortedGroups(d *api.Deployment) []string {
	names := make([]string, 0, len(d.TaskGroups))
	for g := range d.TaskGroups {
		names = append(names, g)
	}
	sort.Strings(names)
	return names
}

// deploymentView is the monitor's block: the outcome line, then the
// deployment as `deployment status` shows it.
func deploymentView(d *api.Deployment, done bool) string {
	var b bytes.Buffer
	switch {
	case !done:
		fmt.Fprintf(&b, "  ⠿ Deployment %q in progress...\n", short(d.ID))
	case d.Status == api.DeploymentStatusSuccessful || d.Status == api.DeploymentStatusBlocked:
		fmt.Fprintf(&b, "  ✓ Deployment %q %s\n", short(d.ID), d.Status)
	default:
		fmt.Fprintf(&b, "  ! Deployment %q %s\n", short(d.ID), d.Status)
	}
	b.WriteString("\n")
	var inner bytes.Buffer
	fmt.Fprintf(&inner, "%s\n", stamp())
	writeDeployment(&inner, d)
	for _, line := range strings.Split(strings.TrimRight(inner.String(), "\n"), "\n") {
		if line == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// writeDeployment is `deployment status`'s output.
func writeDeployment(w io.Writer, d *api.Deployment) {
	kv(w, "ID", d.ID, "Job ID", d.JobID, "Job Version", strconv.FormatUint(d.JobVersion, 10),
		"Status", d.Status, "Description", d.StatusDescription)
	fmt.Fprintf(w, "\nDeployed\n")
	canaries := false
	for _, s := range d.TaskGroups {
		canaries = canaries || s.DesiredCanaries > 0
	}
	header := []string{"Task Group", "Auto Revert"}
	if canaries {
		header = append(header, "Promoted")
	}
	header = append(header, "Desired")
	if canaries {
		header = append(header, "Canaries")
	}
	header = append(header, "Placed", "Healthy", "Unhealthy", "Progress Deadline")
	t := newTable(w, header...)
	for _, g := range sortedGroups(d) {
		s := d.TaskGroups[g]
		row := []string{g, strconv.FormatBool(s.AutoRevert)}
		if canaries {
			row = append(row, strconv.FormatBool(s.Promoted))
		}
		row = append(row, strconv.Itoa(s.DesiredTotal))
		if canaries {
			row = append(row, strconv.Itoa(s.DesiredCanaries))
		}
		deadline := "<none>"
		if s.RequireProgressBy != nil && !s.RequireProgressBy.IsZero() {
			deadline = s.RequireProgressBy.UTC().Format(time.RFC3339)
		} else if s.ProgressDeadline > 0 {
			deadline = s.ProgressDeadline.String()
		}
		row = append(row, strconv.Itoa(s.PlacedAllocs), strconv.Itoa(s.HealthyAllocs), strconv.Itoa(s.UnhealthyAllocs), deadline)
		t.row(row...)
	}
	t.flush()
}

// failedPlacements prints why an evaluation could not place everything,
// as Nomad's monitor: each group's failure metrics, then the blocked
// evaluation that waits for capacity.
func (m *monitor) failedPlacements(e *api.Evaluation) {
	fmt.Fprintf(m.out, "==> %s: Evaluation %q finished with status %q but failed to place all allocations:\n", stamp(), short(e.ID), e.Status)
	groups := make([]string, 0, len(e.FailedTGAllocs))
	for g := range e.FailedTGAllocs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		fm := e.FailedTGAllocs[g]
		noun := "allocation"
		if fm.CoalescedFailures > 0 {
			noun += "s"
		}
		fmt.Fprintf(m.out, "    %s: Task Group %q (failed to place %d %s):\n", stamp(), g, fm.CoalescedFailures+1, noun)
		if lines := formatMetrics(fm, "      "); lines != "" {
			fmt.Fprintln(m.out, lines)
		}
	}
	if e.BlockedEval != "" {
		fmt.Fprintf(m.out, "    %s: Evaluation %q waiting for additional capacity to place remainder\n", stamp(), short(e.BlockedEval))
	}
}
