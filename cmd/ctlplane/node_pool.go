package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

const nodePoolUsage = `Usage: ctlplane node pool <command> [flags] [NAME|FILE]

Commands (Nomad 1.6's):
  list [-json]            the node pools (built-ins "all" and "default" included)
  info [-json] NAME       one pool
  apply FILE              create or update the pool of an HCL or JSON file:
                            node_pool "gpu" {
                              description = "GPU nodes"
                              meta { team = "ml" }
                              scheduler_config { scheduler_algorithm = "spread" }
                            }
  delete NAME             delete a pool no node and no live job uses
  nodes NAME              the pool's nodes ("all": every node)
  jobs NAME               the pool's jobs (-namespace; "*" for every namespace)

Every command takes -address (env CTLPLANE_HTTP_ADDR) and -token (env CTLPLANE_TOKEN).
`

// nodePoolJSON is a pool as the API answers it.
type nodePoolJSON struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration *struct {
		SchedulerAlgorithm            string `json:",omitempty"`
		MemoryOversubscriptionEnabled *bool  `json:",omitempty"`
	} `json:",omitempty"`
	CreateIndex uint64 `json:",omitempty"`
	ModifyIndex uint64 `json:",omitempty"`
}

func runNodePool(args []string, stdout, stderr io.Writer) int {
	return dispatch("node pool", nodePoolUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list":   nodePoolList,
		"info":   nodePoolInfo,
		"apply":  nodePoolApply,
		"delete": nodePoolDelete,
		"nodes":  nodePoolNodes,
		"jobs":   nodePoolJobs,
	}, args, stdout, stderr)
}

func poolPath(name string) string { return "/v1/node/pool/" + url.PathEscape(name) }

// indentJSON writes the server's answer indented.
func indentJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "    "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}

func nodePoolList(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node pool list", nodePoolUsage, stdout, stderr)
	asJSON := c.flags.Bool("json", false, "print the server's JSON")
	if !c.parse(args, 0, 0) {
		return exitError
	}
	var pools []nodePoolJSON
	raw, err := c.conn.call(http.MethodGet, "/v1/node/pools", nil, &pools)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if err := indentJSON(stdout, raw); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Name\tDescription")
	for _, p := range pools {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Description)
	}
	tw.Flush()
	return exitOK
}

func nodePoolInfo(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node pool info", nodePoolUsage, stdout, stderr)
	asJSON := c.flags.Bool("json", false, "print the server's JSON")
	if !c.parse(args, 1, 1) {
		return exitError
	}
	var p nodePoolJSON
	raw, err := c.conn.call(http.MethodGet, poolPath(c.flags.Arg(0)), nil, &p)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if err := indentJSON(stdout, raw); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	kv(stdout, "Name", p.Name, "Description", orNone(p.Description))
	if len(p.Meta) > 0 {
		fmt.Fprintln(stdout, "\nMetadata")
		keys := make([]string, 0, len(p.Meta))
		for k := range p.Meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		pairs := []string{}
		for _, k := range keys {
			pairs = append(pairs, k, p.Meta[k])
		}
		kv(stdout, pairs...)
	}
	if sc := p.SchedulerConfiguration; sc != nil {
		fmt.Fprintln(stdout, "\nScheduler Configuration")
		over := "<none>"
		if sc.MemoryOversubscriptionEnabled != nil {
			over = fmt.Sprint(*sc.MemoryOversubscriptionEnabled)
		}
		kv(stdout, "Scheduler Algorithm", orNone(sc.SchedulerAlgorithm), "Memory Oversubscription Enabled", over)
	}
	return exitOK
}

var (
	hclPoolFields      = map[string]hclField{"description": {"Description", "string"}}
	hclPoolSchedFields = map[string]hclField{
		"scheduler_algorithm": {"SchedulerAlgorithm", "string"}, "memory_oversubscription_enabled": {"MemoryOversubscriptionEnabled", "bool"},
	}
)

// parsePoolFile reads a pool from HCL (one node_pool block, as Nomad's
// node pool apply takes) or JSON (the API's NodePool object).
func parsePoolFile(name string, src []byte) (map[string]any, error) {
	if trimmed := bytes.TrimSpace(src); len(trimmed) > 0 && trimmed[0] == '{' {
		var out map[string]any
		if err := json.Unmarshal(src, &out); err != nil {
			return nil, fmt.Errorf("Error parsing node pool file %s: %v", name, err)
		}
		return out, nil
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, fmt.Errorf("Error parsing node pool file %s: %s", name, diags.Error())
	}
	body := f.Body.(*hclsyntax.Body)
	for _, a := range body.Attributes {
		return nil, hclErr(a.SrcRange, "unsupported top-level attribute %q: only a node_pool block is supported", a.Name)
	}
	if len(body.Blocks) != 1 || body.Blocks[0].Type != "node_pool" {
		return nil, fmt.Errorf("Error parsing node pool file %s: exactly one node_pool block is needed", name)
	}
	b := body.Blocks[0]
	poolName, err := oneLabel(b)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"Name": poolName}
	if err := hclAttrs(b.Body, hclPoolFields, out); err != nil {
		return nil, err
	}
	for _, sub := range b.Body.Blocks {
		switch sub.Type {
		case "meta":
			if out["Meta"], err = hclMap(sub); err != nil {
				return nil, err
			}
		case "scheduler_config":
			if out["SchedulerConfiguration"], err = hclSimpleBlock(sub, hclPoolSchedFields); err != nil {
				return nil, err
			}
		default:
			return nil, hclErr(sub.TypeRange, "unsupported block %q in node_pool", sub.Type)
		}
	}
	return out, nil
}

func nodePoolApply(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node pool apply", nodePoolUsage, stdout, stderr)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	file := c.flags.Arg(0)
	var src []byte
	var err error
	if file == "-" {
		src, err = io.ReadAll(aclStdin)
	} else {
		src, err = os.ReadFile(file)
	}
	if err != nil {
		return c.fail(err)
	}
	pool, err := parsePoolFile(file, src)
	if err != nil {
		return c.fail(err)
	}
	if _, err := c.conn.call(http.MethodPut, "/v1/node/pools", pool, nil); err != nil {
		return c.fail(err)
	}
	c.out("Successfully applied node pool %q!\n", pool["Name"])
	return exitOK
}

func nodePoolDelete(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node pool delete", nodePoolUsage, stdout, stderr)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	name := c.flags.Arg(0)
	if _, err := c.conn.call(http.MethodDelete, poolPath(name), nil, nil); err != nil {
		return c.fail(err)
	}
	c.out("Successfully deleted node pool %q!\n", name)
	return exitOK
}

func nodePoolNodes(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node pool nodes", nodePoolUsage, stdout, stderr)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	var nodes []struct{ ID, Name, Datacenter, NodePool, Status, SchedulingEligibility string }
	if _, err := c.conn.call(http.MethodGet, poolPath(c.flags.Arg(0))+"/nodes", nil, &nodes); err != nil {
		return c.fail(err)
	}
	if len(nodes) == 0 {
		c.out("No nodes\n")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNode Pool\tDC\tName\tEligibility\tStatus")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", short(n.ID), n.NodePool, n.Datacenter, n.Name, n.SchedulingEligibility, n.Status)
	}
	tw.Flush()
	return exitOK
}

func nodePoolJobs(args []string, stdout, stderr io.Writer) int {
	c := newNomadCmd("node pool jobs", nodePoolUsage, stdout, stderr)
	ns := c.flags.String("namespace", "", `the jobs' namespace ("*": every namespace the token may read)`)
	if !c.parse(args, 1, 1) {
		return exitError
	}
	path := poolPath(c.flags.Arg(0)) + "/jobs"
	if *ns != "" {
		path += "?namespace=" + url.QueryEscape(*ns)
	}
	var jobs []struct{ ID, Namespace, Type, Status string }
	if _, err := c.conn.call(http.MethodGet, path, nil, &jobs); err != nil {
		return c.fail(err)
	}
	if len(jobs) == 0 {
		c.out("No jobs\n")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNamespace\tType\tStatus")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.ID, j.Namespace, j.Type, j.Status)
	}
	tw.Flush()
	return exitOK
}
