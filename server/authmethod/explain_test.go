package authmethod

import (
	"testing"
)

func TestExplainSelector(t *testing.T) {
	c := ruleConfig(t)
	id, err := c.IdentityFromClaimsJSON([]byte(`{"sub":"db","org":{"id":7},"groups":["dev","ops"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if id.Values["name"] != "db" || id.Values["org"] != "7" || len(id.Lists["groups"]) != 2 {
		t.Fatalf("projected identity: %+v", id)
	}
	cases := []struct {
		sel     string
		matched bool
		reason  string
	}{
		{``, true, ReasonNoSelector},
		{`value.name == "db"`, true, ReasonSelectorMatched},
		{`value.name == "web"`, false, `value.name == "web" is false: value.name is "db"`},
		{`value.name == web and "dev" in list.groups`, false, `value.name == "web" is false: value.name is "db"`},
		{`value.name == "db" and "admin" in list.groups and value.org != "7"`, false,
			`"admin" in list.groups is false: list.groups is ["dev","ops"]; value.org != "7" is false: value.org is "7"`},
		{`value.name == "web" or value.name == "api"`, false,
			`no alternative holds: value.name == "web" is false: value.name is "db"; value.name == "api" is false: value.name is "db"`},
		{`value.name == "db" and (value.org == "1" or "root" in list.groups)`, false,
			`no alternative holds: value.org == "1" is false: value.org is "7"; "root" in list.groups is false: list.groups is ["dev","ops"]`},
		{`not (value.name == "db")`, false, `not (value.name == "db") is false: value.name == "db" is true`},
		{`value["name"] matches "^w"`, false, `value.name matches "^w" is false: value.name is "db"`},
		{`list.groups is empty`, false, `list.groups is empty is false: list.groups is ["dev","ops"]`},
		{`all list.groups as g { g != "ops" }`, false, `all list.groups as g { g != "ops" } is false: list.groups is ["dev","ops"]`},
		{"value.name == `/x\"y`", false, "value.name == `/x\"y` is false: value.name is \"db\""},
	}
	for _, tc := range cases {
		matched, reason := ExplainSelector(tc.sel, id)
		if matched != tc.matched || reason != tc.reason {
			t.Errorf("%s:\n got %v %q\nwant %v %q", tc.sel, matched, reason, tc.matched, tc.reason)
		}
	}
}

func TestIdentityFromClaimsJSONErrors(t *testing.T) {
	c := ruleConfig(t)
	for raw, want := range map[string]string{
		`[1]`:              "claims must be a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}",
		`null`:             "claims must be a JSON object, not null",
		`{"sub":{"a":1}}`:  "error converting claim 'sub' to string from unknown type map[string]interface {}",
		`{"groups":[{}]}`:  `value map[] in "groups" list claim could not be parsed as string`,
		`{"sub":1.9e0}`:    "",
		`{"groups":"one"}`: "",
	} {
		_, err := c.IdentityFromClaimsJSON([]byte(raw))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", raw, got, want)
		}
	}
}
