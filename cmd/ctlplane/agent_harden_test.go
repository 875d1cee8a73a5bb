package main

import (
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
