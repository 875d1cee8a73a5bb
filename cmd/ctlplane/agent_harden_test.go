package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 15, finding 4: a dev agent (ACLs off, raw_exec on) listens beyond
// this machine only when told so explicitly, and then says so in its log.
func TestAgentDevListenAny(t *testing.T) {
	p := startProc(t, "agent", "-dev", "-http-addr=0.0.0.0:0", "-dev-nodes=0")
	want := "-dev with -http-addr=0.0.0.0:0 listens beyond this machine, and a dev agent runs anyone's commands (ACLs off, raw_exec on): use a loopback address (127.0.0.1), or add -dev-listen-any if this is really meant"
	if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), want) {
		t.Fatalf("-dev -http-addr=0.0.0.0:0: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	p = startProc(t, "agent", "-dev", "-http-addr=:0", "-dev-nodes=0")
	if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), "-http-addr=:0 listens beyond this machine") {
		t.Fatalf("-dev -http-addr=:0: exit %d, stderr:\n%s", code, p.stderr.String())
	}

	p = startProc(t, "agent", "-dev", "-http-addr=0.0.0.0:0", "-dev-nodes=0", "-dev-listen-any")
	deadline := time.Now().Add(startTimeout)
	for !strings.Contains(p.stderr.String(), "HTTP API listening") {
		(&agent{proc: p}).checkAlive(t, deadline, "log its HTTP address")
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.stderr.String(), "dev agent listening on a non-loopback address: anyone who reaches it can run commands on this machine: flag=-http-addr address=0.0.0.0:0") {
		t.Fatalf("no warning in the log:\n%s", p.stderr.String())
	}
}

func TestAgentMaxJobAllocsFlag(t *testing.T) {
	p := startProc(t, "agent", "-dev", "-max-job-allocs=0")
	if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), "invalid -max-job-allocs 0: it must be at least 1") {
		t.Fatalf("-max-job-allocs=0: exit %d, stderr:\n%s", code, p.stderr.String())
	}
}

// agent -dev's client node takes its dynamic port range from
// -min-dynamic-port/-max-dynamic-port (as agent -client does); a range
// that is not one is refused before anything starts.
func TestAgentDevDynamicPortRangeFlags(t *testing.T) {
	for _, tc := range []struct{ min, max string }{{"30000", "20000"}, {"0", "100"}, {"20000", "70000"}} {
		p := startProc(t, "agent", "-dev", "-min-dynamic-port="+tc.min, "-max-dynamic-port="+tc.max)
		want := "invalid dynamic port range " + tc.min + "-" + tc.max + ": ports are 1 to 65535, the lowest first"
		if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), want) {
			t.Errorf("-min-dynamic-port=%s -max-dynamic-port=%s: exit %d, stderr:\n%s", tc.min, tc.max, code, p.stderr.String())
		}
	}
}

// A server agent reads its secrets from the environment, then removes
// them, also from /proc/PID/environ: a dev agent's raw_exec tasks are its
// children.
func TestAgentSecretsLeaveEnviron(t *testing.T) {
	const secret = "11111111-aaaa-4bbb-8ccc-0000000000e1"
	a := startAgentEnv(t, []string{"CTLPLANE_ACL_INITIAL_MANAGEMENT_TOKEN=" + secret, "CTLPLANE_TOKEN=operator-secret"},
		"-dev", "-http-addr=127.0.0.1:0", "-acl-enabled=true", "-dev-nodes=0")
	if !tokenWorks(t, a, secret) {
		t.Fatal("the initial management token from the environment does not work")
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(a.cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, "operator-secret", "CTLPLANE_ACL_INITIAL_MANAGEMENT_TOKEN="} {
		if strings.Contains(string(env), s) {
			t.Errorf("%q is still in the agent's /proc/PID/environ", s)
		}
	}
	if !strings.Contains(string(env), agentEnv+"=1") {
		t.Errorf("the agent's other variables are gone")
	}
}
