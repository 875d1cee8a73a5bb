package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// The auth-method and binding-rule commands.

const authMethodUsage = `Usage: ctlplane acl auth-method <command> [flags]

  create -name=NAME -type=jwt [-display-name=TEXT] [-description=TEXT]
         [-max-token-ttl=DURATION] [-token-locality=local|global] [-config=JSON|@FILE|-]
  list
  read   -name=NAME
  update -name=NAME [-display-name=TEXT] [-description=TEXT] [-max-token-ttl=DURATION]
         [-token-locality=local|global] [-config=JSON|@FILE|-]
  delete -name=NAME
  explain -name=NAME (-bearer-token-file=FILE | -claims-file=FILE)
`

// authMethod is an auth method as sent and shown. MaxTokenTTL goes out as
// a duration string, as Consul's client sends it.
type authMethod struct {
	Name          string
	Type          string
	DisplayName   string         `json:",omitempty"`
	Description   string         `json:",omitempty"`
	MaxTokenTTL   jsonDuration   `json:",omitempty"`
	TokenLocality string         `json:",omitempty"`
	Config        map[string]any `json:",omitempty"`
	Namespace     string         `json:",omitempty"`
}

// jsonDuration is written as "1h0m0s" and read from a string or nanoseconds.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := time.ParseDuration(s)
		*d = jsonDuration(v)
		return err
	}
	var n int64
	err := json.Unmarshal(b, &n)
	*d = jsonDuration(n)
	return err
}

func authMethodPath(name string) string { return "/v1/acl/auth-method/" + url.PathEscape(name) }

var authMethodCommands = map[string]func(*aclCmd, []string) int{
	"create": authMethodWrite(false),
	"update": authMethodWrite(true),
	"list": func(c *aclCmd, args []string) int {
		if !c.parse(args) {
			return 1
		}
		_, err := request(c, http.MethodGet, "/v1/acl/auth-methods", nil, each(prettyAuthMethod))
		return c.done(err)
	},
	"read": func(c *aclCmd, args []string) int {
		name := c.flags.String("name", "", "name of the auth method")
		if !c.parse(args) {
			return 1
		}
		if *name == "" {
			return c.usageError("-name is required")
		}
		_, err := request(c, http.MethodGet, authMethodPath(*name), nil, prettyAuthMethod)
		return c.done(err)
	},
	"delete": func(c *aclCmd, args []string) int {
		name := c.flags.String("name", "", "name of the auth method")
		if !c.parse(args) {
			return 1
		}
		if *name == "" {
			return c.usageError("-name is required")
		}
		return c.done(deleted(c, "Auth method", *name, authMethodPath(*name)))
	},
}

func authMethodWrite(update bool) func(*aclCmd, []string) int {
	return func(c *aclCmd, args []string) int {
		name := c.flags.String("name", "", "name of the auth method")
		typ := ""
		if !update {
			c.flags.StringVar(&typ, "type", "", "type of the auth method: jwt")
		}
		display := c.flags.String("display-name", "", "name to show in UIs")
		desc := c.flags.String("description", "", "description")
		ttl := c.flags.Duration("max-token-ttl", 0, "longest lifetime of a token minted by login")
		locality := c.flags.String("token-locality", "", "kind of token login mints: local or global")
		config := c.flags.String("config", "", "configuration as JSON: the text, @FILE, or - for standard input")
		if !c.parse(args) {
			return 1
		}
		if *name == "" {
			return c.usageError("-name is required")
		}
		if !update && typ == "" {
			return c.usageError("-type is required")
		}
		m, path := &authMethod{Name: *name, Type: typ}, "/v1/acl/auth-method"
		if update {
			path = authMethodPath(*name)
			var err error
			if m, err = fetch[authMethod](c, path); err != nil {
				return c.done(err)
			}
		}
		if c.set["display-name"] {
			m.DisplayName = *display
		}
		if c.set["description"] {
			m.Description = *desc
		}
		if c.set["max-token-ttl"] {
			m.MaxTokenTTL = jsonDuration(*ttl)
		}
		if c.set["token-locality"] {
			m.TokenLocality = *locality
		}
		if c.set["config"] {
			text, err := readValue(*config)
			if err != nil {
				return c.done(err)
			}
			m.Config = nil
			if err := json.Unmarshal([]byte(text), &m.Config); err != nil {
				return c.done(fmt.Errorf("-config is not a JSON object: %w", err))
			}
		}
		_, err := request(c, http.MethodPut, path, m, prettyAuthMethod)
		return c.done(err)
	}
}

func prettyAuthMethod(kv *kvWriter, m *authMethod) {
	kv.field("Name", m.Name)
	kv.field("Type", m.Type)
	kv.field("DisplayName", m.DisplayName)
	kv.field("Description", m.Description)
	if m.MaxTokenTTL != 0 {
		kv.field("MaxTokenTTL", time.Duration(m.MaxTokenTTL))
	}
	kv.fieldIf("TokenLocality", m.TokenLocality)
	kv.fieldIf("Namespace", m.Namespace)
	if len(m.Config) > 0 {
		b, _ := json.MarshalIndent(m.Config, "", "  ")
		kv.text("Config", string(b))
	}
}

// ---- binding rules

const bindingRuleUsage = `Usage: ctlplane acl binding-rule <command> [flags]

  create -method=NAME -bind-type=service|node|role -bind-name=NAME [-selector=EXPR] [-description=TEXT]
  list   [-method=NAME]
  read   -id=ID
  update -id=ID [-bind-type=...] [-bind-name=...] [-selector=EXPR] [-description=TEXT]
  delete -id=ID
`

func bindingRulePath(id string) string { return "/v1/acl/binding-rule/" + url.PathEscape(id) }

var bindingRuleCommands = map[string]func(*aclCmd, []string) int{
	"create": bindingRuleWrite(false),
	"update": bindingRuleWrite(true),
	"list": func(c *aclCmd, args []string) int {
		method := c.flags.String("method", "", "list only the rules of this auth method")
		if !c.parse(args) {
			return 1
		}
		path := "/v1/acl/binding-rules"
		if *method != "" {
			path += "?authmethod=" + url.QueryEscape(*method)
		}
		_, err := request(c, http.MethodGet, path, nil, each(prettyBindingRule))
		return c.done(err)
	},
	"read": func(c *aclCmd, args []string) int {
		id := c.flags.String("id", "", "ID of the binding rule")
		if !c.parse(args) {
			return 1
		}
		if *id == "" {
			return c.usageError("-id is required")
		}
		_, err := request(c, http.MethodGet, bindingRulePath(*id), nil, prettyBindingRule)
		return c.done(err)
	},
	"delete": func(c *aclCmd, args []string) int {
		id := c.flags.String("id", "", "ID of the binding rule")
		if !c.parse(args) {
			return 1
		}
		if *id == "" {
			return c.usageError("-id is required")
		}
		return c.done(deleted(c, "Binding rule", *id, bindingRulePath(*id)))
	},
}

func bindingRuleWrite(update bool) func(*aclCmd, []string) int {
	return func(c *aclCmd, args []string) int {
		var id, method string
		if update {
			c.flags.StringVar(&id, "id", "", "ID of the binding rule to update")
		} else {
			c.flags.StringVar(&method, "method", "", "auth method the rule belongs to")
		}
		bindType := c.flags.String("bind-type", "", "what a matching login gets: service, node or role")
		bindName := c.flags.String("bind-name", "", "name to bind, may use ${...} interpolation")
		selector := c.flags.String("selector", "", "go-bexpr expression over the login's identity")
		desc := c.flags.String("description", "", "description")
		if !c.parse(args) {
			return 1
		}
		r, path := &api.BindingRule{AuthMethod: method}, "/v1/acl/binding-rule"
		if update {
			if id == "" {
				return c.usageError("-id is required")
			}
			path = bindingRulePath(id)
			var err error
			if r, err = fetch[api.BindingRule](c, path); err != nil {
				return c.done(err)
			}
		} else if method == "" || *bindType == "" || *bindName == "" {
			return c.usageError("-method, -bind-type and -bind-name are required")
		}
		if c.set["bind-type"] {
			r.BindType = *bindType
		}
		if c.set["bind-name"] {
			r.BindName = *bindName
		}
		if c.set["selector"] {
			r.Selector = *selector
		}
		if c.set["description"] {
			r.Description = *desc
		}
		_, err := request(c, http.MethodPut, path, r, prettyBindingRule)
		return c.done(err)
	}
}

func prettyBindingRule(kv *kvWriter, r *api.BindingRule) {
	kv.field("ID", r.ID)
	kv.field("AuthMethod", r.AuthMethod)
	kv.field("Description", r.Description)
	kv.field("BindType", r.BindType)
	kv.field("BindName", r.BindName)
	kv.field("Selector", r.Selector)
	kv.fieldIf("Namespace", r.Namespace)
}
