package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ctlplane/ctlplane/api"
)

// Exit codes of job plan (Nomad's): nothing created or destroyed, some
// allocations created or destroyed, an error.
const (
	exitPlanNoChange = 0
	exitPlanChanges  = 1
	exitPlanError    = 255
)

const jobModifyIndexHelp = `To submit the job with version verification run:

ctlplane job run -check-index %d %s

When running the job with the check-index flag, the job will only be run if the
job modify index given matches the server-side version. If the index has
changed, another user has modified the job and the plan's results are
potentially invalid.`

// jobPlan dry-runs a job file and prints Nomad's plan output: the
// annotated diff, the scheduler's dry run and the job modify index.
func jobPlan(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job plan", jobUsage, stdout, stderr)
	showDiff := c.flags.Bool("diff", true, "show the diff between the registered job and the file's")
	verbose := c.flags.Bool("verbose", false, "expand added and deleted groups and tasks")
	if !c.parse(args, 1, 1) {
		return exitPlanError
	}
	path := c.flags.Arg(0)
	job, err := loadJobFile(path)
	if err != nil {
		c.fail(err)
		return exitPlanError
	}
	id, _ := job["ID"].(string)
	if id == "" {
		c.fail(fmt.Errorf("Error getting job struct: the job has no ID"))
		return exitPlanError
	}
	raw, err := json.Marshal(job)
	if err != nil {
		c.fail(err)
		return exitPlanError
	}
	resp, err := c.api.PlanJobJSON(c.ctx(), id, raw)
	if err != nil {
		c.fail(fmt.Errorf("Error during plan: %w", err))
		return exitPlanError
	}
	if *showDiff && resp.Diff != nil {
		c.out("%s\n\n", strings.TrimSpace(formatJobDiff(resp.Diff, *verbose)))
	}
	c.out("Scheduler dry-run:\n%s\n\n", formatDryRun(resp))
	if resp.Warnings != "" {
		c.out("Job Warnings:\n%s\n\n", resp.Warnings)
	}
	c.out("Job Modify Index: %d\n"+jobModifyIndexHelp+"\n", resp.JobModifyIndex, resp.JobModifyIndex, path)
	return planExitCode(resp)
}

func planExitCode(resp *api.JobPlanResponse) int {
	if resp.Diff != nil && resp.Diff.Type == "None" {
		return exitPlanNoChange
	}
	if resp.Annotations != nil {
		for _, u := range resp.Annotations.DesiredTGUpdates {
			if u.Stop+u.Place+u.Migrate+u.DestructiveUpdate+u.Canary > 0 {
				return exitPlanChanges
			}
		}
	}
	return exitPlanNoChange
}

func formatDryRun(resp *api.JobPlanResponse) string {
	if len(resp.FailedTGAllocs) == 0 {
		return "- All tasks successfully allocated."
	}
	out := "- WARNING: Failed to place all allocations.\n"
	groups := make([]string, 0, len(resp.FailedTGAllocs))
	for g := range resp.FailedTGAllocs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		m := resp.FailedTGAllocs[g]
		noun := "allocation"
		if m.CoalescedFailures > 0 {
			noun += "s"
		}
		out += fmt.Sprintf("  Task Group %q (failed to place %d %s):\n%s\n\n", g, m.CoalescedFailures+1, noun, formatMetrics(m, "    "))
	}
	return strings.TrimRight(out, "\n")
}

// formatMetrics explains a failed placement as Nomad's CLI does.
func formatMetrics(m *api.AllocationMetric, prefix string) string {
	var lines []string
	if m.NodesEvaluated == 0 {
		lines = append(lines, prefix+"* No nodes were eligible for evaluation")
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			lines = append(lines, fmt.Sprintf("%s* No nodes are available in datacenter %q", prefix, dc))
		}
	}
	for _, c := range sortedKeys(m.ClassFiltered) {
		lines = append(lines, fmt.Sprintf("%s* Class %q: %d nodes excluded by filter", prefix, c, m.ClassFiltered[c]))
	}
	for _, c := range sortedKeys(m.ConstraintFiltered) {
		lines = append(lines, fmt.Sprintf("%s* Constraint %q: %d nodes excluded by filter", prefix, c, m.ConstraintFiltered[c]))
	}
	if m.NodesExhausted > 0 {
		lines = append(lines, fmt.Sprintf("%s* Resources exhausted on %d nodes", prefix, m.NodesExhausted))
	}
	for _, c := range sortedKeys(m.ClassExhausted) {
		lines = append(lines, fmt.Sprintf("%s* Class %q exhausted on %d nodes", prefix, c, m.ClassExhausted[c]))
	}
	for _, d := range sortedKeys(m.DimensionExhausted) {
		lines = append(lines, fmt.Sprintf("%s* Dimension %q exhausted on %d nodes", prefix, d, m.DimensionExhausted[d]))
	}
	for _, q := range m.QuotaExhausted {
		lines = append(lines, fmt.Sprintf("%s* Quota limit hit %q", prefix, q))
	}
	return strings.Join(lines, "\n")
}

// diffMarker is the marker of a diff type and its width.
func diffMarker(t string) (string, int) {
	switch t {
	case "Added":
		return "+ ", 2
	case "Deleted":
		return "- ", 2
	case "Edited":
		return "+/- ", 4
	}
	return "", 0
}

// formatJobDiff prints a job diff as `nomad job plan` does (without
// colors): the job's changed fields when it is edited, then each group.
func formatJobDiff(d *api.JobDiff, verbose bool) string {
	marker, _ := diffMarker(d.Type)
	out := fmt.Sprintf("%sJob: %q\n", marker, d.ID)
	longestField, longestMarker := longestPrefixes(d.Fields, d.Objects)
	for _, g := range d.TaskGroups {
		if _, l := diffMarker(g.Type); l > longestMarker {
			longestMarker = l
		}
	}
	if d.Type == "Edited" || verbose {
		if fo := alignedFieldsAndObjects(d.Fields, d.Objects, 0, longestField, longestMarker); fo != "" {
			out += fo + "\n"
		}
	}
	for _, g := range d.TaskGroups {
		_, l := diffMarker(g.Type)
		out += formatGroupDiff(g, longestMarker-l, verbose) + "\n"
	}
	return out
}

func formatGroupDiff(g *api.TaskGroupDiff, prefix int, verbose bool) string {
	marker, _ := diffMarker(g.Type)
	out := fmt.Sprintf("%s%sTask Group: %q", marker, strings.Repeat(" ", prefix), g.Name)
	if len(g.Updates) > 0 {
		kinds := make([]string, 0, len(g.Updates))
		for k := range g.Updates {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%d %s", g.Updates[k], k)
		}
		out += " (" + strings.Join(parts, ", ") + ")"
	}
	out += "\n"
	longestField, longestMarker := longestPrefixes(g.Fields, g.Objects)
	for _, t := range g.Tasks {
		if _, l := diffMarker(t.Type); l > longestMarker {
			longestMarker = l
		}
	}
	sub := prefix + 2
	if g.Type == "Edited" || verbose {
		if fo := alignedFieldsAndObjects(g.Fields, g.Objects, sub, longestField, longestMarker); fo != "" {
			out += fo + "\n"
		}
	}
	for _, t := range g.Tasks {
		_, l := diffMarker(t.Type)
		out += formatTaskDiff(t, sub, longestMarker-l, verbose) + "\n"
	}
	return out
}

func formatTaskDiff(t *api.TaskDiff, start, prefix int, verbose bool) string {
	marker, _ := diffMarker(t.Type)
	out := fmt.Sprintf("%s%s%sTask: %q", strings.Repeat(" ", start), marker, strings.Repeat(" ", prefix), t.Name)
	if len(t.Annotations) > 0 {
		out += " (" + strings.Join(t.Annotations, ", ") + ")"
	}
	if t.Type == "None" || ((t.Type == "Added" || t.Type == "Deleted") && !verbose) {
		return out
	}
	longestField, longestMarker := longestPrefixes(t.Fields, t.Objects)
	return out + "\n" + alignedFieldsAndObjects(t.Fields, t.Objects, start+2, longestField, longestMarker)
}

func formatObjectDiff(o *api.ObjectDiff, start, prefix int) string {
	marker, markerLen := diffMarker(o.Type)
	out := fmt.Sprintf("%s%s%s%s {\n", strings.Repeat(" ", start), marker, strings.Repeat(" ", prefix), o.Name)
	longestField, longestMarker := longestPrefixes(o.Fields, o.Objects)
	out += alignedFieldsAndObjects(o.Fields, o.Objects, start+prefix+2, longestField, longestMarker)
	return out + "\n" + strings.Repeat(" ", start+markerLen+prefix) + "}"
}

func formatFieldDiff(f *api.FieldDiff, start, prefix, valuePrefix int) string {
	marker, _ := diffMarker(f.Type)
	out := fmt.Sprintf("%s%s%s%s: %s", strings.Repeat(" ", start), marker, strings.Repeat(" ", prefix), f.Name, strings.Repeat(" ", valuePrefix))
	switch f.Type {
	case "Added":
		out += fmt.Sprintf("%q", f.New)
	case "Deleted":
		out += fmt.Sprintf("%q", f.Old)
	case "Edited":
		out += fmt.Sprintf("%q => %q", f.Old, f.New)
	default:
		out += fmt.Sprintf("%q", f.New)
	}
	if len(f.Annotations) > 0 {
		out += " (" + strings.Join(f.Annotations, ", ") + ")"
	}
	return out
}

// alignedFieldsAndObjects prints fields with their markers and values
// aligned, then objects, one per line (no trailing newline).
func alignedFieldsAndObjects(fields []*api.FieldDiff, objects []*api.ObjectDiff, start, longestField, longestMarker int) string {
	var lines []string
	for _, f := range fields {
		_, l := diffMarker(f.Type)
		lines = append(lines, formatFieldDiff(f, start, longestMarker-l, longestField-len(f.Name)))
	}
	for _, o := range objects {
		_, l := diffMarker(o.Type)
		lines = append(lines, formatObjectDiff(o, start, longestMarker-l))
	}
	return strings.Join(lines, "\n")
}

func longestPrefixes(fields []*api.FieldDiff, objects []*api.ObjectDiff) (longestField, longestMarker int) {
	for _, f := range fields {
		if len(f.Name) > longestField {
			longestField = len(f.Name)
		}
		if _, l := diffMarker(f.Type); l > longestMarker {
			longestMarker = l
		}
	}
	for _, o := range objects {
		if _, l := diffMarker(o.Type); l > longestMarker {
			longestMarker = l
		}
	}
	return longestField, longestMarker
}
