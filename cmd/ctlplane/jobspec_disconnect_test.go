package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A group's max_client_disconnect is Nomad's HCL duration, sent as
// MaxClientDisconnect in nanoseconds.
func TestJobRunHCLMaxClientDisconnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.hcl")
	src := "job \"a\" {\n group \"g\" {\n max_client_disconnect = \"5m\"\n task \"t\" {\n driver = \"raw_exec\"\n }\n }\n}"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustCode(t, 0, "job", "run", "-output", path); !strings.Contains(out, `"MaxClientDisconnect": 300000000000`) {
		t.Errorf("-output:\n%s", out)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(src, `"5m"`, `"soon"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctl("job", "run", "-output", path); code != 1 || !strings.Contains(errOut, "max_client_disconnect: a duration") {
		t.Errorf("bad duration: exit %d, stderr %q", code, errOut)
	}
}
