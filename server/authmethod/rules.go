package authmethod

import (
	"errors"
	"fmt"

	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/hashicorp/go-bexpr/grammar"
)

// ValidateBindingRule checks a binding rule's Selector and BindName against
// the method's identity fields (design §3): a selector may only use the
// method's value.<target> and list.<target> fields, with operators that fit
// their types; BindName may only interpolate value.<target>. The rule's
// other checks (syntax, BindType, name rules) are bindrule.ValidateFields';
// this adds what needs the method. Error texts are upstream's.
func (c *Config) ValidateBindingRule(selector, bindType, bindName string) error {
	if selector != "" {
		if err := c.ValidateSelector(selector); err != nil {
			return fmt.Errorf("invalid Binding Rule: Selector is invalid: %v", err)
		}
	}
	if _, err := bindrule.ComputeBindName(bindType, bindName, blankVars(c)); err != nil {
		return fmt.Errorf("Invalid Binding Rule: invalid BindName or BindVars: %v", err)
	}
	return nil
}

// blankVars are the projected variables with upstream's fake value.
func blankVars(c *Config) map[string]string {
	vars := map[string]string{}
	for _, t := range c.ClaimMappings {
		vars["value."+t] = "fake"
	}
	return vars
}

// fieldKind is the type of a selectable field.
type fieldKind int

const (
	fieldString    fieldKind = iota // value.<t>, an element of list.<t>, a map key
	fieldList                       // list.<t>
	fieldStringMap                  // value
	fieldListMap                    // list
	fieldIndex                      // a list index in a collection expression
)

// operators allowed per field kind, as go-bexpr's type-checked validation
// allowed them (strings: no "is empty"; collections: no equality).
var kindOperators = map[fieldKind][]grammar.MatchOperator{
	fieldString: {grammar.MatchEqual, grammar.MatchNotEqual, grammar.MatchIn, grammar.MatchNotIn,
		grammar.MatchContains, grammar.MatchNotContains, grammar.MatchMatches, grammar.MatchNotMatches},
	fieldList: {grammar.MatchIsEmpty, grammar.MatchIsNotEmpty, grammar.MatchIn, grammar.MatchNotIn,
		grammar.MatchContains, grammar.MatchNotContains},
	fieldStringMap: {grammar.MatchIsEmpty, grammar.MatchIsNotEmpty, grammar.MatchIn, grammar.MatchNotIn,
		grammar.MatchContains, grammar.MatchNotContains},
	fieldIndex: {grammar.MatchEqual, grammar.MatchNotEqual},
}

func init() { kindOperators[fieldListMap] = kindOperators[fieldStringMap] }

// ValidateSelector parses a selector and checks that every field it uses
// is one of the method's identity fields, used with an operator that fits.
func (c *Config) ValidateSelector(selector string) error {
	tree, err := bindrule.ParseSelector("Selector", selector)
	if err != nil {
		return err
	}
	return c.checkExpr(tree, nil)
}

// local is a variable a collection expression binds.
type local struct {
	name string
	kind fieldKind
}

func (c *Config) checkExpr(e grammar.Expression, locals []local) error {
	switch e := e.(type) {
	case *grammar.UnaryExpression:
		return c.checkExpr(e.Operand, locals)
	case *grammar.BinaryExpression:
		if err := c.checkExpr(e.Left, locals); err != nil {
			return err
		}
		return c.checkExpr(e.Right, locals)
	case *grammar.MatchExpression:
		kind, err := c.fieldKind(e.Selector, locals)
		if err != nil {
			return err
		}
		if !operatorAllowed(kind, e.Operator) {
			return fmt.Errorf("Invalid match operator %q for selector %q", e.Operator.String(), e.Selector.String())
		}
		return nil
	case *grammar.CollectionExpression:
		kind, err := c.fieldKind(e.Selector, locals)
		if err != nil {
			return err
		}
		inner := append([]local(nil), locals...)
		b := e.NameBinding
		switch kind {
		case fieldList:
			// Default and Value bind an element, Index its position.
			inner = appendLocal(inner, b.Default, fieldString)
			inner = appendLocal(inner, b.Value, fieldString)
			inner = appendLocal(inner, b.Index, fieldIndex)
		case fieldStringMap, fieldListMap:
			elem := fieldString
			if kind == fieldListMap {
				elem = fieldList
			}
			inner = appendLocal(inner, b.Default, fieldString)
			inner = appendLocal(inner, b.Index, fieldString)
			inner = appendLocal(inner, b.Value, elem)
		default:
			return fmt.Errorf("%s is not a list or a map", e.Selector.String())
		}
		if e.Inner == nil {
			return nil
		}
		return c.checkExpr(e.Inner, inner)
	}
	return errors.New("invalid AST node")
}

func appendLocal(ls []local, name string, kind fieldKind) []local {
	if name == "" {
		return ls
	}
	return append(ls, local{name: name, kind: kind})
}

func operatorAllowed(kind fieldKind, op grammar.MatchOperator) bool {
	for _, o := range kindOperators[kind] {
		if o == op {
			return true
		}
	}
	return false
}

// fieldKind resolves a selector path to the kind of field it names.
func (c *Config) fieldKind(sel grammar.Selector, locals []local) (fieldKind, error) {
	path := sel.Path
	invalid := fmt.Errorf("Selector %q is not valid", sel.String())
	if len(path) == 0 {
		return 0, invalid
	}
	// The innermost binding of a name wins.
	for i := len(locals) - 1; i >= 0; i-- {
		if locals[i].name != path[0] {
			continue
		}
		if len(path) == 1 {
			return locals[i].kind, nil
		}
		return 0, invalid // a bound element or key has no fields
	}
	switch path[0] {
	case "value":
		if len(path) == 1 {
			return fieldStringMap, nil
		}
		if len(path) == 2 && hasTarget(c.ClaimMappings, path[1]) {
			return fieldString, nil
		}
	case "list":
		if len(path) == 1 {
			return fieldListMap, nil
		}
		if len(path) == 2 && hasTarget(c.ListClaimMappings, path[1]) {
			return fieldList, nil
		}
	}
	return 0, invalid
}

func hasTarget(m map[string]string, target string) bool {
	for _, t := range m {
		if t == target {
			return true
		}
	}
	return false
}

// Match evaluates a selector against an identity. An empty selector
// matches every identity. A fresh evaluator is made for every call: a
// go-bexpr evaluator must not be shared between goroutines.
func Match(selector string, id *Identity) (bool, error) {
	if selector == "" {
		return true, nil
	}
	eval, err := bindrule.NewEvaluator("Selector", selector)
	if err != nil {
		return false, err
	}
	return eval.Evaluate(id.SelectableData())
}
