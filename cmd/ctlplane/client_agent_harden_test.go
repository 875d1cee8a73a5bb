package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/api"
)

// Issue 15, finding 3: a client agent offers raw_exec only when its
// configuration enables it (Nomad's plugin block), so a raw_exec job is not
// placed on a node without it; the introduction token reaches neither the
// tasks' environment nor the agent's /proc/PID/environ.
func TestClientAgentRawExecOptIn(t *testing.T) {
	const introToken = testManagementToken
	const operatorToken = "operator-token-in-the-shell"
	pids := taskPids(t)
	srv, _ := devAgent(t, "-dev-nodes=0", "-acl-enabled=true", "-acl-initial-management-token="+testManagementToken)
	ac, err := api.NewClient(api.Config{Address: srv.url, Token: testManagementToken})
	if err != nil {
		t.Fatal(err)
	}
	// The node token comes from the environment; the operator's own
	// CTLPLANE_TOKEN is there too, and neither may stay visible.
	t.Setenv("CTLPLANE_NODE_TOKEN", introToken)
	t.Setenv("CTLPLANE_TOKEN", operatorToken)

	plain := startClientAgentArgs(t, "-servers="+srv.url, "-data-dir="+t.TempDir(), "-node=plain")
	nodes := waitNodes(t, ac, 1)
	if d := nodes[0].Drivers; d["raw_exec"] != nil || d["mock_driver"] != nil || nodes[0].Attributes["driver.raw_exec"] != "" {
		t.Fatalf("a client without raw_exec registered drivers %v, attributes %v", d, nodes[0].Attributes)
	}
	mustCode(t, 0, "job", "run", "-detach", "-address="+srv.url, "-token="+testManagementToken, jobSpec{id: "needs-raw", count: 1, script: envScript}.write(t, pids))
	waitFor(t, "the evaluation to be blocked", func() bool {
		evals, _, err := ac.JobEvaluations(context.Background(), "needs-raw", nil)
		for _, ev := range evals {
			if ev.Status == "blocked" {
				return err == nil
			}
		}
		return false
	})
	if allocs := allocsOf(t, ac, "needs-raw"); len(allocs) != 0 {
		t.Fatalf("a raw_exec job was placed on a node without raw_exec: %d allocations", len(allocs))
	}

	// Nomad's own block in the client's config file turns it on.
	cfgFile := filepath.Join(t.TempDir(), "client.hcl")
	if err := os.WriteFile(cfgFile, []byte(`node = "raw"
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := startClientAgentArgs(t, "-servers="+srv.url, "-data-dir="+t.TempDir(), "-config-file="+cfgFile)
	waitNodes(t, ac, 2)
	n, _, err := ac.Node(context.Background(), raw.nodeID, nil)
	if err != nil || n.Name != "raw" || n.Drivers["raw_exec"] == nil || n.Attributes["driver.raw_exec"] != "1" {
		t.Fatalf("the configured client: %+v %v", n, err)
	}
	waitPids(t, pids, ".pid", 1)
	allocs := allocsOf(t, ac, "needs-raw")
	if len(allocs) != 1 || allocs[0].NodeID != raw.nodeID {
		t.Fatalf("allocations %+v, want one on the raw_exec node %s", allocs, raw.nodeID)
	}
	waitFor(t, "the task's environment dump", func() bool {
		buf, err := os.ReadFile(filepath.Join(pids, allocs[0].ID+".env"))
		return err == nil && strings.Contains(string(buf), "END")
	})
	dump, _ := os.ReadFile(filepath.Join(pids, allocs[0].ID+".env"))
	if !strings.Contains(string(dump), "NOMAD_ALLOC_ID="+allocs[0].ID) || !strings.Contains(string(dump), "PARENT") {
		t.Fatalf("the task's dump is not what the script writes: %q", dump)
	}
	for _, secret := range []string{introToken, operatorToken} {
		if strings.Contains(string(dump), secret) {
			t.Errorf("the task sees a token in its or its parent's environment:\n%s", dump)
		}
		for _, ca := range []*clientAgent{plain, raw} {
			env, err := os.ReadFile("/proc/" + strconv.Itoa(ca.cmd.Process.Pid) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(env), secret) || strings.Contains(string(env), "CTLPLANE_NODE_TOKEN=") {
				t.Errorf("a token is in the client agent's /proc/PID/environ")
			}
			if !strings.Contains(string(env), agentEnv+"=1") {
				t.Errorf("the agent's other variables are gone: %q", env)
			}
		}
	}
	mustCode(t, 0, "job", "stop", "-address="+srv.url, "-token="+testManagementToken, "needs-raw")
	waitAllDead(t, readPids(pids, ".pid"))
}

// envScript dumps the task's environment and its parent's (the agent's).
const envScript = `echo $$ > "$PIDDIR/$NOMAD_ALLOC_ID.pid"; f="$PIDDIR/$NOMAD_ALLOC_ID.env"; env > "$f.tmp"; echo PARENT >> "$f.tmp"; ` +
	`tr '\0' '\n' < /proc/$PPID/environ >> "$f.tmp"; echo END >> "$f.tmp"; mv "$f.tmp" "$f"; exec sleep 3600`

// The client's config file: Nomad's raw_exec block, flags win, and
// -disable-raw-exec (from when raw_exec was on by default) wins over all.
func TestClientAgentConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	enabled := write("on.hcl", `plugin "raw_exec" { config { enabled = true } }`)
	enabledJSON := write("on.json", `{"plugin": {"raw_exec": {"config": {"enabled": true, "no_cgroups": true}}}, "datacenter": "east"}`)
	disabled := write("off.hcl", `plugin "raw_exec" { config { enabled = false } }`)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"default":             {nil, "datacenter=dc1 raw_exec=false"},
		"flag":                {[]string{"-enable-raw-exec"}, "raw_exec=true"},
		"plugin block":        {[]string{"-config-file=" + enabled}, "raw_exec=true"},
		"JSON plugin block":   {[]string{"-config-file=" + enabledJSON}, "datacenter=east raw_exec=true"},
		"block says false":    {[]string{"-config-file=" + disabled}, "raw_exec=false"},
		"flag over block":     {[]string{"-config-file=" + disabled, "-enable-raw-exec"}, "raw_exec=true"},
		"disable wins":        {[]string{"-config-file=" + enabled, "-enable-raw-exec", "-disable-raw-exec"}, "raw_exec=false"},
		"flag over file keys": {[]string{"-config-file=" + enabledJSON, "-datacenter=west"}, "datacenter=west raw_exec=true"},
	} {
		args := append([]string{"agent", "-client", "-servers=127.0.0.1:1", "-data-dir=" + t.TempDir(), "-node=cfg"}, tc.args...)
		p := startProc(t, args...)
		waitFor(t, name+": the start line", func() bool { return strings.Contains(p.stderr.String(), "client agent started") })
		if !strings.Contains(p.stderr.String(), tc.want) {
			t.Errorf("%s: want %q in:\n%s", name, tc.want, p.stderr.String())
		}
		p.cmd.Process.Kill()
	}
	for name, tc := range map[string]struct{ content, want string }{
		"other plugin":  {`plugin "docker" { config { enabled = true } }`, `plugin "docker": only the raw_exec plugin can be configured`},
		"unknown key":   {`plugin "raw_exec" { config { enabled = true, volumes = true } }`, `plugin "raw_exec": unknown config key "volumes" (known: enabled, no_cgroups)`},
		"not a bool":    {`plugin "raw_exec" { config { enabled = "yes" } }`, `plugin "raw_exec": enabled must be true or false`},
		"not config":    {`plugin "raw_exec" { args = [] }`, `plugin "raw_exec": unknown key "args"`},
		"unknown field": {`servers_x = "a"`, `unknown key "servers_x"`},
	} {
		f := write(strings.ReplaceAll(name, " ", "-")+".hcl", tc.content)
		p := startProc(t, "agent", "-client", "-servers=127.0.0.1:1", "-data-dir="+t.TempDir(), "-config-file="+f)
		if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", name, code, p.stderr.String(), tc.want)
		}
	}
}

// Issue 31, finding 6: a client agent offers the test drivers (mock_driver,
// mock) only with -enable-test-drivers: a mock job stays blocked on a plain
// client and is placed, and runs, once a client that offers them joins.
func TestClientAgentTestDriversOptIn(t *testing.T) {
	srv, ac := devAgent(t, "-dev-nodes=0")
	plain := startClientAgentArgs(t, "-servers="+srv.url, "-data-dir="+t.TempDir(), "-node=plain")
	waitNodes(t, ac, 1)
	n, _, err := ac.Node(context.Background(), plain.nodeID, nil)
	if err != nil || len(n.Drivers) != 0 || n.Attributes["driver.mock_driver"] != "" || n.Attributes["driver.mock"] != "" {
		t.Fatalf("a plain client agent registered drivers %v, attributes %v (%v)", n.Drivers, n.Attributes, err)
	}
	job := []byte(`{"Job":{"ID":"mocked","Type":"service","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,` +
		`"Tasks":[{"Name":"t","Driver":"mock","Config":{},"Resources":{"CPU":50,"MemoryMB":16}}]}]}}`)
	if _, err := ac.RegisterJobJSON(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the evaluation to be blocked", func() bool {
		evals, _, err := ac.JobEvaluations(context.Background(), "mocked", nil)
		for _, ev := range evals {
			if ev.Status == "blocked" {
				return err == nil
			}
		}
		return false
	})
	if allocs := allocsOf(t, ac, "mocked"); len(allocs) != 0 {
		t.Fatalf("a mock job was placed on a client without the test drivers: %+v", allocs)
	}

	tester := startClientAgentArgs(t, "-servers="+srv.url, "-data-dir="+t.TempDir(), "-node=tester", "-enable-test-drivers")
	waitNodes(t, ac, 2)
	n, _, err = ac.Node(context.Background(), tester.nodeID, nil)
	if err != nil || n.Drivers["mock_driver"] == nil || n.Drivers["mock"] == nil || n.Drivers["raw_exec"] != nil || n.Attributes["driver.mock"] != "1" {
		t.Fatalf("the client with -enable-test-drivers registered drivers %v, attributes %v (%v)", n.Drivers, n.Attributes, err)
	}
	waitFor(t, "the mock job to run on the client with the test drivers", func() bool {
		allocs := allocsOf(t, ac, "mocked")
		return len(allocs) == 1 && allocs[0].NodeID == tester.nodeID && allocs[0].ClientStatus == "running"
	})
}
