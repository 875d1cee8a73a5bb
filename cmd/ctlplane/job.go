package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/api"
)

const jobUsage = `Usage: ctlplane job <command> [flags] [args]

Commands (Nomad's verbs):
  run [-detach] [-output] [-check-index N] FILE
                                     register a job from a JSON or HCL2 job file ("-": stdin) and
                                     monitor its evaluation and deployment (exit 0 successful,
                                     2 failed); -output prints the JSON job instead
                                     -check-index N registers only if the job's modify index is N
                                     (0: only if the job does not exist), as after job plan
  plan [-diff=false] [-verbose] FILE dry-run a job file: the diff from the registered job, what the
                                     scheduler would do, the job modify index (nothing is written;
                                     exit 0 no allocation created or destroyed, 1 some, 255 error)
  status [ID]                        list jobs, or show one (with its latest deployment and allocations)
  stop [-purge] [-detach] ID         stop a job (-purge: and delete it)
  history [-p] ID                    list a job's versions (-p: with the changes each one made)
  revert [-detach] ID VERSION        register an older version again
  scale [-detach] ID [GROUP] COUNT   set a group's count (GROUP may be left out for a one-group job)

Every command takes -address (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR) and
-token (env CTLPLANE_TOKEN, then NOMAD_TOKEN).
`

var jobStdin io.Reader = os.Stdin

func runJob(args []string, stdout, stderr io.Writer) int {
	return dispatch("job", jobUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"run":     jobRun,
		"plan":    jobPlan,
		"status":  jobStatus,
		"stop":    jobStop,
		"history": jobHistory,
		"revert":  jobRevert,
		"scale":   jobScale,
	}, args, stdout, stderr)
}

// loadJobFile reads a job file as the JSON object of Nomad's job: a JSON
// file (the job, or {"Job": job}) or an HCL2 job file.
func loadJobFile(path string) (map[string]any, error) {
	var buf []byte
	var err error
	if path == "-" {
		buf, err = io.ReadAll(jobStdin)
	} else {
		buf, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("Error reading job file: %w", err)
	}
	trimmed := bytes.TrimSpace(buf)
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".json" || (ext != ".hcl" && ext != ".nomad" && len(trimmed) > 0 && trimmed[0] == '{') {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("Error parsing job file %s: %w", path, err)
		}
		if inner, ok := m["Job"].(map[string]any); ok && len(m) == 1 {
			m = inner
		}
		return m, nil
	}
	return parseHCLJob(path, buf)
}

func jobRun(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job run", jobUsage, stdout, stderr)
	detach := c.flags.Bool("detach", false, "return once the job is registered, without monitoring")
	output := c.flags.Bool("output", false, "print the job as JSON (the body PUT /v1/jobs takes) and exit")
	checkIndex := c.flags.Int64("check-index", -1, "register only if the job modify index is this one (0: a new job)")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	job, err := loadJobFile(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	body := map[string]any{"Job": job}
	if *checkIndex >= 0 {
		body["EnforceIndex"], body["JobModifyIndex"] = true, *checkIndex
	}
	if *output {
		return printJSON(c, body)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return c.fail(err)
	}
	resp, err := c.api.RegisterJobJSON(c.ctx(), raw)
	if err != nil {
		return c.fail(fmt.Errorf("Error submitting job: %w", err))
	}
	jobID, _ := job["ID"].(string)
	if jobID == "" {
		jobID, _ = job["Name"].(string)
	}
	if *detach || resp.EvalID == "" {
		c.out("Job registration successful\n")
		if resp.EvalID != "" {
			c.out("Evaluation ID: %s\n", resp.EvalID)
		}
		return exitOK
	}
	return monitorEvalAndDeployment(c, jobID, resp.EvalID)
}

// monitorEvalAndDeployment follows an evaluation of jobID, then the
// deployment of the job's version it started, if any.
func monitorEvalAndDeployment(c *nomadCmd, jobID, evalID string) int {
	ctx := c.ctx()
	m := newMonitor(c)
	e, err := m.evaluation(ctx, evalID)
	if err != nil {
		return c.fail(err)
	}
	if e.Status != api.EvalStatusComplete {
		return exitFailed
	}
	for _, n := range e.QueuedAllocations {
		if n > 0 {
			return exitFailed
		}
	}
	depID := e.DeploymentID
	if depID == "" {
		depID = latestDeploymentOf(ctx, c, jobID)
	}
	if depID == "" {
		return exitOK
	}
	return m.deployment(ctx, depID)
}

// latestDeploymentOf is the deployment of the job's current version ("" when none).
func latestDeploymentOf(ctx context.Context, c *nomadCmd, jobID string) string {
	job, _, err := c.api.Job(ctx, jobID, nil)
	if err != nil {
		return ""
	}
	d, _, err := c.api.JobLatestDeployment(ctx, jobID, nil)
	if err != nil || d == nil || d.JobVersion != job.Version {
		return ""
	}
	return d.ID
}

// resolveJob finds a job by ID, else by unique ID prefix.
func (c *nomadCmd) resolveJob(id string) (string, error) {
	if _, _, err := c.api.Job(c.ctx(), id, nil); err == nil {
		return id, nil
	} else if !api.IsNotFound(err) {
		return "", err
	}
	list, _, err := c.api.Jobs(c.ctx(), &api.QueryOptions{Params: map[string]string{"prefix": id}})
	if err != nil {
		return "", err
	}
	var ids []string
	for _, j := range list {
		ids = append(ids, j.ID)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("No job(s) with prefix or id %q found", id)
	case 1:
		return ids[0], nil
	}
	return "", &errAmbiguous{what: "job", prefix: id, ids: ids}
}

func jobStatus(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job status", jobUsage, stdout, stderr)
	if !c.parse(args, 0, 1) {
		return exitError
	}
	ctx := c.ctx()
	if c.flags.NArg() == 0 {
		list, _, err := c.api.Jobs(ctx, nil)
		if err != nil {
			return c.fail(err)
		}
		if len(list) == 0 {
			c.out("No running jobs\n")
			return exitOK
		}
		t := newTable(stdout, "ID", "Type", "Priority", "Status", "Submit Date")
		for _, j := range list {
			t.row(j.ID, j.Type, strconv.Itoa(j.Priority), j.Status, fmtUnixNano(j.SubmitTime))
		}
		t.flush()
		return exitOK
	}
	id, err := c.resolveJob(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	job, _, err := c.api.Job(ctx, id, nil)
	if err != nil {
		return c.fail(err)
	}
	kv(stdout, "ID", job.ID, "Name", job.Name, "Submit Date", fmtUnixNano(job.SubmitTime), "Type", job.Type,
		"Priority", strconv.Itoa(job.Priority), "Datacenters", strings.Join(job.Datacenters, ","), "Namespace", job.Namespace,
		"Node Pool", orNone(job.NodePool), "Status", job.Status, "Version", strconv.FormatUint(job.Version, 10), "Stable", strconv.FormatBool(job.Stable))
	if d, _, err := c.api.JobLatestDeployment(ctx, id, nil); err == nil && d != nil {
		c.out("\nLatest Deployment\n")
		kv(stdout, "ID", short(d.ID), "Status", d.Status, "Description", d.StatusDescription)
		var b bytes.Buffer
		writeDeployment(&b, d)
		if i := strings.Index(b.String(), "\nDeployed\n"); i >= 0 {
			c.out("%s", b.String()[i:])
		}
	}
	allocs, _, err := c.api.JobAllocations(ctx, id, nil)
	if err != nil {
		return c.fail(err)
	}
	c.out("\nAllocations\n")
	if len(allocs) == 0 {
		c.out("No allocations placed\n")
		return exitOK
	}
	writeAllocTable(stdout, allocs)
	return exitOK
}

// writeAllocTable lists allocations, newest first, as Nomad's job status.
func writeAllocTable(w io.Writer, allocs []*api.AllocationListStub) {
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].CreateIndex > allocs[j].CreateIndex })
	t := newTable(w, "ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Health", "Created")
	for _, a := range allocs {
		health := "-"
		if ds := a.DeploymentStatus; ds.IsHealthy() {
			health = "healthy"
		} else if ds.IsUnhealthy() {
			health = "unhealthy"
		}
		t.row(short(a.ID), short(a.NodeID), a.TaskGroup, strconv.FormatUint(a.JobVersion, 10), a.DesiredStatus, a.ClientStatus, health, fmtUnixNano(a.CreateTime))
	}
	t.flush()
}

func jobStop(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job stop", jobUsage, stdout, stderr)
	purge := c.flags.Bool("purge", false, "also delete the job and its history")
	detach := c.flags.Bool("detach", false, "return at once, without monitoring the evaluation")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	id, err := c.resolveJob(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	resp, err := c.api.DeregisterJob(c.ctx(), id, *purge)
	if err != nil {
		return c.fail(fmt.Errorf("Error deregistering job: %w", err))
	}
	if *detach || resp.EvalID == "" {
		c.out("Evaluation ID: %s\n", orNone(resp.EvalID))
		return exitOK
	}
	e, err := newMonitor(c).evaluation(c.ctx(), resp.EvalID)
	if err != nil {
		return c.fail(err)
	}
	if e.Status != api.EvalStatusComplete {
		return exitFailed
	}
	return exitOK
}

func jobHistory(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job history", jobUsage, stdout, stderr)
	withDiffs := c.flags.Bool("p", false, "show the changes each version made")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	id, err := c.resolveJob(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	var versions []*api.Job
	var diffs []*api.JobDiff
	if *withDiffs {
		versions, diffs, err = c.api.JobVersionsWithDiffs(c.ctx(), id)
	} else {
		versions, _, err = c.api.JobVersions(c.ctx(), id, nil)
	}
	if err != nil {
		return c.fail(err)
	}
	for i, v := range versions {
		if i > 0 {
			c.out("\n")
		}
		pairs := []string{"Version", strconv.FormatUint(v.Version, 10), "Stable", strconv.FormatBool(v.Stable), "Submit Date", fmtUnixNano(v.SubmitTime)}
		if i < len(diffs) {
			pairs = append(pairs, "Diff", "")
		}
		kv(stdout, pairs...)
		if i < len(diffs) {
			c.out("%s\n", strings.TrimSpace(formatJobDiff(diffs[i], false)))
		}
	}
	return exitOK
}

func jobRevert(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job revert", jobUsage, stdout, stderr)
	detach := c.flags.Bool("detach", false, "return at once, without monitoring")
	if !c.parse(args, 2, 2) {
		return exitError
	}
	version, err := strconv.ParseUint(c.flags.Arg(1), 10, 64)
	if err != nil {
		return c.usageError(fmt.Sprintf("invalid job version %q: a non-negative integer is needed", c.flags.Arg(1)))
	}
	id, err := c.resolveJob(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	resp, err := c.api.RevertJob(c.ctx(), id, version, nil)
	if err != nil {
		return c.fail(fmt.Errorf("Error reverting job: %w", err))
	}
	if *detach || resp.EvalID == "" {
		c.out("Evaluation ID: %s\n", orNone(resp.EvalID))
		return exitOK
	}
	return monitorEvalAndDeployment(c, id, resp.EvalID)
}
