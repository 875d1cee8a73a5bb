package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// examples/web.hcl and examples/web.json are the same job: `job run
// -output` prints the same JSON for both.
func TestJobRunOutputHCLMatchesJSON(t *testing.T) {
	outHCL := mustCode(t, 0, "job", "run", "-output", "../../examples/web.hcl")
	outJSON := mustCode(t, 0, "job", "run", "-output", "../../examples/web.json")
	var fromHCL, fromJSON any
	if err := json.Unmarshal([]byte(outHCL), &fromHCL); err != nil {
		t.Fatalf("-output of the HCL file is not JSON: %v\n%s", err, outHCL)
	}
	if err := json.Unmarshal([]byte(outJSON), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromHCL, fromJSON) {
		t.Errorf("HCL and JSON jobs differ:\nHCL:  %s\nJSON: %s", outHCL, outJSON)
	}
	if !strings.Contains(outHCL, `"MinHealthyTime": 2000000000`) || !strings.Contains(outHCL, `"Driver": "raw_exec"`) ||
		!strings.Contains(outHCL, `"Migrate": {`) {
		t.Errorf("-output:\n%s", outHCL)
	}
}

func TestJobRunHCLErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"job \"a\" {\n group \"g\" {\n count = \"three\"\n }\n}":                                    "count: an integer is needed",
		"job \"a\" {\n group \"g\" {\n task \"t\" {\n driver = \"raw_exec\"\n bogus = 1\n }\n }\n}": `unsupported argument "bogus"`,
		`variable "x" {}`: `unsupported block "variable"`,
		"job \"a\" {\n update {\n min_healthy_time = \"soon\"\n }\n}": `min_healthy_time: a duration`,
		"job \"a\" {\n group \"g\" {\n count = var.n\n }\n}":          "Variables not allowed",
		`job "a" {`: "Error parsing job file",
		`job { }`:   "needs one name label",
	}
	for src, want := range cases {
		path := filepath.Join(dir, "job.hcl")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := ctl("job", "run", "-output", path)
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", src, code, errOut, want)
		}
	}
	// JSON input: the job alone or wrapped in {"Job": ...}.
	path := filepath.Join(dir, "bare.json")
	if err := os.WriteFile(path, []byte(`{"ID": "bare", "TaskGroups": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustCode(t, 0, "job", "run", "-output", path); !strings.Contains(out, `"Job": {`) || !strings.Contains(out, `"ID": "bare"`) {
		t.Errorf("bare JSON job: %s", out)
	}
}

// Usage errors and prefix resolution of the Nomad-style commands.
func TestNomadCommandsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"job"}, {"job", "bogus"}, {"deployment", "status"}, {"deployment", "allocation-health", "x"},
		{"alloc", "logs"}, {"job", "revert", "web", "x"},
	} {
		if code, _, _ := ctl(args...); code != 1 {
			t.Errorf("ctlplane %v: exit %d, want 1", args, code)
		}
	}
	if got := evenPrefix("abc"); got != "ab" {
		t.Errorf("evenPrefix(abc) = %q", got)
	}
	if got := evenPrefix("abcd-e"); got != "abcd-" {
		t.Errorf("evenPrefix(abcd-e) = %q", got)
	}
	if _, err := resolvePrefix("deployment", "ab", []string{"abc1", "abd2"}); err == nil || !strings.Contains(err.Error(), "matched multiple") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if id, err := resolvePrefix("deployment", "abc", []string{"abc1", "abd2"}); err != nil || id != "abc1" {
		t.Errorf("unique prefix: %q %v", id, err)
	}
	t.Setenv("CTLPLANE_HTTP_ADDR", "")
	t.Setenv("NOMAD_ADDR", "http://127.0.0.1:1")
	t.Setenv("NOMAD_TOKEN", "nomad-secret")
	c := newNomadCmd("x", "", nil, nil)
	if c.conn.address != "http://127.0.0.1:1" || c.conn.token != "nomad-secret" {
		t.Errorf("NOMAD_ADDR/NOMAD_TOKEN not used: %q %q", c.conn.address, c.conn.token)
	}
}
