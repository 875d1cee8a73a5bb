package bindrule

import (
	"strings"
	"testing"
)

func TestNestingDepth(t *testing.T) {
	for _, c := range []struct {
		s      string
		quoted bool
		want   int
	}{
		{"", false, 0},
		{"web", false, 0},
		{"${value.name}", false, 1},
		{"${lower(value.name)}-${value.x}", false, 2},
		{`a == "b" and (c == "d" or (e in f[0]))`, true, 3},
		// Strings of a selector do not count; a template's always do.
		{`a matches "((((((x))))))"`, true, 0},
		{`a matches "((((((x))))))"`, false, 6},
		{"a matches `(((((((`", true, 0},
		{`a == "\"((((" and (b == c)`, true, 1},
		// A closer counts only for its own opener.
		{"(]]]((", false, 3},
		{")))(((", false, 3},
		{strings.Repeat("(", 100) + strings.Repeat(")", 100), false, 100},
		// An unclosed string hides the rest; go-bexpr refuses it anyway.
		{`"((((`, true, 0},
	} {
		if got := NestingDepth(c.s, c.quoted); got != c.want {
			t.Errorf("NestingDepth(%q, %v) = %d, want %d", c.s, c.quoted, got, c.want)
		}
	}
}

// TestTemplateCapsBeforeParse: every path to hil.Parse is guarded, not only
// rule validation (login renders stored rules).
func TestTemplateCapsBeforeParse(t *testing.T) {
	bomb := "${" + strings.Repeat("(", 450_000) + "1" + strings.Repeat(")", 450_000) + "}"
	for _, vars := range []map[string]string{nil, {"value.name": "x"}} {
		_, err := ComputeBindName("service", bomb, vars)
		if err == nil || !strings.Contains(err.Error(), "BindName is too long: 900004 bytes; the limit is 1024") {
			t.Errorf("ComputeBindName(bomb): %v", err)
		}
	}
	deep := "${" + strings.Repeat("(", 32) + "1" + strings.Repeat(")", 32) + "}" // 33 levels with the ${
	if _, err := ComputeBindName("service", deep, nil); err == nil || !strings.Contains(err.Error(), "33 levels deep; the limit is 32") {
		t.Errorf("ComputeBindName(deep): %v", err)
	}
	if _, err := NewEvaluator("Selector", strings.Repeat("(", 6)+"a == b"+strings.Repeat(")", 6)); err == nil ||
		err.Error() != "Selector nests parentheses or brackets 6 levels deep; the limit is 5" {
		t.Errorf("NewEvaluator(deep): %v", err)
	}
}
