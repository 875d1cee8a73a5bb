package main

import (
	"fmt"
	"io"
	"strconv"
)

// jobScale is `job scale [-detach] JOB [GROUP] COUNT`, as Nomad's: the
// group may be left out when the job has only one.
func jobScale(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("job scale", jobUsage, stdout, stderr)
	detach := c.flags.Bool("detach", false, "return once the job is scaled, without monitoring")
	if !c.parse(args, 2, 3) {
		return exitError
	}
	countArg := c.flags.Arg(c.flags.NArg() - 1)
	count, err := strconv.ParseInt(countArg, 10, 64)
	if err != nil || count < 0 {
		return c.usageError(fmt.Sprintf("Failed to convert count %q to a number of at least 0", countArg))
	}
	id, err := c.resolveJob(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	group := ""
	if c.flags.NArg() == 3 {
		group = c.flags.Arg(1)
	} else {
		job, _, err := c.api.Job(c.ctx(), id, nil)
		if err != nil {
			return c.fail(fmt.Errorf("Error querying job: %w", err))
		}
		if len(job.TaskGroups) != 1 {
			return c.usageError("Group name required: the job has more than one group")
		}
		group = job.TaskGroups[0].Name
	}
	resp, err := c.api.ScaleJob(c.ctx(), id, group, count, "submitted using the ctlplane CLI")
	if err != nil {
		return c.fail(fmt.Errorf("Error submitting scaling request: %w", err))
	}
	if *detach || resp.EvalID == "" {
		c.out("Job scale successful\n")
		if resp.EvalID != "" {
			c.out("Evaluation ID: %s\n", resp.EvalID)
		}
		return exitOK
	}
	return monitorEvalAndDeployment(c, id, resp.EvalID)
}
