package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
)

// explainUsage is the usage of `acl auth-method explain`.
const explainUsage = `Usage: ctlplane acl auth-method explain -name=NAME (-bearer-token-file=FILE | -claims-file=FILE) [-format=pretty|json]

  Shows what a login with the auth method would do, minting nothing: the
  variables the identity projects, every binding rule with whether it
  matched and why, and the token login would mint (or the error it would
  answer). -bearer-token-file holds a JWT, validated as login validates it;
  -claims-file holds the claims of a test identity as a JSON object. "-"
  reads standard input. Needs acl:write.
`

func init() { authMethodCommands["explain"] = authMethodExplain }

// explainAnswer is the server's answer to an explain.
type explainAnswer struct {
	AuthMethod    string
	ProjectedVars map[string]any
	Rules         []struct {
		ID, Description, BindType, BindName, Selector string
		Matched                                       bool
		Reason, BoundName                             string
	}
	Token *struct {
		Roles             []struct{ ID, Name string }
		ServiceIdentities []struct{ ServiceName string }
		NodeIdentities    []struct{ NodeName, Datacenter string }
		Policies          []struct{ ID, Name string }
		Local             bool
		ExpirationTTL     string
	}
	Error       string
	LoginStatus int
}

func authMethodExplain(c *aclCmd, args []string) int {
	c.usage = explainUsage
	name := c.flags.String("name", "", "name of the auth method")
	bearerFile := c.flags.String("bearer-token-file", "", "file holding a JWT to validate as login would (- for stdin)")
	claimsFile := c.flags.String("claims-file", "", "file holding a test identity's claims, a JSON object (- for stdin)")
	if !c.parse(args) {
		return 1
	}
	if *name == "" {
		return c.usageError("-name is required")
	}
	if (*bearerFile == "") == (*claimsFile == "") {
		return c.usageError("exactly one of -bearer-token-file and -claims-file is required")
	}
	body := map[string]any{}
	if *bearerFile != "" {
		b, err := readInputFile(*bearerFile)
		if err != nil {
			return c.done(err)
		}
		body["BearerToken"] = strings.TrimSpace(string(b))
	} else {
		b, err := readInputFile(*claimsFile)
		if err != nil {
			return c.done(err)
		}
		if !json.Valid(b) {
			return c.done(fmt.Errorf("%s does not hold JSON", *claimsFile))
		}
		body["Claims"] = json.RawMessage(b)
	}
	var out explainAnswer
	raw, err := c.client.call(http.MethodPost, authMethodPath(*name)+"/explain", body, &out)
	if err != nil {
		return c.done(err)
	}
	if c.format == "json" {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "    "); err != nil {
			return c.done(err)
		}
		buf.WriteByte('\n')
		_, err = buf.WriteTo(c.stdout)
		return c.done(err)
	}
	return c.done(printExplain(c.stdout, &out))
}

func readInputFile(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(aclStdin)
	}
	return os.ReadFile(name)
}

// printExplain prints an explain as a summary, the projected variables,
// a table of the rules and the token.
func printExplain(w io.Writer, ex *explainAnswer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Auth method:\t%s\n", ex.AuthMethod)
	if ex.Error != "" {
		fmt.Fprintf(tw, "Login:\trefused: %s\n", ex.Error)
	} else {
		fmt.Fprintf(tw, "Login:\twould mint the token below\n")
	}
	fmt.Fprintln(tw, "\nProjected variables:")
	names := make([]string, 0, len(ex.ProjectedVars))
	for k := range ex.ProjectedVars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, _ := json.Marshal(ex.ProjectedVars[k])
		fmt.Fprintf(tw, "   %s\t%s\n", k, v)
	}
	fmt.Fprintln(tw, "\nRules:")
	if len(ex.Rules) == 0 {
		fmt.Fprintln(tw, "   (the auth method has no binding rules)")
	} else {
		fmt.Fprintln(tw, "   ID\tBind Type\tBind Name\tMatched\tBound Name\tReason")
		for _, r := range ex.Rules {
			matched := "no"
			if r.Matched {
				matched = "yes"
			}
			bound := r.BoundName
			if bound == "" {
				bound = "-"
			}
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.BindType, r.BindName, matched, bound, r.Reason)
		}
	}
	if t := ex.Token; t != nil {
		fmt.Fprintln(tw, "\nToken:")
		var roles, policies, services, nodes []string
		for _, r := range t.Roles {
			roles = append(roles, r.Name)
		}
		for _, p := range t.Policies {
			policies = append(policies, p.Name)
		}
		for _, s := range t.ServiceIdentities {
			services = append(services, s.ServiceName)
		}
		for _, n := range t.NodeIdentities {
			nodes = append(nodes, n.NodeName+" ("+n.Datacenter+")")
		}
		fmt.Fprintf(tw, "   Roles:\t%s\n", joinedOrNone(roles))
		fmt.Fprintf(tw, "   Policies (through roles):\t%s\n", joinedOrNone(policies))
		fmt.Fprintf(tw, "   Service identities:\t%s\n", joinedOrNone(services))
		fmt.Fprintf(tw, "   Node identities:\t%s\n", joinedOrNone(nodes))
		fmt.Fprintf(tw, "   Local:\t%v\n", t.Local)
		ttl := t.ExpirationTTL
		if ttl == "" {
			ttl = "never expires"
		}
		fmt.Fprintf(tw, "   Expiration TTL:\t%s\n", ttl)
	}
	return tw.Flush()
}

func joinedOrNone(items []string) string {
	if len(items) == 0 {
		return "(none)"
	}
	return strings.Join(items, ", ")
}
