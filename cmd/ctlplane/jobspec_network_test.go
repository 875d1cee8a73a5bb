package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestJobRunHCLNetwork: a group's network block becomes Nomad's JSON
// Networks: a port with static is a reserved port, one without a dynamic
// port; unknown arguments and blocks are refused by name.
func TestJobRunHCLNetwork(t *testing.T) {
	src := `job "web" {
  group "g" {
    network {
      mode = "host"
      port "http" {}
      port "db" {
        static = 5432
        to     = 5432
      }
      port "grpc" { to = -1 }
    }
    task "t" {
      driver = "raw_exec"
    }
  }
}`
	path := filepath.Join(t.TempDir(), "web.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustCode(t, 0, "job", "run", "-output", path)
	var wrapped struct {
		Job struct {
			TaskGroups []struct{ Networks []map[string]any }
		}
	}
	if err := json.Unmarshal([]byte(out), &wrapped); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []map[string]any{{"Mode": "host",
		"ReservedPorts": []any{map[string]any{"Label": "db", "Value": 5432.0, "To": 5432.0}},
		"DynamicPorts":  []any{map[string]any{"Label": "http"}, map[string]any{"Label": "grpc", "To": -1.0}},
	}}
	if got := wrapped.Job.TaskGroups[0].Networks; !reflect.DeepEqual(got, want) {
		t.Fatalf("networks %v, want %v", got, want)
	}

	for name, c := range map[string]struct{ body, want string }{
		"argument": {"network {\n port \"a\" { statik = 1 }\n }", `unsupported argument "statik"`},
		"block":    {"network {\n dns { servers = [\"1.1.1.1\"] }\n }", `unsupported block "dns" in network`},
		"label":    {"network {\n port {}\n }", "label"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.hcl")
		body := "job \"a\" {\n group \"g\" {\n " + c.body + "\n task \"t\" { driver = \"raw_exec\" }\n }\n}"
		if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := ctl("job", "run", "-output", bad); code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut)
		}
	}
}
