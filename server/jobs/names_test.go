package jobs

import (
	"strings"
	"testing"
)

// Task and group names become directory names on the client: each must be
// one plain path element (issue 15, finding 5).
func TestNameRules(t *testing.T) {
	body := func(group, task string) string {
		return `{"ID":"web","TaskGroups":[{"Name":` + quote(group) + `,"Tasks":[{"Name":` + quote(task) + `,"Driver":"d"}]}]}`
	}
	cases := []struct{ group, task, want string }{
		{"g", "t", ""},
		{"g", "app.v2", ""},
		{"g", "...", ""},
		{"g.1", ".hidden", ""},
		{"g", ".", `Task group g validation failed: Task . validation failed: Task name cannot be ".": it must not be a relative directory name`},
		{"g", "..", `Task group g validation failed: Task .. validation failed: Task name cannot be "..": it must not be a relative directory name`},
		{"g", "a/b", "Task group g validation failed: Task a/b validation failed: Task name cannot include slashes"},
		{"g", `a\b`, `Task group g validation failed: Task a\b validation failed: Task name cannot include slashes`},
		{"g", "/", "Task group g validation failed: Task / validation failed: Task name cannot include slashes"},
		{"g", "a\x00b", "Task group g validation failed: Task a\x00b validation failed: Task name cannot include null characters"},
		{".", "t", `Task group . validation failed: Task group name cannot be ".": it must not be a relative directory name`},
		{"..", "t", `Task group .. validation failed: Task group name cannot be "..": it must not be a relative directory name`},
		{"a/b", "t", "Task group a/b validation failed: Task group name cannot include slashes"},
		{`a\b`, "t", `Task group a\b validation failed: Task group name cannot include slashes`},
		{"a\x00", "t", "Task group a\x00 validation failed: Task group name cannot include null characters"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(body(c.group, c.task)), "")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("group %q task %q: refused: %v", c.group, c.task, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("group %q task %q:\n got %v\nwant %q", c.group, c.task, err, c.want)
		}
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\x00", `\u0000`)
	return `"` + r.Replace(s) + `"`
}
