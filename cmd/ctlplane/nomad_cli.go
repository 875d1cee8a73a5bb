package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// Exit codes of the Nomad-style commands: 0 success, 1 an error (bad
// usage, a refused request), 2 a deployment or evaluation that failed.
const (
	exitOK     = 0
	exitError  = 1
	exitFailed = 2
)

// nomadCmd is one command of job, deployment, alloc or node: its flags,
// API client and output.
type nomadCmd struct {
	name           string
	usage          string
	flags          *flag.FlagSet
	conn           *apiClient
	api            *api.Client
	stdout, stderr io.Writer
}

func newNomadCmd(name, usage string, stdout, stderr io.Writer) *nomadCmd {
	c := &nomadCmd{name: name, usage: usage, flags: flag.NewFlagSet(name, flag.ContinueOnError), stdout: stdout, stderr: stderr}
	c.flags.SetOutput(stderr)
	c.flags.Usage = func() { fmt.Fprint(stderr, usage) }
	c.conn = clientFlags(c.flags)
	return c
}

// parse parses the flags and checks the positional count (min..max, max <
// 0: no limit); false means a usage error was reported.
func (c *nomadCmd) parse(args []string, minArgs, maxArgs int) bool {
	if err := c.flags.Parse(args); err != nil {
		return false
	}
	n := c.flags.NArg()
	if n < minArgs || (maxArgs >= 0 && n > maxArgs) {
		c.usageError(fmt.Sprintf("this command takes %s", argCount(minArgs, maxArgs)))
		return false
	}
	hc, err := c.conn.http()
	if err != nil {
		c.fail(err)
		return false
	}
	if c.api, err = api.NewClient(api.Config{Address: c.conn.address, Token: c.conn.token, HTTPClient: hc}); err != nil {
		c.fail(err)
		return false
	}
	return true
}

func argCount(lo, hi int) string {
	switch {
	case lo == hi && lo == 0:
		return "no arguments"
	case lo == hi && lo == 1:
		return "one argument"
	case lo == hi:
		return fmt.Sprintf("%d arguments", lo)
	case hi < 0:
		return fmt.Sprintf("at least %d arguments", lo)
	case lo == 0 && hi == 1:
		return "at most one argument"
	}
	return fmt.Sprintf("%d to %d arguments", lo, hi)
}

func (c *nomadCmd) usageError(msg string) int {
	fmt.Fprintf(c.stderr, "Error: %s\n\n%s", msg, c.usage)
	return exitError
}

// fail reports an error and returns exit code 1.
func (c *nomadCmd) fail(err error) int {
	fmt.Fprintf(c.stderr, "Error: %v\n", err)
	return exitError
}

func (c *nomadCmd) out(format string, args ...any) { fmt.Fprintf(c.stdout, format, args...) }

// ctx is the context of a command's requests.
func (c *nomadCmd) ctx() context.Context { return context.Background() }

// dispatch runs the subcommand named by args[0] from cmds.
func dispatch(group, usage string, cmds map[string]func([]string, io.Writer, io.Writer) int, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fn, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "unknown %s command %q\n\n%s", group, args[0], usage)
		return exitError
	}
	return fn(args[1:], stdout, stderr)
}

// evenPrefix is the part of an ID prefix the servers accept (an even
// number of hex digits); the rest is matched here.
func evenPrefix(p string) string {
	p = strings.ToLower(p)
	if len(strings.ReplaceAll(p, "-", ""))%2 == 1 {
		p = p[:strings.LastIndexFunc(p, func(r rune) bool { return r != '-' })]
	}
	return p
}

// isHexPrefix says whether s can be the prefix of a UUID.
func isHexPrefix(s string) bool {
	if s == "" || len(s) > 36 {
		return false
	}
	for _, r := range strings.ToLower(s) {
		if !strings.ContainsRune("0123456789abcdef-", r) {
			return false
		}
	}
	return true
}

// errAmbiguous lists the IDs a prefix matched.
type errAmbiguous struct {
	what, prefix string
	ids          []string
}

func (e *errAmbiguous) Error() string {
	sort.Strings(e.ids)
	return fmt.Sprintf("Prefix %q matched multiple %ss:\n  %s", e.prefix, e.what, strings.Join(e.ids, "\n  "))
}

// resolvePrefix picks the one ID of list (from a query by the even part
// of prefix) that starts with prefix.
func resolvePrefix(what, prefix string, ids []string) (string, error) {
	var match []string
	for _, id := range ids {
		if strings.HasPrefix(id, strings.ToLower(prefix)) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("No %s(s) with prefix or ID %q found", what, prefix)
	case 1:
		return match[0], nil
	}
	return "", &errAmbiguous{what: what, prefix: prefix, ids: match}
}

func (c *nomadCmd) deploymentID(prefix string) (string, error) {
	if !isHexPrefix(prefix) {
		return "", fmt.Errorf("Invalid deployment ID %q: an ID or a prefix of hex digits is needed", prefix)
	}
	list, _, err := c.api.Deployments(c.ctx(), &api.QueryOptions{Params: map[string]string{"prefix": evenPrefix(prefix), "namespace": "*"}})
	if err != nil {
		return "", err
	}
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.ID
	}
	return resolvePrefix("deployment", prefix, ids)
}

func (c *nomadCmd) allocID(prefix string) (string, error) {
	if !isHexPrefix(prefix) {
		return "", fmt.Errorf("Invalid allocation ID %q: an ID or a prefix of hex digits is needed", prefix)
	}
	list, _, err := c.api.Allocations(c.ctx(), &api.QueryOptions{Params: map[string]string{"prefix": evenPrefix(prefix), "namespace": "*"}})
	if err != nil {
		return "", err
	}
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.ID
	}
	return resolvePrefix("allocation", prefix, ids)
}

func (c *nomadCmd) nodeID(prefix string) (string, error) {
	if !isHexPrefix(prefix) {
		return "", fmt.Errorf("Invalid node ID %q: an ID or a prefix of hex digits is needed", prefix)
	}
	list, _, err := c.api.Nodes(c.ctx(), &api.QueryOptions{Params: map[string]string{"prefix": evenPrefix(prefix)}})
	if err != nil {
		return "", err
	}
	ids := make([]string, len(list))
	for i, n := range list {
		ids[i] = n.ID
	}
	return resolvePrefix("node", prefix, ids)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cols ...string) { fmt.Fprintln(t.tw, strings.Join(cols, "\t")) }
func (t *table) flush()             { t.tw.Flush() }

// kv writes "Key = value" lines, aligned, as Nomad's detail views.
func kv(w io.Writer, pairs ...string) {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s\t= %s\n", pairs[i], pairs[i+1])
	}
	tw.Flush()
}

// short is an ID's first 8 characters, as Nomad's tables show it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// stamp is a monitor line's time.
func stamp() string { return time.Now().UTC().Format(time.RFC3339) }

func fmtUnixNano(ns int64) string {
	if ns == 0 {
		return "<none>"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339)
}

// isTerminal says whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// notFound rewrites a 404 from the servers in Nomad's words.
func notFoundAs(err error, format string, args ...any) error {
	var apiErr *api.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == 404 {
		return fmt.Errorf(format, args...)
	}
	return err
}

func asAPIError(err error, target **api.Error) bool { return errors.As(err, target) }
