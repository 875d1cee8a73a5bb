package bindrule

import (
	"strings"

	"github.com/hashicorp/go-bexpr/grammar"
)

// The spec's grammar for binding rules is small: a Selector compares
// identity fields with == and != joined by "and", a BindName is text with
// ${field.path} interpolations. go-bexpr's generated parser and HIL's
// channel-fed scanner cost ~100 µs for such inputs, most of a create's
// validation when every rule names its own service. The parsers here take
// that subset only, in one pass, and build what the libraries would; any
// input they are not sure of (or that is an error) goes to the library,
// which stays the definition: FuzzSimpleParsers checks that both give the
// same answers and messages.

// renderSimple renders tmpl as HIL would when tmpl is text without '$'
// and ${name} interpolations of a plain name (ASCII letter or _, then
// letters, digits, _, -, .), with vars as in renderTemplate. ok is false
// when tmpl is outside that subset or a variable is unknown: HIL decides.
func renderSimple(tmpl string, vars map[string]string) (string, bool) {
	var b strings.Builder
	b.Grow(len(tmpl) + 16)
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		if c != '$' {
			// HIL copies top-level text as it is, bytes included.
			j := strings.IndexByte(tmpl[i:], '$')
			if j < 0 {
				j = len(tmpl) - i
			}
			b.WriteString(tmpl[i : i+j])
			i += j
			continue
		}
		if i+1 >= len(tmpl) || tmpl[i+1] != '{' {
			return "", false // "$$" escapes and a lone '$' are HIL's
		}
		i = skipSpace(tmpl, i+2)
		start := i
		if i >= len(tmpl) || !(isLetter(tmpl[i]) || tmpl[i] == '_') {
			return "", false
		}
		for i < len(tmpl) && isHILNameByte(tmpl[i]) {
			i++
		}
		name := tmpl[start:i]
		i = skipSpace(tmpl, i)
		if i >= len(tmpl) || tmpl[i] != '}' || name == "true" || name == "false" {
			return "", false
		}
		i++
		if vars == nil {
			b.WriteString("fake")
			continue
		}
		v, ok := vars[name]
		if !ok {
			return "", false // HIL's "unknown variable accessed" message
		}
		b.WriteString(strings.ToLower(v))
	}
	return b.String(), true
}

// skipSpace skips what HIL counts as space inside ${ }.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// isHILNameByte: the ASCII bytes HIL's scanner keeps in an identifier
// ('*' aside, which is a splat).
func isHILNameByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '.'
}

// isBexprIdentByte: go-bexpr's Identifier after its first letter.
func isBexprIdentByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '/' }

// bexprKeywords are words with a meaning in go-bexpr's grammar: a path
// segment spelled so is left to the library rather than reasoned about.
var bexprKeywords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "is": true, "as": true, "any": true,
	"all": true, "empty": true, "nil": true, "contains": true, "matches": true,
}

// simpleSelector parses sel as go-bexpr would when sel is comparisons
// `path == value` or `path != value` joined by " and ", where a path is
// dotted identifiers and a value a path, a number or a "string" of
// printable ASCII without escapes. ok is false for anything else.
func simpleSelector(sel string) (grammar.Expression, bool) {
	p := selParser{s: sel}
	p.i = skipSpace(sel, 0)
	var clauses []*grammar.MatchExpression
	for {
		m, ok := p.match()
		if !ok {
			return nil, false
		}
		clauses = append(clauses, m)
		ws := p.i
		p.i = skipSpace(sel, p.i)
		if p.i == len(sel) {
			break
		}
		// " and " needs space on both sides, as go-bexpr's _ "and" _.
		if p.i == ws || !strings.HasPrefix(sel[p.i:], "and") {
			return nil, false
		}
		p.i += 3
		if next := skipSpace(sel, p.i); next == p.i {
			return nil, false
		} else {
			p.i = next
		}
	}
	// go-bexpr's AndExpression is right-recursive: a and (b and c).
	var expr grammar.Expression = clauses[len(clauses)-1]
	for k := len(clauses) - 2; k >= 0; k-- {
		expr = &grammar.BinaryExpression{Left: clauses[k], Operator: grammar.BinaryOpAnd, Right: expr}
	}
	return expr, true
}

type selParser struct {
	s string
	i int
}

func (p *selParser) match() (*grammar.MatchExpression, bool) {
	path, ok := p.path()
	if !ok {
		return nil, false
	}
	p.i = skipSpace(p.s, p.i)
	var op grammar.MatchOperator
	switch {
	case strings.HasPrefix(p.s[p.i:], "=="):
		op = grammar.MatchEqual
	case strings.HasPrefix(p.s[p.i:], "!="):
		op = grammar.MatchNotEqual
	default:
		return nil, false
	}
	p.i = skipSpace(p.s, p.i+2)
	raw, ok := p.value()
	if !ok {
		return nil, false
	}
	return &grammar.MatchExpression{
		Selector: grammar.Selector{Type: grammar.SelectorTypeBexpr, Path: path},
		Operator: op,
		Value:    &grammar.MatchValue{Raw: raw},
	}, true
}

// path reads identifier("." identifier)*.
func (p *selParser) path() ([]string, bool) {
	var path []string
	for {
		start := p.i
		if p.i >= len(p.s) || !isLetter(p.s[p.i]) {
			return nil, false
		}
		for p.i < len(p.s) && isBexprIdentByte(p.s[p.i]) {
			p.i++
		}
		seg := p.s[start:p.i]
		if bexprKeywords[seg] {
			return nil, false
		}
		path = append(path, seg)
		if p.i >= len(p.s) || p.s[p.i] != '.' {
			return path, true
		}
		p.i++
	}
}

// value reads a path, a number or a plain "string", and what follows it
// must be space or the end (go-bexpr's AfterNumbers, and what an and needs).
func (p *selParser) value() (string, bool) {
	if p.i >= len(p.s) {
		return "", false
	}
	var raw string
	switch c := p.s[p.i]; {
	case isLetter(c):
		path, ok := p.path()
		if !ok {
			return "", false
		}
		raw = strings.Join(path, ".")
	case c == '"':
		start := p.i + 1
		end := start
		for end < len(p.s) && p.s[end] != '"' {
			if b := p.s[end]; b < 0x20 || b > 0x7e || b == '\\' {
				return "", false
			}
			end++
		}
		if end >= len(p.s) {
			return "", false
		}
		raw = p.s[start:end]
		p.i = end + 1
	case c == '-' || isDigit(c):
		start := p.i
		if c == '-' {
			p.i++
		}
		if p.i >= len(p.s) || !isDigit(p.s[p.i]) {
			return "", false
		}
		if p.s[p.i] == '0' {
			p.i++
		} else {
			for p.i < len(p.s) && isDigit(p.s[p.i]) {
				p.i++
			}
		}
		if p.i < len(p.s) && p.s[p.i] == '.' {
			p.i++
			digits := p.i
			for p.i < len(p.s) && isDigit(p.s[p.i]) {
				p.i++
			}
			if p.i == digits {
				return "", false
			}
		}
		raw = p.s[start:p.i]
	default:
		return "", false
	}
	if p.i < len(p.s) && skipSpace(p.s, p.i) == p.i {
		return "", false
	}
	return raw, true
}

// validName is the bind type's name rule (ValidName's regular expressions,
// which the tests keep as the oracle) as byte loops.
func validServiceName(name string) bool {
	n := len(name)
	if n == 0 || n > 256 {
		return false
	}
	for i := 0; i < n; i++ {
		c := name[i]
		alnum := (c >= 'a' && c <= 'z') || isDigit(c)
		if !alnum && ((c != '-' && c != '_') || i == 0 || i == n-1) {
			return false
		}
	}
	return true
}

func validRoleName(name string) bool {
	n := len(name)
	if n == 0 || n > 256 {
		return false
	}
	for i := 0; i < n; i++ {
		if c := name[i]; !isLetter(c) && !isDigit(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
