package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// alloc fs, alloc restart, alloc signal and node stats: the node API
// through the servers.

// allocFS lists a directory of an allocation or prints a file (-stat: its
// description), as `nomad alloc fs`.
func allocFS(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("alloc fs", allocUsage, stdout, stderr)
	stat := c.flags.Bool("stat", false, "describe the file instead of printing it")
	if !c.parse(args, 1, 2) {
		return exitError
	}
	id, err := c.allocID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	path := c.flags.Arg(1)
	if path == "" {
		path = "/"
	}
	fi, err := c.api.AllocFSStat(c.ctx(), id, path)
	if err != nil {
		return c.fail(err)
	}
	switch {
	case *stat:
		t := newTable(stdout, "Mode", "Size", "Modified Time", "Content Type", "Name")
		t.row(fi.FileMode, humanBytes(fi.Size), fi.ModTime.UTC().Format(time.RFC3339), orNone(fi.ContentType), fi.Name)
		t.flush()
	case fi.IsDir:
		files, err := c.api.AllocFSList(c.ctx(), id, path)
		if err != nil {
			return c.fail(err)
		}
		t := newTable(stdout, "Mode", "Size", "Modified Time", "Name")
		for _, f := range files {
			name := f.Name
			if f.IsDir {
				name += "/"
			}
			t.row(f.FileMode, humanBytes(f.Size), f.ModTime.UTC().Format(time.RFC3339), name)
		}
		t.flush()
	default:
		rc, err := c.api.AllocFSCat(c.ctx(), id, path)
		if err != nil {
			return c.fail(err)
		}
		defer rc.Close()
		if _, err := io.Copy(stdout, rc); err != nil {
			return c.fail(err)
		}
	}
	return exitOK
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// allocRestart restarts a task (or every running task), as `nomad alloc restart`.
func allocRestart(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("alloc restart", allocUsage, stdout, stderr)
	all := c.flags.Bool("all-tasks", false, "restart every task of the allocation")
	task := c.flags.String("task", "", "the task to restart")
	if !c.parse(args, 1, 2) {
		return exitError
	}
	id, err := c.allocID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	name := *task
	if arg := c.flags.Arg(1); arg != "" {
		if name != "" && name != arg {
			return c.usageError("the task is named twice, differently (-task and an argument)")
		}
		name = arg
	}
	if err := c.api.AllocRestart(c.ctx(), id, name, *all); err != nil {
		return c.fail(err)
	}
	c.out("Restarted allocation %s\n", short(id))
	return exitOK
}

// allocSignal sends a signal to a task, as `nomad alloc signal` (default SIGKILL).
func allocSignal(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("alloc signal", allocUsage, stdout, stderr)
	sig := c.flags.String("s", "SIGKILL", "the signal to send")
	task := c.flags.String("task", "", "the task to signal")
	if !c.parse(args, 1, 2) {
		return exitError
	}
	id, err := c.allocID(c.flags.Arg(0))
	if err != nil {
		return c.fail(err)
	}
	name := *task
	if arg := c.flags.Arg(1); arg != "" {
		name = arg
	}
	if err := c.api.AllocSignal(c.ctx(), id, name, strings.ToUpper(*sig)); err != nil {
		return c.fail(err)
	}
	c.out("Sent %s to allocation %s\n", strings.ToUpper(*sig), short(id))
	return exitOK
}

// printNodeStats writes a node's host stats (node status -stats).
func printNodeStats(c *nomadCmd, nodeID string) error {
	hs, err := c.api.NodeStats(c.ctx(), nodeID)
	if err != nil {
		return err
	}
	c.out("\nHost Resource Utilization\n")
	mem := "-"
	if hs.Memory != nil {
		mem = humanBytes(int64(hs.Memory.Used)) + "/" + humanBytes(int64(hs.Memory.Total))
	}
	disk := "-"
	if len(hs.DiskStats) > 0 {
		disk = humanBytes(int64(hs.DiskStats[0].Used)) + "/" + humanBytes(int64(hs.DiskStats[0].Size))
	}
	kv(c.stdout, "CPU Ticks Consumed", strconv.FormatFloat(hs.CPUTicksConsumed, 'f', 0, 64)+" MHz", "Memory", mem, "Disk", disk,
		"Uptime", (time.Duration(hs.Uptime) * time.Second).String())
	c.out("\nCPU Stats\n")
	t := newTable(c.stdout, "CPU", "User", "System", "Idle")
	for _, cpu := range hs.CPU {
		t.row(cpu.CPU, pct(cpu.User), pct(cpu.System), pct(cpu.Idle))
	}
	t.flush()
	return nil
}

func pct(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" }
