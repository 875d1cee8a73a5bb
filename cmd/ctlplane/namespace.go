package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctlplane/ctlplane/api"
)

const namespaceUsage = `Usage: ctlplane namespace <command> [flags] [args]

Commands (Nomad's namespaces, where jobs live; binding rules and ACL objects
keep their own):
  list                                        list the namespaces the token may see
  apply [-description=D] [-meta=k=v ...] NAME create or update a namespace
                                              (management or operator:write)
  delete NAME                                 delete a namespace that holds no live job

Every command takes -address (env CTLPLANE_HTTP_ADDR, then NOMAD_ADDR) and
-token (env CTLPLANE_TOKEN, then NOMAD_TOKEN).
`

func runNamespace(args []string, stdout, stderr io.Writer) int {
	return dispatch("namespace", namespaceUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list":   namespaceList,
		"apply":  namespaceApply,
		"delete": namespaceDelete,
	}, args, stdout, stderr)
}

func namespaceList(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("namespace list", namespaceUsage, stdout, stderr)
	if !c.parse(args, 0, 0) {
		return exitError
	}
	list, _, err := c.api.Namespaces(c.ctx(), nil)
	if err != nil {
		return c.fail(fmt.Errorf("Error retrieving namespaces: %w", err))
	}
	if len(list) == 0 {
		c.out("No namespaces found\n")
		return exitOK
	}
	t := newTable(stdout, "Name", "Description")
	for _, ns := range list {
		t.row(ns.Name, ns.Description)
	}
	t.flush()
	return exitOK
}

// metaFlags collects repeated -meta=key=value flags.
type metaFlags map[string]string

func (m metaFlags) String() string { return fmt.Sprint(map[string]string(m)) }

func (m metaFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	m[k] = val
	return nil
}

func namespaceApply(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("namespace apply", namespaceUsage, stdout, stderr)
	desc := c.flags.String("description", "", "the namespace's description")
	meta := metaFlags{}
	c.flags.Var(meta, "meta", "key=value metadata (repeatable)")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	ns := &api.Namespace{Name: c.flags.Arg(0), Description: *desc}
	if len(meta) > 0 {
		ns.Meta = meta
	}
	if err := c.api.ApplyNamespace(c.ctx(), ns); err != nil {
		return c.fail(fmt.Errorf("Error applying namespace specification: %w", err))
	}
	c.out("Successfully applied namespace %q!\n", ns.Name)
	return exitOK
}

func namespaceDelete(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("namespace delete", namespaceUsage, stdout, stderr)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	name := c.flags.Arg(0)
	if err := c.api.DeleteNamespace(c.ctx(), name); err != nil {
		return c.fail(fmt.Errorf("Error deleting namespace: %w", err))
	}
	c.out("Successfully deleted namespace %q!\n", name)
	return exitOK
}
