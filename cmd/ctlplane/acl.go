package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
)

const aclUsage = `Usage: ctlplane acl <command> [flags]

Commands:
  bootstrap      mint the first management token (works once per cluster)
  policy         create | list | read | update | delete
  token          create | list | read | update | delete
  role           create | list | read | update | delete
  auth-method    create | list | read | update | delete | explain
  binding-rule   create | list | read | update | delete

Every command takes -address (env CTLPLANE_HTTP_ADDR) and -token (env
CTLPLANE_TOKEN); all but delete take -format=pretty|json (json prints the
server's answer). "ctlplane acl <object> <command> -h" lists a command's flags.
`

// aclObjects maps "acl <object>" to its usage and commands.
var aclObjects = map[string]struct {
	usage    string
	commands map[string]func(*aclCmd, []string) int
}{
	"policy":       {policyUsage, policyCommands},
	"token":        {tokenUsage, tokenCommands},
	"role":         {roleUsage, roleCommands},
	"auth-method":  {authMethodUsage, authMethodCommands},
	"binding-rule": {bindingRuleUsage, bindingRuleCommands},
}

// aclStdin is where `-rules=-` and `-config=-` read from (tests replace it).
var aclStdin io.Reader = os.Stdin

func runACL(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, aclUsage)
		return 1
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, aclUsage)
		return 0
	case "bootstrap":
		c := newACLCmd("acl bootstrap", "Usage: ctlplane acl bootstrap [-format=pretty|json]\n", true, stdout, stderr)
		if !c.parse(args[1:]) {
			return 1
		}
		_, err := request(c, http.MethodPut, "/v1/acl/bootstrap", nil, prettyToken)
		return c.done(err)
	}
	obj, ok := aclObjects[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "unknown acl command %q\n\n%s", args[0], aclUsage)
		return 1
	}
	if len(args) < 2 {
		fmt.Fprint(stderr, obj.usage)
		return 1
	}
	cmd, ok := obj.commands[args[1]]
	if !ok {
		fmt.Fprintf(stderr, "unknown acl %s command %q\n\n%s", args[0], args[1], obj.usage)
		return 1
	}
	c := newACLCmd("acl "+args[0]+" "+args[1], obj.usage, args[1] != "delete", stdout, stderr)
	return cmd(c, args[2:])
}

// aclCmd is one ACL client command: its flags, client and output.
type aclCmd struct {
	flags          *flag.FlagSet
	client         *apiClient
	format         string
	usage          string
	set            map[string]bool
	stdout, stderr io.Writer
}

func newACLCmd(name, usage string, withFormat bool, stdout, stderr io.Writer) *aclCmd {
	c := &aclCmd{flags: flag.NewFlagSet(name, flag.ContinueOnError), usage: usage, stdout: stdout, stderr: stderr, format: "pretty"}
	c.flags.SetOutput(stderr)
	c.client = clientFlags(c.flags)
	if withFormat {
		c.flags.StringVar(&c.format, "format", "pretty", "output format: pretty or json (the server's JSON)")
	}
	return c
}

// parse parses the flags; false means a usage error was reported.
func (c *aclCmd) parse(args []string) bool {
	if err := c.flags.Parse(args); err != nil {
		return false
	}
	if c.flags.NArg() > 0 {
		c.usageError(fmt.Sprintf("unexpected arguments: %v", c.flags.Args()))
		return false
	}
	if c.format != "pretty" && c.format != "json" {
		c.usageError(fmt.Sprintf("invalid -format %q: use pretty or json", c.format))
		return false
	}
	c.set = map[string]bool{}
	c.flags.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	return true
}

// usageError reports a bad command line and returns the exit code 1.
func (c *aclCmd) usageError(msg string) int {
	fmt.Fprintf(c.stderr, "Error: %s\n\n%s", msg, c.usage)
	return 1
}

// done turns the command's outcome into its exit code.
func (c *aclCmd) done(err error) int {
	if err != nil {
		fmt.Fprintf(c.stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// httpError is a non-200 answer: "<status> <server message>".
type httpError struct {
	Status int
	Msg    string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Msg) }

// call sends in (nil for no body) as JSON and returns the answer's body,
// decoded into out when out is not nil. A non-200 answer is an *httpError.
func (c *apiClient) call(method, path string, in, out any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(method, path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &httpError{Status: resp.StatusCode, Msg: strings.TrimSpace(string(raw))}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("bad answer from the server: %w", err)
		}
	}
	return raw, nil
}

// fetch reads one object without printing it.
func fetch[T any](c *aclCmd, path string) (*T, error) {
	var out T
	_, err := c.client.call(http.MethodGet, path, nil, &out)
	return &out, err
}

// request sends body as JSON, decodes the answer into a T and prints it:
// the server's JSON with -format=json, else pretty's key/value block.
func request[T any](c *aclCmd, method, path string, body any, pretty func(*kvWriter, *T)) (*T, error) {
	var out T
	raw, err := c.client.call(method, path, body, &out)
	if err != nil {
		return nil, err
	}
	if c.format == "json" {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "    "); err != nil {
			return nil, err
		}
		buf.WriteByte('\n')
		_, err = buf.WriteTo(c.stdout)
		return &out, err
	}
	kv := &kvWriter{out: c.stdout, tw: tabwriter.NewWriter(c.stdout, 0, 4, 1, ' ', 0)}
	pretty(kv, &out)
	return &out, kv.tw.Flush()
}

// each prints a list as blocks separated by blank lines.
func each[T any](pretty func(*kvWriter, *T)) func(*kvWriter, *[]T) {
	return func(kv *kvWriter, list *[]T) {
		for i := range *list {
			if i > 0 {
				kv.line("")
			}
			pretty(kv, &(*list)[i])
		}
	}
}

// kvWriter writes an object as aligned "Key:  value" lines.
type kvWriter struct {
	out io.Writer
	tw  *tabwriter.Writer
}

func (k *kvWriter) field(name string, v any) { fmt.Fprintf(k.tw, "%s:\t%v\n", name, v) }

// fieldIf writes a field only when its value is not empty.
func (k *kvWriter) fieldIf(name, v string) {
	if v != "" {
		k.field(name, v)
	}
}

func (k *kvWriter) line(s string) { fmt.Fprintln(k.tw, s) }

// list writes a heading and one indented line per item, nothing when empty.
func (k *kvWriter) list(name string, items []string) {
	if len(items) == 0 {
		return
	}
	k.line(name + ":")
	for _, it := range items {
		k.line("   " + it)
	}
}

// text writes a heading and a block of text as it is (it may hold tabs).
func (k *kvWriter) text(name, body string) {
	if body == "" {
		return
	}
	k.tw.Flush()
	fmt.Fprintf(k.out, "%s:\n%s\n", name, strings.TrimRight(body, "\n"))
}

// readValue returns a flag's value, the content of FILE for "@FILE", or
// standard input for "-".
func readValue(v string) (string, error) {
	switch {
	case v == "-":
		b, err := io.ReadAll(aclStdin)
		return string(b), err
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		return string(b), err
	}
	return v, nil
}
