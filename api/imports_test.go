package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoStateImports: the wire types are api's own, so neither api/, the
// client agent nor the CLI may import the server's state package (not even
// indirectly).
func TestNoStateImports(t *testing.T) {
	const state = "github.com/ctlplane/ctlplane/state"
	for _, pkg := range []string{"github.com/ctlplane/ctlplane/api", "github.com/ctlplane/ctlplane/client"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == state {
				t.Errorf("%s depends on %s", pkg, state)
			}
		}
	}
	// The binary holds the server too, so only its own imports are checked.
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", "github.com/ctlplane/ctlplane/cmd/ctlplane").CombinedOutput()
	if err != nil {
		t.Fatalf("go list cmd/ctlplane: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == state {
			t.Errorf("cmd/ctlplane imports %s", state)
		}
	}
}
