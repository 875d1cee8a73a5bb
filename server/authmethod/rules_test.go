package authmethod

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	jose "github.com/go-jose/go-jose/v4"
)

func ruleConfig(t testing.TB) *Config {
	return mustConfig(t, map[string]any{
		"JWTValidationPubKeys": []any{newKey(t, jose.EdDSA).pubPEM},
		"ClaimMappings":        map[string]any{"sub": "name", "/org/id": "org"},
		"ListClaimMappings":    map[string]any{"groups": "groups"},
	})
}

func TestValidateSelector(t *testing.T) {
	c := ruleConfig(t)
	valid := []string{
		`value.name == "web"`,
		`value["name"] != web`,
		`"admin" in list.groups`,
		`"adm" in value.name`,
		`list.groups contains "x"`,
		`list.groups is empty`,
		`list.groups is not empty and value.org matches "^e"`,
		`value.name not matches "x" or not (value.org == "a")`,
		`"name" in value`,
		`list is not empty`,
		`all list.groups as g { g != "root" }`,
		`any list.groups as i, g { i == 0 and g == "admin" }`,
		`any value as k, v { k == "name" and v == "x" }`,
		`any list as k, v { "admin" in v }`,
	}
	for _, sel := range valid {
		if err := c.ValidateSelector(sel); err != nil {
			t.Errorf("%s: %v", sel, err)
		}
	}
	invalid := map[string]string{
		`value.nope == "x"`:                      `Selector "value.nope" is not valid`,
		`list.name is empty`:                     `Selector "list.name" is not valid`,
		`value.groups == "x"`:                    `Selector "value.groups" is not valid`,
		`serviceaccount.name == "x"`:             `Selector "serviceaccount.name" is not valid`,
		`value.name.first == "x"`:                `Selector "value.name.first" is not valid`,
		`value == x`:                             `Invalid match operator "Equal" for selector "value"`,
		`value.name is empty`:                    `Invalid match operator "Is Empty" for selector "value.name"`,
		`list.groups == "admin"`:                 `Invalid match operator "Equal" for selector "list.groups"`,
		`list.groups matches "a"`:                `Invalid match operator "Matches" for selector "list.groups"`,
		`all value.name as c { c == "x" }`:       `value.name is not a list or a map`,
		`all list.groups as g { g.x == "y" }`:    `Selector "g.x" is not valid`,
		`all list.groups as g { h == "y" }`:      `Selector "h" is not valid`,
		`all list.groups as i, g { i is empty }`: `Invalid match operator "Is Empty" for selector "i"`,
		`value.name ==`:                          `1:14 (13): no match found, expected: "-", "0", "\"", "` + "`" + `", [ \t\r\n], [1-9] or [a-zA-Z]`,
	}
	for sel, want := range invalid {
		err := c.ValidateSelector(sel)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", sel, err, want)
		}
	}
}

func TestValidateBindingRule(t *testing.T) {
	c := ruleConfig(t)
	cases := []struct {
		selector, bindType, bindName, err string
	}{
		{`"admin" in list.groups`, "service", "svc-${value.name}", ""},
		{"", "role", "${value.org}-${value.name}", ""},
		{`value.x == "a"`, "service", "web", `invalid Binding Rule: Selector is invalid: Selector "value.x" is not valid`},
		{"", "service", "svc-${value.nope}", `Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": error interpreting template: 1:7: unknown variable accessed: value.nope`},
		{"", "node", "${list.groups}", `Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "node": error interpreting template: 1:3: unknown variable accessed: list.groups`},
	}
	for _, tc := range cases {
		err := c.ValidateBindingRule(tc.selector, tc.bindType, tc.bindName)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("(%q, %s, %q):\n got %q\nwant %q", tc.selector, tc.bindType, tc.bindName, got, tc.err)
		}
	}
	// A method without mappings has no fields at all.
	bare := mustConfig(t, map[string]any{"JWTValidationPubKeys": []any{newKey(t, jose.EdDSA).pubPEM}})
	if err := bare.ValidateBindingRule("", "service", "web-${value.name}"); err == nil {
		t.Error("a variable was accepted by a method that maps no claims")
	}
	if err := bare.ValidateBindingRule("", "service", "web"); err != nil {
		t.Errorf("a plain name: %v", err)
	}
}

func TestBind(t *testing.T) {
	c := ruleConfig(t)
	id, err := c.IdentityFromFields(map[string]any{"value.name": "Web_App", "value.org": "ENG", "list.groups": []any{"admin", "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	rules := []*state.BindingRule{
		{ID: "1", Selector: `"admin" in list.groups`, BindType: "service", BindName: "${value.name}"},
		{ID: "2", Selector: `"nobody" in list.groups`, BindType: "service", BindName: "never"},
		{ID: "3", BindType: "node", BindName: "node-${value.org}"},
		{ID: "4", BindType: "role", BindName: "ops-${value.org}"},
		{ID: "5", BindType: "role", BindName: "missing-role"},
		{ID: "6", BindType: "service", BindName: "${value.name}"}, // a duplicate
		{ID: "7", Selector: `value.name == "Web_App"`, BindType: "service", BindName: "x-${value.name}.y"},
		{ID: "8", Selector: `value.name.x == "a"`, BindType: "service", BindName: "z"},
		{ID: "9", BindType: "role", BindName: "OPS-eng"}, // same role, other case
	}
	roles := map[string]*state.ACLRole{"ops-eng": {ID: "role-1", Name: "ops-eng"}}
	b, err := Bind(id, rules, "dc7", func(name string) (*state.ACLRole, error) {
		for n, r := range roles {
			if equalFold(n, name) {
				return r, nil
			}
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantSvc := []*state.ACLServiceIdentity{{ServiceName: "web_app"}}
	if !reflect.DeepEqual(b.ServiceIdentities, wantSvc) {
		t.Errorf("service identities: %+v", b.ServiceIdentities)
	}
	if !reflect.DeepEqual(b.NodeIdentities, []*state.ACLNodeIdentity{{NodeName: "node-eng", Datacenter: "dc7"}}) {
		t.Errorf("node identities: %+v", b.NodeIdentities)
	}
	if !reflect.DeepEqual(b.Roles, []state.ACLLink{{ID: "role-1", Name: "ops-eng"}}) {
		t.Errorf("roles: %+v", b.Roles)
	}
	type verdict struct {
		matched bool
		name    string
		skip    string
	}
	want := []verdict{
		{true, "web_app", ""},
		{false, "", "selector did not match"},
		{true, "node-eng", ""},
		{true, "ops-eng", ""},
		{true, "missing-role", `role "missing-role" does not exist`},
		{true, "web_app", ""},
		{true, "", `bind name invalid: failed to validate bindType "service": invalid bind name: "x-web_app.y"`},
		{false, "", "selector did not match: error finding value in datum: /value/name/x: at part 2, invalid value kind: string"},
		{true, "OPS-eng", ""},
	}
	for i, v := range b.Verdicts {
		got := verdict{v.Matched, v.RenderedName, v.SkipReason}
		if got != want[i] {
			t.Errorf("rule %s: got %+v, want %+v", v.Rule.ID, got, want[i])
		}
		// NameErr (which makes login refuse) is set exactly for a matching
		// rule whose name did not render validly.
		if invalidName := strings.HasPrefix(v.SkipReason, "bind name invalid: "); (v.NameErr != nil) != invalidName ||
			(invalidName && "bind name invalid: "+v.NameErr.Error() != v.SkipReason) {
			t.Errorf("rule %s: NameErr %v with skip reason %q", v.Rule.ID, v.NameErr, v.SkipReason)
		}
	}
	if b.None() {
		t.Error("None with bindings")
	}

	// Nothing bound.
	b, err = Bind(id, rules[1:2], "dc1", nil)
	if err != nil || !b.None() {
		t.Errorf("no match: %+v %v", b, err)
	}
	// A failing role lookup fails the bind.
	boom := errors.New("boom")
	if _, err := Bind(id, rules[3:4], "dc1", func(string) (*state.ACLRole, error) { return nil, boom }); err != boom {
		t.Errorf("lookup failure: %v", err)
	}
}

func equalFold(a, b string) bool {
	return len(a) == len(b) && (a == b || lower(a) == lower(b))
}

func lower(s string) string {
	out := []byte(s)
	for i, c := range out {
		if 'A' <= c && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

// FuzzSelector compiles, validates and evaluates random selectors against a
// sample identity: none of it may panic.
func FuzzSelector(f *testing.F) {
	for _, s := range []string{
		`value.name == "web"`, `"admin" in list.groups`, `list.groups is empty`, `value.org matches "^e.*"`,
		`all list.groups as g { g != "x" }`, `any value as k, v { k == "name" }`, `not (value.name != a) or list is empty`,
		`value["name"] contains "w"`, `/list/groups/0 == "admin"`, `value.name.x == 1`, `(`, `${}`,
	} {
		f.Add(s)
	}
	c := mustConfig(f, map[string]any{
		"JWTValidationPubKeys": []any{newKey(f, jose.EdDSA).pubPEM},
		"ClaimMappings":        map[string]any{"sub": "name", "org": "org"},
		"ListClaimMappings":    map[string]any{"groups": "groups"},
	})
	id, err := c.IdentityFromFields(map[string]any{"value.name": "Web", "value.org": "eng", "list.groups": []any{"admin", "dev"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		if len(sel) > 512 {
			return
		}
		_ = c.ValidateSelector(sel)
		_, _ = Match(sel, id)
		_, _ = Match(sel, c.BlankIdentity())
	})
}
