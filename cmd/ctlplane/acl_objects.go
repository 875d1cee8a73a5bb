package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// The ACL objects' commands. create and update share one function per
// object: update reads the object first and changes only what a flag gives.

// pathOf is the path of an object selected by -id, else by -name.
func pathOf(kind, id, name string) (string, bool) {
	switch {
	case id != "":
		return "/v1/acl/" + kind + "/" + url.PathEscape(id), true
	case name != "":
		return "/v1/acl/" + kind + "/name/" + url.PathEscape(name), true
	}
	return "", false
}

// namedObjectCommands are the commands of an object kind that is read and
// deleted by -id or -name (policies and roles).
func namedObjectCommands[T any](kind, title, listPath string, idOf func(*T) string, pretty func(*kvWriter, *T),
	create, update func(*aclCmd, []string) int) map[string]func(*aclCmd, []string) int {
	selector := func(c *aclCmd, args []string) (path, id, name string, code int) {
		idFlag := c.flags.String("id", "", "ID of the "+kind)
		nameFlag := c.flags.String("name", "", "name of the "+kind)
		if !c.parse(args) {
			return "", "", "", 1
		}
		path, ok := pathOf(kind, *idFlag, *nameFlag)
		if !ok {
			return "", "", "", c.usageError("-id or -name is required")
		}
		return path, *idFlag, *nameFlag, -1
	}
	return map[string]func(*aclCmd, []string) int{
		"create": create,
		"update": update,
		"list": func(c *aclCmd, args []string) int {
			if !c.parse(args) {
				return 1
			}
			_, err := request(c, http.MethodGet, listPath, nil, each(pretty))
			return c.done(err)
		},
		"read": func(c *aclCmd, args []string) int {
			path, _, _, code := selector(c, args)
			if code >= 0 {
				return code
			}
			_, err := request(c, http.MethodGet, path, nil, pretty)
			return c.done(err)
		},
		"delete": func(c *aclCmd, args []string) int {
			path, id, name, code := selector(c, args)
			if code >= 0 {
				return code
			}
			if id == "" {
				obj, err := fetch[T](c, path)
				if err != nil {
					return c.done(err)
				}
				path = "/v1/acl/" + kind + "/" + url.PathEscape(idOf(obj))
			}
			return c.done(deleted(c, title, firstOf(id, name), path))
		},
	}
}

// firstOf returns a if it is set, else b.
func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// deleted deletes an object and confirms it.
func deleted(c *aclCmd, what, shown, path string) error {
	if _, err := c.client.call(http.MethodDelete, path, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s %q deleted successfully\n", what, shown)
	return nil
}

// ---- policies

const policyUsage = `Usage: ctlplane acl policy <command> [flags]

  create -name=NAME [-description=TEXT] [-rules=RULES|@FILE|-] [-valid-datacenter=DC ...]
  list
  read   -id=ID | -name=NAME
  update -id=ID | -name=NAME  [-name=NEW with -id] [-description=TEXT] [-rules=...] [-valid-datacenter=DC ...]
  delete -id=ID | -name=NAME

-rules takes the rules (HCL or JSON) themselves, @FILE, or - for standard input.
`

var policyCommands = namedObjectCommands("policy", "Policy", "/v1/acl/policies",
	func(p *api.ACLPolicy) string { return p.ID }, prettyPolicy, policyWrite(false), policyWrite(true))

func policyWrite(update bool) func(*aclCmd, []string) int {
	return func(c *aclCmd, args []string) int {
		id := ""
		if update {
			c.flags.StringVar(&id, "id", "", "ID of the policy to update")
		}
		name := c.flags.String("name", "", "name of the policy (update: selects it when -id is not given, else renames it)")
		desc := c.flags.String("description", "", "description")
		rules := c.flags.String("rules", "", "rules in HCL or JSON: the text, @FILE, or - for standard input")
		var dcs stringList
		c.flags.Var(&dcs, "valid-datacenter", "datacenter the policy is valid in; repeatable")
		if !c.parse(args) {
			return 1
		}
		p, path := &api.ACLPolicy{}, "/v1/acl/policy"
		if update {
			sel, ok := pathOf("policy", id, *name)
			if !ok {
				return c.usageError("-id or -name is required")
			}
			var err error
			if p, err = fetch[api.ACLPolicy](c, sel); err != nil {
				return c.done(err)
			}
			path += "/" + url.PathEscape(p.ID)
		} else if *name == "" {
			return c.usageError("-name is required")
		}
		if c.set["name"] {
			p.Name = *name
		}
		if c.set["description"] {
			p.Description = *desc
		}
		if c.set["rules"] {
			text, err := readValue(*rules)
			if err != nil {
				return c.done(err)
			}
			p.Rules = text
		}
		if c.set["valid-datacenter"] {
			p.Datacenters = dcs
		}
		_, err := request(c, http.MethodPut, path, p, prettyPolicy)
		return c.done(err)
	}
}

func prettyPolicy(kv *kvWriter, p *api.ACLPolicy) {
	kv.field("ID", p.ID)
	kv.field("Name", p.Name)
	kv.field("Description", p.Description)
	if len(p.Datacenters) > 0 {
		kv.field("Datacenters", strings.Join(p.Datacenters, ", "))
	}
	kv.text("Rules", p.Rules)
}

// ---- what tokens and roles grant

// grantFlags are the link and identity flags of tokens (policies, roles,
// identities) and roles (policies, identities).
type grantFlags struct {
	policyNames, policyIDs, roleNames, roleIDs, services, nodes stringList
}

func addGrantFlags(c *aclCmd, withRoles bool) *grantFlags {
	g := &grantFlags{}
	c.flags.Var(&g.policyNames, "policy-name", "name of a policy to link; repeatable")
	c.flags.Var(&g.policyIDs, "policy-id", "ID of a policy to link; repeatable")
	if withRoles {
		c.flags.Var(&g.roleNames, "role-name", "name of a role to link; repeatable")
		c.flags.Var(&g.roleIDs, "role-id", "ID of a role to link; repeatable")
	}
	c.flags.Var(&g.services, "service-identity", "service identity NAME or NAME:DC1,DC2; repeatable")
	c.flags.Var(&g.nodes, "node-identity", "node identity NAME:DC; repeatable")
	return g
}

// apply replaces each kind of grant whose flags were given (roles may be
// nil for a role). A bad identity flag is a usage error.
func (g *grantFlags) apply(c *aclCmd, policies, roles *[]api.ACLLink, services *[]*api.ACLServiceIdentity, nodes *[]*api.ACLNodeIdentity) error {
	if c.set["policy-name"] || c.set["policy-id"] {
		*policies = links(g.policyIDs, g.policyNames)
	}
	if roles != nil && (c.set["role-name"] || c.set["role-id"]) {
		*roles = links(g.roleIDs, g.roleNames)
	}
	if c.set["service-identity"] {
		*services = nil
		for _, s := range g.services {
			name, dcs, _ := strings.Cut(s, ":")
			if name == "" {
				return fmt.Errorf("invalid -service-identity %q: use NAME or NAME:DC1,DC2", s)
			}
			si := &api.ACLServiceIdentity{ServiceName: name}
			if dcs != "" {
				si.Datacenters = strings.Split(dcs, ",")
			}
			*services = append(*services, si)
		}
	}
	if c.set["node-identity"] {
		*nodes = nil
		for _, s := range g.nodes {
			name, dc, _ := strings.Cut(s, ":")
			if name == "" || dc == "" {
				return fmt.Errorf("invalid -node-identity %q: use NAME:DATACENTER", s)
			}
			*nodes = append(*nodes, &api.ACLNodeIdentity{NodeName: name, Datacenter: dc})
		}
	}
	return nil
}

func links(ids, names []string) []api.ACLLink {
	var out []api.ACLLink
	for _, id := range ids {
		out = append(out, api.ACLLink{ID: id})
	}
	for _, n := range names {
		out = append(out, api.ACLLink{Name: n})
	}
	return out
}

func linkLines(ls []api.ACLLink) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID + " - " + l.Name
	}
	return out
}

func identityLines(services []*api.ACLServiceIdentity, nodes []*api.ACLNodeIdentity) (s, n []string) {
	for _, si := range services {
		dcs := "all"
		if len(si.Datacenters) > 0 {
			dcs = strings.Join(si.Datacenters, ", ")
		}
		s = append(s, fmt.Sprintf("%s (Datacenters: %s)", si.ServiceName, dcs))
	}
	for _, ni := range nodes {
		n = append(n, fmt.Sprintf("%s (Datacenter: %s)", ni.NodeName, ni.Datacenter))
	}
	return s, n
}

// ---- tokens

const tokenUsage = `Usage: ctlplane acl token <command> [flags]

  create [-description=TEXT] [-policy-name=NAME ...] [-policy-id=ID ...]
         [-role-name=NAME ...] [-role-id=ID ...]
         [-service-identity=NAME[:DC1,DC2] ...] [-node-identity=NAME:DC ...]
         [-expires-ttl=DURATION] [-local] [-accessor=UUID] [-secret=UUID]
  list
  read   -id=ACCESSOR | -self
  update -id=ACCESSOR [-description=TEXT] [-policy-name|-policy-id|-role-name|-role-id|
         -service-identity|-node-identity ...]   (the kinds given replace the token's)
  delete -id=ACCESSOR
`

var tokenCommands = map[string]func(*aclCmd, []string) int{
	"create": tokenWrite(false),
	"update": tokenWrite(true),
	"list": func(c *aclCmd, args []string) int {
		if !c.parse(args) {
			return 1
		}
		_, err := request(c, http.MethodGet, "/v1/acl/tokens", nil, each(prettyToken))
		return c.done(err)
	},
	"read": func(c *aclCmd, args []string) int {
		id := c.flags.String("id", "", "AccessorID of the token")
		self := c.flags.Bool("self", false, "read the token the request is made with")
		if !c.parse(args) {
			return 1
		}
		path := "/v1/acl/token/self"
		switch {
		case *self && *id != "":
			return c.usageError("use one of -id and -self")
		case *id != "":
			path = "/v1/acl/token/" + url.PathEscape(*id)
		case !*self:
			return c.usageError("-id or -self is required")
		}
		_, err := request(c, http.MethodGet, path, nil, prettyToken)
		return c.done(err)
	},
	"delete": func(c *aclCmd, args []string) int {
		id := c.flags.String("id", "", "AccessorID of the token")
		if !c.parse(args) {
			return 1
		}
		if *id == "" {
			return c.usageError("-id is required")
		}
		return c.done(deleted(c, "Token", *id, "/v1/acl/token/"+url.PathEscape(*id)))
	},
}

func tokenWrite(update bool) func(*aclCmd, []string) int {
	return func(c *aclCmd, args []string) int {
		var id string
		if update {
			c.flags.StringVar(&id, "id", "", "AccessorID of the token to update")
		}
		desc := c.flags.String("description", "", "description")
		g := addGrantFlags(c, true)
		var ttl time.Duration
		var local bool
		var accessor, secret string
		if !update {
			c.flags.DurationVar(&ttl, "expires-ttl", 0, "time until the token expires (e.g. 1h; at least 1m, at most 24h)")
			c.flags.BoolVar(&local, "local", false, "make the token local to this datacenter")
			c.flags.StringVar(&accessor, "accessor", "", "AccessorID to give the token (a UUID; default: generated)")
			c.flags.StringVar(&secret, "secret", "", "SecretID to give the token (a UUID; default: generated)")
		}
		if !c.parse(args) {
			return 1
		}
		t, path := &api.ACLToken{}, "/v1/acl/token"
		if update {
			if id == "" {
				return c.usageError("-id is required")
			}
			var err error
			if t, err = fetch[api.ACLToken](c, "/v1/acl/token/"+url.PathEscape(id)); err != nil {
				return c.done(err)
			}
			path += "/" + url.PathEscape(t.AccessorID)
			t.SecretID = "" // it cannot change; it may have been shown as <hidden>
		} else {
			t.AccessorID, t.SecretID, t.Local, t.ExpirationTTL = accessor, secret, local, ttl
		}
		if c.set["description"] {
			t.Description = *desc
		}
		if err := g.apply(c, &t.Policies, &t.Roles, &t.ServiceIdentities, &t.NodeIdentities); err != nil {
			return c.usageError(err.Error())
		}
		_, err := request(c, http.MethodPut, path, t, prettyToken)
		return c.done(err)
	}
}

func prettyToken(kv *kvWriter, t *api.ACLToken) {
	kv.field("AccessorID", t.AccessorID)
	kv.field("SecretID", t.SecretID)
	kv.field("Description", t.Description)
	kv.fieldIf("Namespace", t.Namespace)
	kv.field("Local", t.Local)
	kv.fieldIf("Auth Method", t.AuthMethod)
	kv.field("Create Time", t.CreateTime.Format(time.RFC3339))
	if t.ExpirationTime != nil {
		kv.field("Expiration Time", t.ExpirationTime.Format(time.RFC3339))
	}
	kv.list("Policies", linkLines(t.Policies))
	kv.list("Roles", linkLines(t.Roles))
	services, nodes := identityLines(t.ServiceIdentities, t.NodeIdentities)
	kv.list("Service Identities", services)
	kv.list("Node Identities", nodes)
}

// ---- roles

const roleUsage = `Usage: ctlplane acl role <command> [flags]

  create -name=NAME [-description=TEXT] [-policy-name=NAME ...] [-policy-id=ID ...]
         [-service-identity=NAME[:DC1,DC2] ...] [-node-identity=NAME:DC ...]
  list
  read   -id=ID | -name=NAME
  update -id=ID | -name=NAME  [-name=NEW with -id] [-description=TEXT]
         [-policy-name|-policy-id|-service-identity|-node-identity ...]   (the kinds given replace the role's)
  delete -id=ID | -name=NAME
`

var roleCommands = namedObjectCommands("role", "Role", "/v1/acl/roles",
	func(r *api.ACLRole) string { return r.ID }, prettyRole, roleWrite(false), roleWrite(true))

func roleWrite(update bool) func(*aclCmd, []string) int {
	return func(c *aclCmd, args []string) int {
		id := ""
		if update {
			c.flags.StringVar(&id, "id", "", "ID of the role to update")
		}
		name := c.flags.String("name", "", "name of the role (update: selects it when -id is not given, else renames it)")
		desc := c.flags.String("description", "", "description")
		g := addGrantFlags(c, false)
		if !c.parse(args) {
			return 1
		}
		r, path := &api.ACLRole{}, "/v1/acl/role"
		if update {
			sel, ok := pathOf("role", id, *name)
			if !ok {
				return c.usageError("-id or -name is required")
			}
			var err error
			if r, err = fetch[api.ACLRole](c, sel); err != nil {
				return c.done(err)
			}
			path += "/" + url.PathEscape(r.ID)
		} else if *name == "" {
			return c.usageError("-name is required")
		}
		if c.set["name"] {
			r.Name = *name
		}
		if c.set["description"] {
			r.Description = *desc
		}
		if err := g.apply(c, &r.Policies, nil, &r.ServiceIdentities, &r.NodeIdentities); err != nil {
			return c.usageError(err.Error())
		}
		_, err := request(c, http.MethodPut, path, r, prettyRole)
		return c.done(err)
	}
}

func prettyRole(kv *kvWriter, r *api.ACLRole) {
	kv.field("ID", r.ID)
	kv.field("Name", r.Name)
	kv.field("Description", r.Description)
	kv.list("Policies", linkLines(r.Policies))
	services, nodes := identityLines(r.ServiceIdentities, r.NodeIdentities)
	kv.list("Service Identities", services)
	kv.list("Node Identities", nodes)
}
