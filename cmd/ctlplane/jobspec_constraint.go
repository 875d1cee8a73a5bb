package main

import (
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// hclConstraintFields are a constraint block's arguments: attribute,
// operator, value, and Nomad's shorthands (distinct_hosts = true,
// distinct_property = "<attr>", and version/semver/regexp/set_contains =
// "<value>", each naming its operator).
var hclConstraintFields = map[string]hclField{
	"attribute": {"LTarget", "string"}, "operator": {"Operand", "string"}, "value": {"RTarget", "string"},
	"distinct_hosts": {"distinct_hosts", "bool"}, "distinct_property": {"distinct_property", "string"},
	"version": {"version", "string"}, "semver": {"semver", "string"}, "regexp": {"regexp", "string"},
	"set_contains": {"set_contains", "string"},
}

// hclConstraint converts a constraint block to Nomad's JSON constraint
// (operator "=" when none is given, as Nomad's jobspec).
func hclConstraint(b *hclsyntax.Block) (map[string]any, error) {
	raw, err := hclSimpleBlock(b, hclConstraintFields)
	if err != nil {
		return nil, err
	}
	c := map[string]any{"LTarget": raw["LTarget"], "RTarget": raw["RTarget"], "Operand": raw["Operand"]}
	for _, k := range []string{"LTarget", "RTarget", "Operand"} {
		if c[k] == nil {
			c[k] = ""
		}
	}
	if on, _ := raw["distinct_hosts"].(bool); on {
		c["Operand"] = "distinct_hosts"
	}
	if p, ok := raw["distinct_property"].(string); ok {
		c["Operand"], c["LTarget"] = "distinct_property", p
	}
	for _, op := range []string{"version", "semver", "regexp", "set_contains"} {
		if v, ok := raw[op].(string); ok {
			c["Operand"], c["RTarget"] = op, v
		}
	}
	if c["Operand"] == "" {
		c["Operand"] = "="
	}
	return c, nil
}

// hclAffinityFields are an affinity block's arguments.
var hclAffinityFields = map[string]hclField{
	"attribute": {"LTarget", "string"}, "operator": {"Operand", "string"}, "value": {"RTarget", "string"},
	"weight": {"Weight", "int"},
}

// appendAffinity adds an affinity block to out["Affinities"] (operator
// "=" when none is given; a missing weight takes Nomad's 50 on the server).
func appendAffinity(out map[string]any, b *hclsyntax.Block) error {
	a, err := hclSimpleBlock(b, hclAffinityFields)
	if err != nil {
		return err
	}
	if op, _ := a["Operand"].(string); op == "" {
		a["Operand"] = "="
	}
	list, _ := out["Affinities"].([]any)
	out["Affinities"] = append(list, a)
	return nil
}

// appendSpread adds a spread block (attribute, weight, target "VALUE" {
// percent = N } blocks) to out["Spreads"].
func appendSpread(out map[string]any, b *hclsyntax.Block) error {
	if err := noLabels(b); err != nil {
		return err
	}
	sp := map[string]any{}
	if err := hclAttrs(b.Body, map[string]hclField{"attribute": {"Attribute", "string"}, "weight": {"Weight", "int"}}, sp); err != nil {
		return err
	}
	var targets []any
	for _, t := range b.Body.Blocks {
		if t.Type != "target" {
			return hclErr(t.TypeRange, "unsupported block %q in spread", t.Type)
		}
		value, err := oneLabel(t)
		if err != nil {
			return err
		}
		if len(t.Body.Blocks) > 0 {
			return hclErr(t.Body.Blocks[0].TypeRange, "unsupported block %q in target", t.Body.Blocks[0].Type)
		}
		target := map[string]any{"Value": value}
		if err := hclAttrs(t.Body, map[string]hclField{"percent": {"Percent", "int"}}, target); err != nil {
			return err
		}
		targets = append(targets, target)
	}
	if targets != nil {
		sp["SpreadTarget"] = targets
	}
	list, _ := out["Spreads"].([]any)
	out["Spreads"] = append(list, sp)
	return nil
}

// appendConstraint adds a constraint block to out["Constraints"].
func appendConstraint(out map[string]any, b *hclsyntax.Block) error {
	c, err := hclConstraint(b)
	if err != nil {
		return err
	}
	list, _ := out["Constraints"].([]any)
	out["Constraints"] = append(list, c)
	return nil
}

// runtimeRoots are the interpolations Nomad resolves at placement or on
// the client (${attr.*}, ${meta.*}, ${node.*}, ${NOMAD_*}, ${env.*}): a
// job file keeps them as text.
func runtimeRoot(name string) bool {
	switch name {
	case "attr", "meta", "node", "env":
		return true
	}
	return strings.HasPrefix(name, "NOMAD_")
}

// keepRuntimeInterpolations replaces, in every attribute of body and its
// blocks, a string template whose interpolations are all runtime ones by
// its literal text, so that "${attr.kernel.name}" reaches the job as is.
func keepRuntimeInterpolations(body *hclsyntax.Body, src []byte) {
	for _, a := range body.Attributes {
		if s, ok := runtimeTemplate(a.Expr, src); ok {
			a.Expr = &hclsyntax.LiteralValueExpr{Val: cty.StringVal(s), SrcRange: a.Expr.Range()}
		}
		// And in list elements: args = ["${NOMAD_PORT_http}"].
		if tuple, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
			for i, e := range tuple.Exprs {
				if s, ok := runtimeTemplate(e, src); ok {
					tuple.Exprs[i] = &hclsyntax.LiteralValueExpr{Val: cty.StringVal(s), SrcRange: e.Range()}
				}
			}
		}
	}
	for _, b := range body.Blocks {
		keepRuntimeInterpolations(b.Body, src)
	}
}

var runtimeName = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

func runtimeTemplate(e hclsyntax.Expression, src []byte) (string, bool) {
	var parts []hclsyntax.Expression
	switch t := e.(type) {
	case *hclsyntax.TemplateExpr:
		parts = t.Parts
	case *hclsyntax.TemplateWrapExpr:
		parts = []hclsyntax.Expression{t.Wrapped}
	default:
		return "", false
	}
	if len(e.Variables()) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if lit, ok := p.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String {
			b.WriteString(lit.Val.AsString())
			continue
		}
		r := p.Range()
		if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
			return "", false
		}
		// The text itself: HCL reads attr.unique.network.ip-address as a
		// subtraction, Nomad as a name.
		raw := string(src[r.Start.Byte:r.End.Byte])
		root, _, _ := strings.Cut(raw, ".")
		if !runtimeName.MatchString(raw) || !runtimeRoot(root) {
			return "", false
		}
		b.WriteString("${" + raw + "}")
	}
	return b.String(), true
}
