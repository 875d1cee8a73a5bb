package authmethod

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/hashicorp/go-bexpr/grammar"
)

// Reasons a selector gives when it matches.
const (
	ReasonSelectorMatched = "selector matched"
	ReasonNoSelector      = "no selector: matches every login"
)

// IdentityFromClaimsJSON projects a test identity's claims (a JSON object,
// as the JWT's payload would carry them) through the method's
// ClaimMappings and ListClaimMappings exactly as a login projects a
// validated token's claims.
func (c *Config) IdentityFromClaimsJSON(raw []byte) (*Identity, error) {
	claims := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // as ValidateLogin decodes a token's payload
	if err := dec.Decode(&claims); err != nil {
		return nil, fmt.Errorf("claims must be a JSON object: %v", err)
	}
	if claims == nil {
		return nil, errors.New("claims must be a JSON object, not null")
	}
	return c.identityFromClaims(claims)
}

// ExplainSelector evaluates a selector against an identity as login does
// and says why: for a selector that does not match, which clauses are
// false and what the fields they test hold. The and/or terms are evaluated
// one by one (each printed back as go-bexpr text and evaluated on its own),
// so "a and b" that fails says which of a and b failed.
func ExplainSelector(selector string, id *Identity) (matched bool, reason string) {
	if selector == "" {
		return true, ReasonNoSelector
	}
	ok, err := Match(selector, id)
	switch {
	case err != nil:
		return false, fmt.Sprintf("selector could not be evaluated: %v", err)
	case ok:
		return true, ReasonSelectorMatched
	}
	tree, err := bindrule.ParseSelector("Selector", selector)
	if err != nil {
		return false, SkipSelector
	}
	// The clause texts are evaluated again: when the printed form does
	// not mean what the selector means, say only that it did not match.
	if whole, err := evalExpr(tree, id); err != nil || whole {
		return false, SkipSelector
	}
	reasons := falseClauses(tree, id)
	if len(reasons) == 0 {
		return false, SkipSelector
	}
	return false, strings.Join(reasons, "; ")
}

// falseClauses explains an expression known to be false.
func falseClauses(e grammar.Expression, id *Identity) []string {
	switch e := e.(type) {
	case *grammar.BinaryExpression:
		var out []string
		for _, term := range flatten(e, e.Operator) {
			ok, err := evalExpr(term, id)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%s could not be evaluated: %v", printExpr(term), err))
			case !ok:
				out = append(out, falseClauses(term, id)...)
			}
		}
		if e.Operator == grammar.BinaryOpOr && len(out) > 1 {
			return []string{"no alternative holds: " + strings.Join(out, "; ")}
		}
		return out
	case *grammar.UnaryExpression:
		return []string{fmt.Sprintf("%s is false: %s is true", printExpr(e), printExpr(e.Operand))}
	case *grammar.MatchExpression:
		return []string{fmt.Sprintf("%s is false: %s", printExpr(e), describeField(e.Selector, id))}
	case *grammar.CollectionExpression:
		return []string{fmt.Sprintf("%s is false: %s", printExpr(e), describeField(e.Selector, id))}
	}
	return nil
}

// flatten lists the terms of a chain of one binary operator
// (a and (b and c) is a, b, c).
func flatten(e grammar.Expression, op grammar.BinaryOperator) []grammar.Expression {
	b, ok := e.(*grammar.BinaryExpression)
	if !ok || b.Operator != op {
		return []grammar.Expression{e}
	}
	return append(flatten(b.Left, op), flatten(b.Right, op)...)
}

func evalExpr(e grammar.Expression, id *Identity) (bool, error) {
	text := printExpr(e)
	if text == "" {
		return false, errors.New("clause cannot be printed")
	}
	return Match(text, id)
}

// describeField says what an identity holds at a selector's path.
func describeField(sel grammar.Selector, id *Identity) string {
	name := printSelector(sel)
	if len(sel.Path) != 2 {
		return name + " is " + describeValue(id.SelectableData(), sel.Path)
	}
	switch sel.Path[0] {
	case "value":
		if v, ok := id.Values[sel.Path[1]]; ok {
			return fmt.Sprintf("%s is %s", name, strconv.Quote(v))
		}
	case "list":
		if l, ok := id.Lists[sel.Path[1]]; ok {
			if len(l) == 0 {
				return name + " is empty"
			}
			b, _ := json.Marshal(l)
			return fmt.Sprintf("%s is %s", name, b)
		}
	}
	return name + " is not a field of this auth method"
}

func describeValue(data map[string]any, path []string) string {
	if len(path) == 1 {
		if v, ok := data[path[0]]; ok {
			b, err := json.Marshal(v)
			if err == nil {
				return string(b)
			}
		}
	}
	return "not a field of this auth method"
}

var identRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_/]*$`)
var digitsRE = regexp.MustCompile(`^[0-9]+$`)

// printSelector prints a selector path as go-bexpr reads it.
func printSelector(sel grammar.Selector) string {
	if len(sel.Path) == 0 {
		return ""
	}
	if sel.Type == grammar.SelectorTypeJsonPointer {
		parts := make([]string, len(sel.Path))
		for i, p := range sel.Path {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
		}
		return `"/` + strings.Join(parts, "/") + `"`
	}
	var b strings.Builder
	b.WriteString(sel.Path[0])
	for _, p := range sel.Path[1:] {
		switch {
		case identRE.MatchString(p), digitsRE.MatchString(p):
			b.WriteString("." + p)
		default:
			b.WriteString("[" + printString(p) + "]")
		}
	}
	return b.String()
}

// printString quotes a literal so that go-bexpr reads it back as the same
// string: its double-quoted strings cannot hold a quote, and one that
// starts with "/" would be read as a JSON pointer.
func printString(s string) string {
	if (strings.Contains(s, `"`) || strings.HasPrefix(s, "/")) && !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

var matchOps = map[grammar.MatchOperator]string{
	grammar.MatchEqual: "==", grammar.MatchNotEqual: "!=",
	grammar.MatchContains: "contains", grammar.MatchNotContains: "not contains",
	grammar.MatchMatches: "matches", grammar.MatchNotMatches: "not matches",
	grammar.MatchIsEmpty: "is empty", grammar.MatchIsNotEmpty: "is not empty",
	grammar.MatchIsNil: "is nil", grammar.MatchIsNotNil: "is not nil",
	grammar.MatchIn: "in", grammar.MatchNotIn: "not in",
}

// printExpr prints a parsed selector back as go-bexpr text ("" when a
// node is of a kind it does not know).
func printExpr(e grammar.Expression) string {
	switch e := e.(type) {
	case *grammar.MatchExpression:
		sel, op := printSelector(e.Selector), matchOps[e.Operator]
		switch {
		case op == "" || sel == "":
			return ""
		case e.Operator == grammar.MatchIn || e.Operator == grammar.MatchNotIn:
			if e.Value == nil {
				return ""
			}
			return printString(e.Value.Raw) + " " + op + " " + sel
		case e.Value == nil:
			return sel + " " + op
		}
		return sel + " " + op + " " + printString(e.Value.Raw)
	case *grammar.UnaryExpression:
		inner := printExpr(e.Operand)
		if inner == "" {
			return ""
		}
		return "not (" + inner + ")"
	case *grammar.BinaryExpression:
		word := " and "
		if e.Operator == grammar.BinaryOpOr {
			word = " or "
		}
		terms := flatten(e, e.Operator)
		parts := make([]string, len(terms))
		for i, t := range terms {
			p := printExpr(t)
			if p == "" {
				return ""
			}
			if _, nested := t.(*grammar.BinaryExpression); nested {
				p = "(" + p + ")"
			}
			parts[i] = p
		}
		return strings.Join(parts, word)
	case *grammar.CollectionExpression:
		return printCollection(e)
	}
	return ""
}

func printCollection(e *grammar.CollectionExpression) string {
	op := "any"
	if e.Op == grammar.CollectionOpAll {
		op = "all"
	}
	b := e.NameBinding
	var names string
	switch b.Mode {
	case grammar.CollectionBindDefault:
		names = b.Default
	case grammar.CollectionBindIndex:
		names = b.Index + ", _"
	case grammar.CollectionBindValue:
		names = "_, " + b.Value
	case grammar.CollectionBindIndexAndValue:
		names = b.Index + ", " + b.Value
	default:
		return ""
	}
	inner := printExpr(e.Inner)
	sel := printSelector(e.Selector)
	if inner == "" || sel == "" {
		return ""
	}
	return fmt.Sprintf("%s %s as %s { %s }", op, sel, names, inner)
}
