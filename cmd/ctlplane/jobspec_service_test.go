package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestJobRunHCLService: group and task service blocks with their checks
// (header, check_restart) become Nomad's JSON Services; runtime
// interpolations in a task's args stay as text; unknown arguments and
// Consul's blocks are refused by name.
func TestJobRunHCLService(t *testing.T) {
	src := `job "web" {
  group "g" {
    network {
      port "http" {}
    }
    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["v1"]
      check {
        type     = "http"
        path     = "/health"
        interval = "5s"
        timeout  = "2s"
        header {
          X-Probe = ["ctlplane"]
        }
        check_restart {
          limit = 3
          grace = "10s"
        }
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "python3"
        args    = ["-m", "http.server", "${NOMAD_PORT_http}"]
      }
      service {
        name     = "t-tcp"
        port     = "http"
        provider = "nomad"
        check {
          type     = "tcp"
          interval = "1s"
          timeout  = "1s"
        }
      }
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
			TaskGroups []struct {
				Services []map[string]any
				Tasks    []struct {
					Config   map[string]any
					Services []map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &wrapped); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	g := wrapped.Job.TaskGroups[0]
	want := []map[string]any{{"Name": "web", "PortLabel": "http", "Provider": "nomad", "Tags": []any{"v1"},
		"Checks": []any{map[string]any{"Type": "http", "Path": "/health", "Interval": 5e9, "Timeout": 2e9,
			"Header": map[string]any{"X-Probe": []any{"ctlplane"}}, "CheckRestart": map[string]any{"Limit": 3.0, "Grace": 1e10}}}}}
	if !reflect.DeepEqual(g.Services, want) {
		t.Fatalf("group services %v, want %v", g.Services, want)
	}
	wantTask := []map[string]any{{"Name": "t-tcp", "PortLabel": "http", "Provider": "nomad",
		"Checks": []any{map[string]any{"Type": "tcp", "Interval": 1e9, "Timeout": 1e9}}}}
	if !reflect.DeepEqual(g.Tasks[0].Services, wantTask) {
		t.Fatalf("task services %v, want %v", g.Tasks[0].Services, wantTask)
	}
	if args := g.Tasks[0].Config["args"]; !reflect.DeepEqual(args, []any{"-m", "http.server", "${NOMAD_PORT_http}"}) {
		t.Fatalf("args %v", args)
	}

	for name, c := range map[string]struct{ body, want string }{
		"argument": {"service {\n nme = \"x\"\n }", `unsupported argument "nme"`},
		"connect":  {"service {\n connect {}\n }", `unsupported block "connect" in service`},
		"check":    {"service {\n check {\n grpc_service = \"x\"\n }\n }", `unsupported argument "grpc_service"`},
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
