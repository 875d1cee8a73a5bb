package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/ctlplane/ctlplane/api"
)

const deploymentUsage = `Usage: ctlplane deployment <command> [flags] [args]

Commands (Nomad's verbs; IDs by unique prefix):
  list                                   list deployments
  status [-monitor] [-json] ID           show a deployment (-monitor: follow it to its end;
                                         exit 0 successful, 2 failed or cancelled)
  fail ID                                mark a running deployment failed (auto_revert rolls back)
  pause ID | resume ID                   pause or resume a deployment
  unblock ID                             unblock a blocked multiregion deployment
  promote [-group G]... ID               promote the canaries (of the named groups, default all)
  allocation-health -healthy|-unhealthy ALLOC... ID
                                         set allocations' health by hand

Every command takes -address (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR) and
-token (env CTLPLANE_TOKEN, then NOMAD_TOKEN).
`

func runDeployment(args []string, stdout, stderr io.Writer) int {
	return dispatch("deployment", deploymentUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list":              deploymentList,
		"status":            deploymentStatus,
		"fail":              deploymentSimpleOp("fail"),
		"pause":             deploymentSimpleOp("pause"),
		"resume":            deploymentSimpleOp("resume"),
		"unblock":           deploymentSimpleOp("unblock"),
		"promote":           deploymentPromote,
		"allocation-health": deploymentAllocHealth,
	}, args, stdout, stderr)
}

func deploymentList(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("deployment list", deploymentUsage, stdout, stderr)
	asJSON := c.flags.Bool("json", false, "print the servers' JSON")
	if !c.parse(args, 0, 0) {
		return exitError
	}
	list, _, err := c.api.Deployments(c.ctx(), &api.QueryOptions{Params: map[string]string{"namespace": "*"}})
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		return printJSON(c, list)
	}
	if len(list) == 0 {
		c.out("No deployments found\n")
		return exitOK
	}
	// Newest first.
	sort.SliceStable(list, func(i, j int) bool { return list[i].CreateIndex > list[j].CreateIndex })
	t := newTable(stdout, "ID", "Job ID", "Job Version", "Status", "Description")
	for _, d := range list {
		t.row(short(d.ID), d.JobID, strconv.FormatUint(d.JobVersion, 10), d.Status, d.StatusDescription)
	}
	t.flush()
	return exitOK
}

func printJSON(c *nomadCmd, v any) int {
	buf, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return c.fail(err)
	}
	c.out("%s\n", buf)
	return exitOK
}

func deploymentStatus(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("deployment status", deploymentUsage, stdout, stderr)
	follow := c.flags.Bool("monitor", false, "follow the deployment until it ends")
	asJSON := c.flags.Bool("json", false, "print the servers' JSON")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	id, err := c.deploymentID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	if *follow {
		return newMonitor(c).deployment(c.ctx(), id)
	}
	d, _, err := c.api.Deployment(c.ctx(), id, nil)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		return printJSON(c, d)
	}
	writeDeployment(stdout, d)
	return exitOK
}

// deploymentSimpleOp is fail, pause, resume and unblock.
func deploymentSimpleOp(op string) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		c := newNomadCmd("deployment "+op, deploymentUsage, stdout, stderr)
		if !c.parse(args, 1, 1) {
			return exitError
		}
		id, err := c.deploymentID(c.flags.Arg(0))
		if err != nil {
			return c.fail(err)
		}
		var resp *api.DeploymentUpdateResponse
		switch op {
		case "fail":
			resp, err = c.api.FailDeployment(c.ctx(), id)
		case "pause":
			resp, err = c.api.PauseDeployment(c.ctx(), id, true)
		case "resume":
			resp, err = c.api.PauseDeployment(c.ctx(), id, false)
		case "unblock":
			resp, err = c.api.UnblockDeployment(c.ctx(), id)
		}
		if err != nil {
			return c.fail(err)
		}
		past := map[string]string{"fail": "failed", "pause": "paused", "resume": "resumed", "unblock": "unblocked"}[op]
		c.out("Deployment %q %s\n", short(id), past)
		reportAction(c, resp)
		return exitOK
	}
}

// reportAction prints an operation's evaluation and rollback.
func reportAction(c *nomadCmd, resp *api.DeploymentUpdateResponse) {
	if resp.RevertedJobVersion != nil {
		c.out("Rolling back to job version %d\n", *resp.RevertedJobVersion)
	}
	if resp.EvalID != "" {
		c.out("Evaluation ID: %s\n", resp.EvalID)
	}
}

// groupList is a repeatable -group flag.
type groupList []string

func (g *groupList) String() string     { return fmt.Sprint(*g) }
func (g *groupList) Set(v string) error { *g = append(*g, v); return nil }

func deploymentPromote(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("deployment promote", deploymentUsage, stdout, stderr)
	var groups groupList
	c.flags.Var(&groups, "group", "task group whose canaries to promote (repeatable; default: every group)")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	id, err := c.deploymentID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	resp, err := c.api.PromoteDeployment(c.ctx(), id, groups)
	if err != nil {
		return c.fail(err)
	}
	c.out("Deployment %q promoted\n", short(id))
	reportAction(c, resp)
	return exitOK
}

func deploymentAllocHealth(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("deployment allocation-health", deploymentUsage, stdout, stderr)
	healthy := c.flags.Bool("healthy", false, "mark the allocations healthy")
	unhealthy := c.flags.Bool("unhealthy", false, "mark the allocations unhealthy")
	if !c.parse(args, 2, -1) {
		return exitError
	}
	if *healthy == *unhealthy {
		return c.usageError("exactly one of -healthy and -unhealthy is needed")
	}
	rest := c.flags.Args()
	id, err := c.deploymentID(rest[len(rest)-1])
	if err != nil {
		return c.fail(err)
	}
	allocs, _, err := c.api.DeploymentAllocations(c.ctx(), id, nil)
	if err != nil {
		return c.fail(err)
	}
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = a.ID
	}
	var picked []string
	for _, p := range rest[:len(rest)-1] {
		aid, err := resolvePrefix("allocation of the deployment", p, ids)
		if err != nil {
			return c.fail(err)
		}
		picked = append(picked, aid)
	}
	var resp *api.DeploymentUpdateResponse
	if *healthy {
		resp, err = c.api.SetAllocHealth(c.ctx(), id, picked, nil)
	} else {
		resp, err = c.api.SetAllocHealth(c.ctx(), id, nil, picked)
	}
	if err != nil {
		return c.fail(err)
	}
	word := "healthy"
	if *unhealthy {
		word = "unhealthy"
	}
	c.out("Marked %d allocation(s) %s in deployment %q\n", len(picked), word, short(id))
	reportAction(c, resp)
	return exitOK
}
