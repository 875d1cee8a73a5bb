package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/api"
)

const serviceUsage = `Usage: ctlplane service <command> [flags] [args]

Commands (Nomad's native service discovery):
  list [-namespace=NS]               list the services (NS "*": every readable namespace)
  info [-namespace=NS] NAME          list a service's registered instances
  delete [-namespace=NS] NAME ID     remove one registration (submit-job)

Every command takes -address (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR) and
-token (env CTLPLANE_TOKEN, then NOMAD_TOKEN).
`

func runService(args []string, stdout, stderr io.Writer) int {
	return dispatch("service", serviceUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list":   serviceList,
		"info":   serviceInfo,
		"delete": serviceDelete,
	}, args, stdout, stderr)
}

func nsParams(ns string) *api.QueryOptions {
	if ns == "" {
		return nil
	}
	return &api.QueryOptions{Params: map[string]string{"namespace": ns}}
}

func tagList(tags []string) string { return "[" + strings.Join(tags, ",") + "]" }

func serviceList(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("service list", serviceUsage, stdout, stderr)
	ns := c.flags.String("namespace", "", "the namespace (default: default; * for all)")
	if !c.parse(args, 0, 0) {
		return exitError
	}
	list, _, err := c.api.Services(c.ctx(), nsParams(*ns))
	if err != nil {
		return c.fail(fmt.Errorf("Error listing service registrations: %w", err))
	}
	n := 0
	for _, e := range list {
		n += len(e.Services)
	}
	if n == 0 {
		c.out("No service registrations found\n")
		return exitOK
	}
	t := newTable(stdout, "Service Name", "Namespace", "Tags")
	for _, e := range list {
		for _, s := range e.Services {
			t.row(s.ServiceName, e.Namespace, tagList(s.Tags))
		}
	}
	t.flush()
	return exitOK
}

func serviceInfo(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("service info", serviceUsage, stdout, stderr)
	ns := c.flags.String("namespace", "", "the namespace (default: default)")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	regs, _, err := c.api.Service(c.ctx(), c.flags.Arg(0), nsParams(*ns))
	if err != nil {
		return c.fail(fmt.Errorf("Error listing service registrations: %w", err))
	}
	if len(regs) == 0 {
		c.out("No service registrations found\n")
		return exitOK
	}
	t := newTable(stdout, "Job ID", "Address", "Tags", "Node ID", "Alloc ID")
	for _, r := range regs {
		t.row(r.JobID, r.Address+":"+strconv.Itoa(r.Port), tagList(r.Tags), short(r.NodeID), short(r.AllocID))
	}
	t.flush()
	return exitOK
}

func serviceDelete(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("service delete", serviceUsage, stdout, stderr)
	ns := c.flags.String("namespace", "", "the namespace (default: default)")
	if !c.parse(args, 2, 2) {
		return exitError
	}
	if err := c.api.DeleteService(c.ctx(), *ns, c.flags.Arg(0), c.flags.Arg(1)); err != nil {
		return c.fail(fmt.Errorf("Error deleting service registration: %w", err))
	}
	c.out("Successfully deleted service registration\n")
	return exitOK
}
