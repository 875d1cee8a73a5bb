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
	lru "github.com/hashicorp/golang-lru"
	"github.com/hashicorp/hil"
	"github.com/hashicorp/hil/ast"
)

var (
	serviceNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$`)
	roleNameRE    = regexp.MustCompile(`^[A-Za-z0-9\-_]{1,256}$`)
)

// ValidName says whether a computed name is allowed for the bind type.
func ValidName(bindType, name string) bool {
	switch bindType {
	case state.BindTypeService, state.BindTypeNode:
		return len(name) <= 256 && serviceNameRE.MatchString(name)
	case state.BindTypeRole:
		return roleNameRE.MatchString(name)
	}
	return false
}

// ValidateFields checks Selector, BindType and BindName of a rule
// without knowing its auth method: every interpolation is rendered as
// "fake" and the result must be a valid name for the bind type. The error
// texts are the ones users of the upstream service know.
func ValidateFields(selector, bindType, bindName string) error {
	// Clients write many rules with the same fields: parsing the selector
	// and the template again each time was most of a create's CPU.
	key := selector + "\x00" + bindType + "\x00" + bindName
	if len(key) > maxMemoKey {
		return validateFields(selector, bindType, bindName)
	}
	if v, ok := validated.Get(key); ok {
		err, _ := v.(error)
		return err
	}
	err := validateFields(selector, bindType, bindName)
	validated.Add(key, err)
	return err
}

// validated memoizes ValidateFields (it is pure) for short fields.
var validated = mustLRU(4096)

// maxMemoKey bounds what the memo keeps: 4096 entries of 1 KiB at most.
const maxMemoKey = 1024

func mustLRU(size int) *lru.Cache {
	c, err := lru.New(size)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return c
}

func validateFields(selector, bindType, bindName string) error {
	if err := CheckSelectorSize("Selector", selector); err != nil {
		return fmt.Errorf("Invalid Binding Rule: %v", err)
	}
	if err := CheckTemplateSize(bindName); err != nil {
		return fmt.Errorf("Invalid Binding Rule: %v", err)
	}
	if selector != "" {
		tree, err := ParseSelector("Selector", selector)
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
	if _, err := ComputeBindName(bindType, bindName, nil); err != nil {
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
	name, err := renderTemplate(bindName, vars)
	if err != nil {
		return "", fmt.Errorf("failed to validate bindType %q: error interpreting template: %v", bindType, err)
	}
	if !ValidName(bindType, name) {
		return "", fmt.Errorf("failed to validate bindType %q: invalid bind name: %q", bindType, name)
	}
	return name, nil
}

func renderTemplate(tmpl string, vars map[string]string) (string, error) {
	if !strings.Contains(tmpl, "${") {
		return tmpl, nil
	}
	// Every caller is protected, not only rule validation: hil.Parse
	// recursion is not bounded by anything else.
	if err := CheckTemplateSize(tmpl); err != nil {
		return "", err
	}
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
