package bindrule

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-bexpr/grammar"
)

// The bind types' name rules as the design states them: the oracle of
// validServiceName and validRoleName.
var (
	serviceNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$`)
	roleNameRE    = regexp.MustCompile(`^[A-Za-z0-9\-_]{1,256}$`)
)

// sameAnswers fails t unless the simple parsers (with the libraries behind
// them) and the libraries alone answer the same for these inputs: the same
// selector tree or error text, the same rendered name or error text, the
// same ValidateFields verdict.
func sameAnswers(t *testing.T, selector, bindType, bindName string, vars map[string]string) {
	t.Helper()
	gotTree, gotErr := parseSelector("Selector", selector, true)
	wantTree, wantErr := parseSelector("Selector", selector, false)
	if errText(gotErr) != errText(wantErr) || !reflect.DeepEqual(gotTree, wantTree) {
		t.Fatalf("selector %q: simple %s %v, go-bexpr %s %v", selector, dump(gotTree), gotErr, dump(wantTree), wantErr)
	}
	for _, v := range []map[string]string{nil, vars} {
		got, gotErr := computeBindName(bindType, bindName, v, true)
		want, wantErr := computeBindName(bindType, bindName, v, false)
		if got != want || errText(gotErr) != errText(wantErr) {
			t.Fatalf("bind name %q (%s, vars %v): simple %q %v, HIL %q %v", bindName, bindType, v, got, gotErr, want, wantErr)
		}
	}
	got, want := validateFields(selector, bindType, bindName, true), validateFields(selector, bindType, bindName, false)
	if errText(got) != errText(want) {
		t.Fatalf("validateFields(%q, %q, %q): simple %v, libraries %v", selector, bindType, bindName, got, want)
	}
	if ValidName(bindType, bindName) != oracleValidName(bindType, bindName) {
		t.Fatalf("ValidName(%q, %q) = %v, the regular expression says otherwise", bindType, bindName, ValidName(bindType, bindName))
	}
}

func oracleValidName(bindType, name string) bool {
	switch bindType {
	case "service", "node":
		return len(name) <= 256 && serviceNameRE.MatchString(name)
	case "role":
		return roleNameRE.MatchString(name)
	}
	return false
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func dump(e grammar.Expression) string {
	if e == nil {
		return "<nil>"
	}
	var b strings.Builder
	e.ExpressionDump(&b, " ", 0)
	return b.String()
}

// simpleSeeds are inputs in, at the edge of, and outside the subset.
var simpleSeeds = []struct{ selector, bindName string }{
	{"value.team==a", "svc-${value.name}"},
	{"value.team == a", "svc1-${value.name}"},
	{`value.team != "a b"`, "${value.name}"},
	{"value.team == a and value.name != b", "${ value.name }-x"},
	{"value.team == a and value.name != b and value.x == -1.5", "${\tvalue.name\n}"},
	{"value.n == 0", "a${value.name}b${value.org}c"},
	{"value.n == 01", "$${value.name}"},
	{"value.n == 1.", "${value.name"},
	{"value.n == 1a", "${value.name}}"},
	{"value.n == -x", "${}"},
	{"a ==", "${"},
	{"a == b and", "$"},
	{"a == b andc == d", "x$"},
	{"a == b and\tc == d", "${true}"},
	{"a == b or c == d", "${false}-x"},
	{"not a == b", "${value.*.name}"},
	{"(a == b)", "${value.name[0]}"},
	{"a == b.c", "${1+1}"},
	{"a == b.0", "${_x}"},
	{"a.b/c == d/e", "${x-y.z}"},
	{"a == \"\"", "${é}"},
	{"a == \"x\\\"y\"", "web"},
	{"a == `x`", "Web-${x}"},
	{`"/a/b" == c`, "${upper(x)}"},
	{"a[\"b\"] == c", "${x}\x00"},
	{"a == b ", "\xff${x}"},
	{" a == b", "${x}\"}"},
	{"a == and", "${ x y }"},
	{"and == a", "${x.}"},
	{"a == b\nand c == d", "${x..y}"},
	{"a==b", "${9x}"},
	{"a=b", "${-x}"},
	{"a === b", strings.Repeat("a", 252) + "${x}"},
	{"a == b\x00", strings.Repeat("a", 253) + "${x}"},
	{"A9_/ == Z", "${A}"},
}

// Every seed, with every bind type: the simple parsers agree with the libraries.
func TestSimpleParsersAgree(t *testing.T) {
	for _, s := range simpleSeeds {
		for _, bt := range []string{"service", "node", "role", "policy"} {
			sameAnswers(t, s.selector, bt, s.bindName, map[string]string{"value.name": "Web", "x": "Y"})
		}
	}
	// The subset is taken by the simple parsers, not left to the libraries.
	for _, sel := range []string{"value.team==a", `a != "b c" and d == -1.5 and e.f == g`} {
		if _, ok := simpleSelector(sel); !ok {
			t.Errorf("simpleSelector(%q) left it to go-bexpr", sel)
		}
	}
	for _, tmpl := range []string{"svc1-${value.name}", "${ a }-${b.c-d}"} {
		if _, ok := renderSimple(tmpl, nil); !ok {
			t.Errorf("renderSimple(%q) left it to HIL", tmpl)
		}
	}
}

// FuzzSimpleParsers is the differential test of simple.go: on any input the
// simple parsers with the libraries behind them answer exactly as go-bexpr
// and HIL alone (same trees, names, and error messages).
func FuzzSimpleParsers(f *testing.F) {
	for _, s := range simpleSeeds {
		f.Add(s.selector, s.bindName, "service", "Web")
		f.Add(s.selector, s.bindName, "role", "ops team")
	}
	f.Fuzz(func(t *testing.T, selector, bindName, bindType, value string) {
		if len(selector) > 2*MaxSelectorLength || len(bindName) > 2*MaxBindNameLength {
			return
		}
		sameAnswers(t, selector, bindType, bindName, map[string]string{"value.name": value, "x": value, "value.org": strings.ToUpper(value)})
	})
}

// FuzzSimpleSubset builds inputs that are mostly in the subset from fuzzed
// parts (paths, values, spaces, literal text), so that the differential
// check runs where the simple parsers answer, not only where they defer.
func FuzzSimpleSubset(f *testing.F) {
	f.Add("value.team", "a", " ", uint8(0), "svc1-", "value.name", "-x")
	f.Add("a.b/c", `"x y"`, "\t", uint8(3), "", "x-y.z", "")
	f.Add("value.n", "-1.5", "", uint8(1), "Web", "_a", "\n")
	f.Fuzz(func(t *testing.T, path, value, space string, ops uint8, prefix, name, suffix string) {
		if len(path)+len(value)+len(space)+len(prefix)+len(name)+len(suffix) > 512 {
			return
		}
		op := []string{"==", "!="}[ops&1]
		clause := path + space + op + space + value
		sel := clause
		for range int(ops>>1) & 3 {
			sel += " and" + space + " " + clause
		}
		tmpl := prefix + "${" + space + name + space + "}" + suffix
		for _, bt := range []string{"service", "role"} {
			sameAnswers(t, sel, bt, tmpl, map[string]string{name: value, "value.name": value})
		}
	})
}

// BenchmarkValidateDistinct validates rules whose BindName was never seen
// (svc<N>-${value.name}, the load generator's headline load) as a create
// against a jwt method does: the rule's fields, then its selector and
// template again with the method's variables. simple: with simple.go;
// libraries: go-bexpr and HIL for every field (as before it).
func BenchmarkValidateDistinct(b *testing.B) {
	vars := map[string]string{"value.name": "fake", "value.team": "fake"}
	for _, simple := range []bool{true, false} {
		b.Run(map[bool]string{true: "simple", false: "libraries"}[simple], func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				name := "svc" + strconv.Itoa(n) + "-${value.name}"
				if err := validateFields("value.team==a", "service", name, simple); err != nil {
					b.Fatal(err)
				}
				if _, err := parseSelector("Selector", "value.team==a", simple); err != nil {
					b.Fatal(err)
				}
				if _, err := computeBindName("service", name, vars, simple); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
