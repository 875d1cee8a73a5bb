// Package bindrule validates a binding rule's fields and renders its
// BindName: go-bexpr selector parsing and HIL templates. It is pure (no
// store, no clock), so that the service, the auth methods and explain share
// one definition of a valid rule.
package bindrule

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-bexpr/grammar"
	"github.com/hashicorp/hil"
	"github.com/hashicorp/hil/ast"
)

// ValidName says whether a computed name is allowed for the bind type.
func ValidName(bindType, name string) bool {
	switch bindType {
	case state.BindTypeService, state.BindTypeNode:
		return validServiceName(name)
	case state.BindTypeRole:
		return validRoleName(name)
	}
	return false
}

// ValidateFields checks Selector, BindType and BindName of a rule
// without knowing its auth method: every interpolation is rendered as
// "fake" and the result must be a valid name for the bind type. The error
// texts are the ones users of the upstream service know. Nothing is
// memoized: fields in the spec's grammar take a few microseconds (see
// simple.go), so a rule never seen before costs what a repeated one does.
func ValidateFields(selector, bindType, bindName string) error {
	return validateFields(selector, bindType, bindName, true)
}

// validateFields is ValidateFields; simple=false leaves every input to the
// libraries (the oracle of the differential fuzz test).
func validateFields(selector, bindType, bindName string, simple bool) error {
	if err := CheckSelectorSize("Selector", selector); err != nil {
		return fmt.Errorf("Invalid Binding Rule: %v", err)
	}
	if err := CheckTemplateSize(bindName); err != nil {
		return fmt.Errorf("Invalid Binding Rule: %v", err)
	}
	if selector != "" {
		tree, err := parseSelector("Selector", selector, simple)
		if err != nil {
			return fmt.Errorf("invalid Binding Rule: Selector is invalid: %v", err)
		}
		// go-bexpr compiles a "matches" regex only when it first evaluates
		// it; reject a bad one now, as upstream does, not at every login.
		if err := checkSelectorRegexps(tree); err != nil {
			return fmt.Errorf("invalid Binding Rule: Selector is invalid: %v", err)
		}
	}
	if bindType == "" {
		return fmt.Errorf("Invalid Binding Rule: no BindType is set")
	}
	if bindName == "" {
		return fmt.Errorf("Invalid Binding Rule: no BindName is set")
	}
	switch bindType {
	case state.BindTypeService, state.BindTypeNode, state.BindTypeRole:
	default:
		return fmt.Errorf("Invalid Binding Rule: unknown BindType %q", bindType)
	}
	if _, err := computeBindName(bindType, bindName, nil, simple); err != nil {
		return fmt.Errorf("Invalid Binding Rule: invalid BindName or BindVars: %v", err)
	}
	return nil
}

// checkSelectorRegexps compiles the regular expression of every (not)
// matches operator of a parsed selector.
func checkSelectorRegexps(e grammar.Expression) error {
	switch e := e.(type) {
	case *grammar.UnaryExpression:
		return checkSelectorRegexps(e.Operand)
	case *grammar.BinaryExpression:
		if err := checkSelectorRegexps(e.Left); err != nil {
			return err
		}
		return checkSelectorRegexps(e.Right)
	case *grammar.CollectionExpression:
		if e.Inner != nil {
			return checkSelectorRegexps(e.Inner)
		}
	case *grammar.MatchExpression:
		if (e.Operator == grammar.MatchMatches || e.Operator == grammar.MatchNotMatches) && e.Value != nil {
			if _, err := regexp.Compile(e.Value.Raw); err != nil {
				return fmt.Errorf("Failed to compile regular expression %q: %v", e.Value.Raw, err)
			}
		}
	}
	return nil
}

// ComputeBindName renders a BindName template with the given variables
// (lowercased, as login does) and checks the result against the bind type's
// name rule. With vars == nil every variable the template uses renders as
// "fake", which is how a rule is validated before any identity exists.
func ComputeBindName(bindType, bindName string, vars map[string]string) (string, error) {
	return computeBindName(bindType, bindName, vars, true)
}

func computeBindName(bindType, bindName string, vars map[string]string, simple bool) (string, error) {
	name, err := renderTemplate(bindName, vars, simple)
	if err != nil {
		return "", fmt.Errorf("failed to validate bindType %q: error interpreting template: %v", bindType, err)
	}
	if !ValidName(bindType, name) {
		return "", fmt.Errorf("failed to validate bindType %q: invalid bind name: %q", bindType, name)
	}
	return name, nil
}

func renderTemplate(tmpl string, vars map[string]string, simple bool) (string, error) {
	if !strings.Contains(tmpl, "${") {
		return tmpl, nil
	}
	// Every caller is protected, not only rule validation: hil.Parse
	// recursion is not bounded by anything else.
	if err := CheckTemplateSize(tmpl); err != nil {
		return "", err
	}
	if simple {
		if out, ok := renderSimple(tmpl, vars); ok {
			return out, nil
		}
	}
	return renderHIL(tmpl, vars)
}

// renderHIL renders a template with HIL, the definition of the syntax.
func renderHIL(tmpl string, vars map[string]string) (string, error) {
	tree, err := hil.Parse(tmpl)
	if err != nil {
		return "", err
	}
	varMap := map[string]ast.Variable{}
	if vars == nil {
		tree.Accept(func(n ast.Node) ast.Node {
			if v, ok := n.(*ast.VariableAccess); ok {
				varMap[v.Name] = ast.Variable{Type: ast.TypeString, Value: "fake"}
			}
			return n
		})
	} else {
		for k, v := range vars {
			varMap[k] = ast.Variable{Type: ast.TypeString, Value: strings.ToLower(v)}
		}
	}
	out, err := hil.Eval(tree, &hil.EvalConfig{GlobalScope: &ast.BasicScope{VarMap: varMap}})
	if err != nil {
		return "", err
	}
	if out.Type != hil.TypeString {
		return "", fmt.Errorf("template must render to a string, not %s", out.Type)
	}
	return out.Value.(string), nil
}
