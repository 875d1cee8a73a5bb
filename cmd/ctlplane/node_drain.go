package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// nodeDrain is Nomad's `node drain` (without the monitor: the command
// returns once the drain is set, as Nomad's -detach).
func nodeDrain(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node drain", nodeUsage, stdout, stderr)
	enable := c.flags.Bool("enable", false, "start or update the drain")
	disable := c.flags.Bool("disable", false, "cancel the drain")
	deadline := c.flags.Duration("deadline", time.Hour, "stop what is left after this long")
	force := c.flags.Bool("force", false, "stop everything now")
	noDeadline := c.flags.Bool("no-deadline", false, "never force the drain")
	ignoreSystem := c.flags.Bool("ignore-system", false, "leave system jobs' allocations in place")
	keepIneligible := c.flags.Bool("keep-ineligible", false, "with -disable: leave the node ineligible")
	message := c.flags.String("m", "", "message recorded in the drain's metadata")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	set := map[string]bool{}
	c.flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *enable == *disable:
		return c.usageError("exactly one of -enable and -disable is required")
	case *force && *noDeadline:
		return c.usageError("-force and -no-deadline are mutually exclusive")
	case (*force || *noDeadline) && set["deadline"]:
		return c.usageError("-deadline cannot be combined with -force or -no-deadline")
	case *disable && (set["deadline"] || *force || *noDeadline || *ignoreSystem):
		return c.usageError("-deadline, -force, -no-deadline and -ignore-system apply to -enable only")
	case *enable && *keepIneligible:
		return c.usageError("-keep-ineligible applies to -disable only")
	case *enable && !*force && !*noDeadline && *deadline <= 0:
		return c.usageError("-deadline must be positive (use -force or -no-deadline)")
	}
	id, err := c.nodeID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	req := &api.NodeUpdateDrainRequest{NodeID: id, MarkEligible: !*keepIneligible}
	if *message != "" {
		req.Meta = map[string]string{"message": *message}
	}
	if *enable {
		spec := &api.DrainSpec{Deadline: *deadline, IgnoreSystemJobs: *ignoreSystem}
		switch {
		case *force:
			spec.Deadline = -1
		case *noDeadline:
			spec.Deadline = 0
		}
		req.DrainSpec, req.MarkEligible = spec, false
	}
	if _, err := c.api.UpdateDrain(c.ctx(), id, req); err != nil {
		return c.fail(fmt.Errorf("Error updating drain specification: %w", err))
	}
	if *enable {
		c.out("%s: Node %q drain strategy set\n", stamp(), id)
	} else {
		c.out("%s: Node %q drain strategy unset\n", stamp(), id)
	}
	return exitOK
}

// nodeEligibility is Nomad's `node eligibility`.
func nodeEligibility(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node eligibility", nodeUsage, stdout, stderr)
	enable := c.flags.Bool("enable", false, "make the node eligible")
	disable := c.flags.Bool("disable", false, "make the node ineligible")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	if *enable == *disable {
		return c.usageError("exactly one of -enable and -disable is required")
	}
	id, err := c.nodeID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	elig, text := api.NodeSchedulingEligible, "eligible"
	if *disable {
		elig, text = api.NodeSchedulingIneligible, "ineligible"
	}
	if _, err := c.api.UpdateEligibility(c.ctx(), id, elig); err != nil {
		return c.fail(fmt.Errorf("Error updating scheduling eligibility: %w", err))
	}
	c.out("Node %q scheduling eligibility set: %s for scheduling\n", id, text)
	return exitOK
}

// drainText is a node's drain as `node status` shows it.
func drainText(n *api.Node) string {
	d := n.DrainStrategy
	switch {
	case d == nil:
		return "false"
	case d.Deadline < 0:
		return "true (forced)"
	case d.Deadline == 0:
		return "true (no deadline)"
	}
	return "true (deadline " + d.ForceDeadline.UTC().Format(time.RFC3339) + ")"
}
