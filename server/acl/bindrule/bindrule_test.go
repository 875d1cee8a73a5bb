package bindrule

import (
	"strings"
	"testing"
)

const (
	invalidName = "Invalid Binding Rule: invalid BindName or BindVars: "
	invalidSel  = "invalid Binding Rule: Selector is invalid: "
)

func TestValidateFields(t *testing.T) {
	long256 := strings.Repeat("a", 256)
	long257 := strings.Repeat("a", 257)
	tests := []struct {
		name                         string
		selector, bindType, bindName string
		want                         string // "" = valid
	}{
		// Required fields and bind types.
		{"plain service", "", "service", "web", ""},
		{"plain node", "", "node", "node-1", ""},
		{"plain role", "", "role", "Admins", ""},
		{"no bind type", "", "", "web", "Invalid Binding Rule: no BindType is set"},
		{"no bind name", "", "service", "", "Invalid Binding Rule: no BindName is set"},
		{"no bind type and no bind name", "", "", "", "Invalid Binding Rule: no BindType is set"},
		{"unknown bind type", "", "policy", "web", `Invalid Binding Rule: unknown BindType "policy"`},
		{"bind type is case-sensitive", "", "Service", "web", `Invalid Binding Rule: unknown BindType "Service"`},
		{"selector checked before bind type", "a ==", "", "", invalidSel + `1:5 (4): no match found, expected: "-", "0", "\"", "` + "`" + `", [ \t\r\n], [1-9] or [a-zA-Z]`},

		// Service and node names: lowercase only.
		{"service uppercase literal", "", "service", "Web", invalidName + `failed to validate bindType "service": invalid bind name: "Web"`},
		{"node uppercase literal", "", "node", "Node1", invalidName + `failed to validate bindType "node": invalid bind name: "Node1"`},
		{"service bad characters", "", "service", "-abc:", invalidName + `failed to validate bindType "service": invalid bind name: "-abc:"`},
		{"service leading dash", "", "service", "-web", invalidName + `failed to validate bindType "service": invalid bind name: "-web"`},
		{"service trailing underscore", "", "service", "web_", invalidName + `failed to validate bindType "service": invalid bind name: "web_"`},
		{"service inner dash and underscore", "", "service", "a-b_c9", ""},
		{"service single char", "", "service", "a", ""},
		{"service dot", "", "service", "a.b", invalidName + `failed to validate bindType "service": invalid bind name: "a.b"`},
		{"service 256 chars", "", "service", long256, ""},
		{"service 257 chars", "", "service", long257, invalidName + `failed to validate bindType "service": invalid bind name: "` + long257 + `"`},
		{"node 256 chars", "", "node", long256, ""},
		{"node 257 chars", "", "node", long257, invalidName + `failed to validate bindType "node": invalid bind name: "` + long257 + `"`},

		// Role names: uppercase allowed, edges may be - or _.
		{"role uppercase", "", "role", "Web", ""},
		{"role leading dash and underscore", "", "role", "-A_b-", ""},
		{"role 256 chars", "", "role", strings.Repeat("R", 256), ""},
		{"role 257 chars", "", "role", strings.Repeat("R", 257), invalidName + `failed to validate bindType "role": invalid bind name: "` + strings.Repeat("R", 257) + `"`},
		{"role space", "", "role", "a b", invalidName + `failed to validate bindType "role": invalid bind name: "a b"`},
		{"role colon", "", "role", "-abc:", invalidName + `failed to validate bindType "role": invalid bind name: "-abc:"`},

		// Templates: every variable renders as "fake".
		{"template service", "", "service", "k8s-${serviceaccount.name}", ""},
		{"template two variables", "", "service", "${value.team}-${value.env}", ""},
		{"template only a variable", "", "node", "${x}", ""},
		{"template role with uppercase literal", "", "role", "Team-${value.team}", ""},
		{"template service uppercase literal", "", "service", "K8s-${serviceaccount.name}", invalidName + `failed to validate bindType "service": invalid bind name: "K8s-fake"`},
		{"template renders too long", "", "service", strings.Repeat("a", 253) + "${x}", invalidName + `failed to validate bindType "service": invalid bind name: "` + strings.Repeat("a", 253) + `fake"`},
		{"template renders exactly 256", "", "service", strings.Repeat("a", 252) + "${x}", ""},
		{"template escaped", "", "service", "$${x}", invalidName + `failed to validate bindType "service": invalid bind name: "${x}"`},
		{"template arithmetic", "", "service", "n${1+1}", ""},
		{"mustache is not a template", "", "service", "k8s-{{ serviceaccount.name }}", invalidName + `failed to validate bindType "service": invalid bind name: "k8s-{{ serviceaccount.name }}"`},
		{"unknown function", "", "service", "method-${upper(serviceaccount.name)}", invalidName + `failed to validate bindType "service": error interpreting template: 1:10: unknown function called: upper`},
		{"unknown function at start", "", "service", "${upper(serviceaccount.name)}", invalidName + `failed to validate bindType "service": error interpreting template: 1:3: unknown function called: upper`},
		{"unterminated interpolation", "", "service", "method-${serviceaccount.name", invalidName + `failed to validate bindType "service": error interpreting template: parse error at 1:29: expected "}" but found end of string`},
		{"empty interpolation", "", "service", "${}", invalidName + `failed to validate bindType "service": error interpreting template: parse error at 1:3: expected expression but found "}"`},
		{"bare opener", "", "service", "${", invalidName + `failed to validate bindType "service": error interpreting template: parse error at 1:3: expected expression but found end of string`},
		{"bare opener role", "", "role", "${", invalidName + `failed to validate bindType "role": error interpreting template: parse error at 1:3: expected expression but found end of string`},
		{"bare opener node", "", "node", "${", invalidName + `failed to validate bindType "node": error interpreting template: parse error at 1:3: expected expression but found end of string`},

		// Selectors: the full go-bexpr grammar.
		{"selector ==", "serviceaccount.namespace == default", "service", "web", ""},
		{"selector !=", `serviceaccount.name != "admin"`, "service", "web", ""},
		{"selector and", "a == b and c != d", "service", "web", ""},
		{"selector or", "a == b or c == d", "service", "web", ""},
		{"selector not", "not a == b", "service", "web", ""},
		{"selector parentheses", "(a == b or c == d) and not (e != f)", "service", "web", ""},
		{"selector in", `"admins" in list.groups`, "service", "web", ""},
		{"selector not in", `"admins" not in list.groups`, "service", "web", ""},
		{"selector contains", `list.groups contains "admins"`, "service", "web", ""},
		{"selector not contains", `list.groups not contains admins`, "service", "web", ""},
		{"selector matches", `value.name matches "^web-[0-9]+$"`, "service", "web", ""},
		{"selector not matches", "value.name not matches `^db`", "service", "web", ""},
		{"selector is empty", "list.groups is empty", "service", "web", ""},
		{"selector is not empty", "list.groups is not empty", "service", "web", ""},
		{"selector map index", `value["first-name"] == bob`, "service", "web", ""},
		{"selector number", "value.n == 42", "service", "web", ""},
		{"selector raw string", "value.n == `x y`", "service", "web", ""},
		{"selector with template bind name", "value.team == dev", "service", "team-${value.team}", ""},
		{"selector no operator", "serviceaccount.name", "service", "web", invalidSel + `1:20 (19): no match found, expected: "!=", ".", "==", "[", [ \t\r\n] or [a-zA-Z0-9_/]`},
		{"selector unterminated string", `serviceaccount.name == "abc`, "service", "web", invalidSel + `1:28 (27): rule "string": Unterminated string literal`},
		{"selector unmatched parenthesis", "(serviceaccount.name==a", "service", "web", invalidSel + `1:24 (23): rule "grouping": Unmatched parentheses`},
		{"selector dangling and", "a == b and", "service", "web", invalidSel + `1:11 (10): no match found, expected: [ \t\r\n]`},
		{"selector bad regex", `value.name matches "["`, "service", "web", invalidSel + `Failed to compile regular expression "[": error parsing regexp: missing closing ]: ` + "`[`"},
		{"selector bad regex under not", `not (a == b or value.name not matches "a(")`, "service", "web", invalidSel + `Failed to compile regular expression "a(": error parsing regexp: missing closing ): ` + "`a(`"},
		{"selector collection any", `any list.groups as g { g matches "^adm" }`, "service", "web", ""},
		{"selector collection bad regex", `all list.groups as g { g == x or g matches "*" }`, "service", "web", invalidSel + `Failed to compile regular expression "*": error parsing regexp: missing argument to repetition operator: ` + "`*`"},
		{"selector double not bad regex", `not not a matches "("`, "service", "web", invalidSel + `Failed to compile regular expression "(": error parsing regexp: missing closing ): ` + "`(`"},
		{"selector error wins over bind name", "a ==", "service", "Web", invalidSel + `1:5 (4): no match found, expected: "-", "0", "\"", "` + "`" + `", [ \t\r\n], [1-9] or [a-zA-Z]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateFields(tc.selector, tc.bindType, tc.bindName)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("ValidateFields(%q, %q, %q)\n got: %q\nwant: %q", tc.selector, tc.bindType, tc.bindName, got, tc.want)
			}
		})
	}
}

func TestComputeBindName(t *testing.T) {
	tests := []struct {
		name               string
		bindType, bindName string
		vars               map[string]string
		want, wantErr      string
	}{
		{"plain, nil vars", "service", "web", nil, "web", ""},
		{"plain, vars unused", "service", "web", map[string]string{"x": "Y"}, "web", ""},
		{"fake when vars are nil", "service", "k8s-${serviceaccount.name}", nil, "k8s-fake", ""},
		{"fake for every variable", "node", "${a}-${b.c}", nil, "fake-fake", ""},
		{"values lowercased", "service", "k8s-${serviceaccount.name}", map[string]string{"serviceaccount.name": "Web-API"}, "k8s-web-api", ""},
		{"literal kept for role, value lowercased", "role", "Team-${value.team}", map[string]string{"value.team": "DevOps"}, "Team-devops", ""},
		{"literal not lowercased for service", "service", "Web-${x}", map[string]string{"x": "a"}, "", `failed to validate bindType "service": invalid bind name: "Web-a"`},
		{"two variables", "service", "${value.team}-${value.env}", map[string]string{"value.team": "Dev", "value.env": "PROD", "value.extra": "X"}, "dev-prod", ""},
		{"lowercased value still invalid", "service", "svc-${x}", map[string]string{"x": "A B"}, "", `failed to validate bindType "service": invalid bind name: "svc-a b"`},
		{"empty value makes an invalid name", "service", "${x}", map[string]string{"x": ""}, "", `failed to validate bindType "service": invalid bind name: ""`},
		{"unknown variable", "service", "method-${serviceaccount.bizarroname}", map[string]string{"serviceaccount.name": "a"}, "", `failed to validate bindType "service": error interpreting template: 1:10: unknown variable accessed: serviceaccount.bizarroname`},
		{"empty vars map is not nil", "service", "p-${x}", map[string]string{}, "", `failed to validate bindType "service": error interpreting template: 1:5: unknown variable accessed: x`},
		{"parse error", "role", "${", map[string]string{"x": "a"}, "", `failed to validate bindType "role": error interpreting template: parse error at 1:3: expected expression but found end of string`},
		{"unknown function", "node", "${upper(x)}", map[string]string{"x": "a"}, "", `failed to validate bindType "node": error interpreting template: 1:3: unknown function called: upper`},
		{"service 256 after render", "service", strings.Repeat("a", 255) + "${x}", map[string]string{"x": "B"}, strings.Repeat("a", 255) + "b", ""},
		{"service 257 after render", "service", strings.Repeat("a", 255) + "${x}", map[string]string{"x": "BC"}, "", `failed to validate bindType "service": invalid bind name: "` + strings.Repeat("a", 255) + `bc"`},
		{"role 257 after render", "role", strings.Repeat("A", 255) + "${x}", map[string]string{"x": "BC"}, "", `failed to validate bindType "role": invalid bind name: "` + strings.Repeat("A", 255) + `bc"`},
		{"unknown bind type", "policy", "web", nil, "", `failed to validate bindType "policy": invalid bind name: "web"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeBindName(tc.bindType, tc.bindName, tc.vars)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr {
				t.Fatalf("ComputeBindName(%q, %q, %v)\n got: %q, %q\nwant: %q, %q", tc.bindType, tc.bindName, tc.vars, got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}
