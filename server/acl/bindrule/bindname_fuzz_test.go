package bindrule

import (
	"strings"
	"testing"
)

// FuzzBindName renders random BindName templates with random variables and
// with the validation-time fake values: no input may panic, and a name that
// comes back must satisfy its bind type's rule.
func FuzzBindName(f *testing.F) {
	for _, s := range []string{
		"web", "svc-${value.name}", "${value.name}-${value.org}", "${", "${}", "$${value.name}",
		"${upper(value.name)}", "${value.name", "k8s-{{ value.name }}", "${1 + 2}", `${"a"}`,
		"${value.name}${value.name}", "node-${value.x.y.z}", "\x00${value.name}",
	} {
		f.Add(s, "Web_App", "service")
		f.Add(s, "ops team", "role")
		f.Add(s, "", "node")
	}
	f.Fuzz(func(t *testing.T, bindName, value, bindType string) {
		if len(bindName) > 1024 || len(value) > 1024 {
			return
		}
		vars := map[string]string{"value.name": value, "value.org": strings.ToUpper(value)}
		for _, v := range []map[string]string{vars, nil, {}} {
			name, err := ComputeBindName(bindType, bindName, v)
			if err == nil && !ValidName(bindType, name) {
				t.Fatalf("ComputeBindName(%q, %q, %v) = %q, which the %q rule refuses", bindType, bindName, v, name, bindType)
			}
		}
		_ = ValidateFields("", bindType, bindName)
	})
}
