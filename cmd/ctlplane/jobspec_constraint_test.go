package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestJobRunHCLConstraints: constraint blocks at job, group and task level
// become Nomad's JSON constraints, with the default operator "=" and
// Nomad's shorthands.
func TestJobRunHCLConstraints(t *testing.T) {
	src := `job "web" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint { distinct_hosts = true }
  affinity {
    attribute = "${node.class}"
    value     = "big"
    weight    = -30
  }
  group "g" {
    spread {
      attribute = "${node.datacenter}"
      weight    = 100
      target "dc1" {
        percent = 70
      }
      target "dc2" {
        percent = 30
      }
    }
    constraint {
      attribute = "${meta.rack}"
      operator  = "set_contains_any"
      value     = "r1,r2"
    }
    constraint {
      distinct_property = "${meta.rack}"
      value             = "2"
    }
    task "t" {
      driver = "mock_driver"
      constraint {
        attribute = "${attr.nomad.version}"
        version   = ">= 0.1"
      }
      constraint {
        attribute = "${node.class}"
        regexp    = "^gpu"
      }
      constraint {
        attribute = "${attr.unique.network.ip-address}"
        operator  = "!="
        value     = "10.0.0.${meta.last}"
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
			Constraints []map[string]string
			Affinities  []map[string]any
			TaskGroups  []struct {
				Spreads     []map[string]any
				Constraints []map[string]string
				Tasks       []struct{ Constraints []map[string]string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &wrapped); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c := func(l, op, r string) map[string]string {
		return map[string]string{"LTarget": l, "Operand": op, "RTarget": r}
	}
	j := wrapped.Job
	if want := []map[string]string{c("${attr.kernel.name}", "=", "linux"), c("", "distinct_hosts", "")}; !reflect.DeepEqual(j.Constraints, want) {
		t.Errorf("job constraints %v, want %v", j.Constraints, want)
	}
	if want := []map[string]any{{"LTarget": "${node.class}", "Operand": "=", "RTarget": "big", "Weight": -30.0}}; !reflect.DeepEqual(j.Affinities, want) {
		t.Errorf("job affinities %v, want %v", j.Affinities, want)
	}
	if len(j.TaskGroups) != 1 || len(j.TaskGroups[0].Tasks) != 1 {
		t.Fatalf("groups: %s", out)
	}
	g := j.TaskGroups[0]
	wantSpread := []map[string]any{{"Attribute": "${node.datacenter}", "Weight": 100.0, "SpreadTarget": []any{
		map[string]any{"Value": "dc1", "Percent": 70.0}, map[string]any{"Value": "dc2", "Percent": 30.0}}}}
	if !reflect.DeepEqual(g.Spreads, wantSpread) {
		t.Errorf("group spreads %v, want %v", g.Spreads, wantSpread)
	}
	if want := []map[string]string{c("${meta.rack}", "set_contains_any", "r1,r2"), c("${meta.rack}", "distinct_property", "2")}; !reflect.DeepEqual(g.Constraints, want) {
		t.Errorf("group constraints %v, want %v", g.Constraints, want)
	}
	if want := []map[string]string{c("${attr.nomad.version}", "version", ">= 0.1"), c("${node.class}", "regexp", "^gpu"),
		c("${attr.unique.network.ip-address}", "!=", "10.0.0.${meta.last}")}; !reflect.DeepEqual(g.Tasks[0].Constraints, want) {
		t.Errorf("task constraints %v, want %v", g.Tasks[0].Constraints, want)
	}

	// An unknown argument is refused with its name.
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	if err := os.WriteFile(bad, []byte("job \"a\" {\n constraint {\n attr = \"x\"\n }\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctl("job", "run", "-output", bad); code != 1 || !strings.Contains(errOut, `unsupported argument "attr"`) {
		t.Errorf("bad constraint: exit %d, stderr %q", code, errOut)
	}
}
