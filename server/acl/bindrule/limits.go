package bindrule

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-bexpr/grammar"
)

// Input bounds for selectors (binding rules and list filters) and BindName
// templates (README, Security). Both parsers recurse once per nesting
// level: hil.Parse overflows the goroutine stack (a fatal error, not a
// panic) on a few hundred thousand levels, and go-bexpr's grammar, which
// backtracks without memoizing, does about four times the work for every
// level of parentheses. So the depth is checked by a cheap scan before
// anything is parsed, and the parse itself has a budget.
const (
	// MaxSelectorLength bounds a Selector or filter, in bytes.
	MaxSelectorLength = 4096
	// MaxSelectorNesting bounds how deeply a selector nests parentheses
	// and brackets: at 5 levels the worst shape costs ~0.5M parser steps.
	MaxSelectorNesting = 5
	// SelectorParseBudget is the most parser steps one selector may take
	// (go-bexpr's own default is 2M, ~75 MB); a 4 KiB selector of plain
	// comparisons takes ~65k.
	SelectorParseBudget = 500_000
	// MaxBindNameLength bounds a BindName template, in bytes.
	MaxBindNameLength = 1024
	// MaxTemplateNesting bounds how deeply a template nests ${ }, ( and [.
	MaxTemplateNesting = 32
)

// NestingDepth returns how deeply s nests (, [ and { ("${" is one level).
// A closer counts only when it matches the innermost opener. With quoted
// (go-bexpr selectors, whose strings do not nest) the insides of "..." and
// `...` strings are skipped; otherwise every bracket counts. Where the scan
// and a parser disagree the scan can only overstate the depth, except
// inside strings, and the length caps bound that case.
func NestingDepth(s string, quoted bool) int {
	var stack []byte
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && (c == '"' || c == '`'):
			i = skipString(s, i)
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
			depth = max(depth, len(stack))
		case c == ')' || c == ']' || c == '}':
			if n := len(stack); n > 0 && stack[n-1] == opener(c) {
				stack = stack[:n-1]
			}
		}
	}
	return depth
}

// skipString returns the index of the quote that closes the string opened
// at s[i] (len(s) when it is not closed); "..." strings have \ escapes.
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q:
			return i
		}
	}
	return i
}

func opener(closer byte) byte {
	switch closer {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}

// CheckSelectorSize refuses a selector (field names it in the message)
// longer or deeper than the caps, before it is parsed.
func CheckSelectorSize(field, selector string) error {
	if n := len(selector); n > MaxSelectorLength {
		return fmt.Errorf("%s is too long: %d bytes; the limit is %d", field, n, MaxSelectorLength)
	}
	if d := NestingDepth(selector, true); d > MaxSelectorNesting {
		return fmt.Errorf("%s nests parentheses or brackets %d levels deep; the limit is %d", field, d, MaxSelectorNesting)
	}
	return nil
}

// CheckTemplateSize refuses a BindName template longer or deeper than the
// caps, before it is parsed.
func CheckTemplateSize(template string) error {
	if n := len(template); n > MaxBindNameLength {
		return fmt.Errorf("BindName is too long: %d bytes; the limit is %d", n, MaxBindNameLength)
	}
	if d := NestingDepth(template, false); d > MaxTemplateNesting {
		return fmt.Errorf("BindName nests ${ }, parentheses or brackets %d levels deep; the limit is %d", d, MaxTemplateNesting)
	}
	return nil
}

// parseBudgetError rewrites go-bexpr's "max number of expressions parsed"
// into a message that says what to do.
func parseBudgetError(err error) error {
	if err != nil && strings.Contains(err.Error(), "max number of expressions parsed") {
		return fmt.Errorf("the expression is too complex: parsing it takes more than %d steps; use fewer nested parentheses or clauses", SelectorParseBudget)
	}
	return err
}

// ParseSelector parses a go-bexpr selector within the size caps and the
// parse budget (field names it in a size error). Parsing once is most of
// what validating a binding rule costs.
func ParseSelector(field, selector string) (grammar.Expression, error) {
	return parseSelector(field, selector, true)
}

// parseSelector is ParseSelector; simple=false leaves every selector to
// go-bexpr (the oracle of the differential fuzz test).
func parseSelector(field, selector string, simple bool) (grammar.Expression, error) {
	if err := CheckSelectorSize(field, selector); err != nil {
		return nil, err
	}
	if simple {
		if tree, ok := simpleSelector(selector); ok {
			return tree, nil
		}
	}
	return parseSelectorLib(selector)
}

// parseSelectorLib parses with go-bexpr, the definition of the syntax.
func parseSelectorLib(selector string) (grammar.Expression, error) {
	tree, err := grammar.Parse("", []byte(selector), grammar.MaxExpressions(SelectorParseBudget))
	if err != nil {
		return nil, parseBudgetError(err)
	}
	return tree.(grammar.Expression), nil
}

// NewEvaluator compiles a selector for evaluation (a login's binding rule,
// a list filter) within the size caps and the parse budget.
func NewEvaluator(field, selector string) (*bexpr.Evaluator, error) {
	if err := CheckSelectorSize(field, selector); err != nil {
		return nil, err
	}
	ev, err := bexpr.CreateEvaluator(selector, bexpr.WithMaxExpressions(SelectorParseBudget))
	if err != nil {
		return nil, parseBudgetError(err)
	}
	return ev, nil
}
