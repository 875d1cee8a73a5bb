package client

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// After a re-attached task's process is gone its pid may be reused, also as
// a process group: the client signals a group only while it can still be
// the task's (issue 15, finding 5).
func TestGroupIsTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a process")
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	pid := cmd.Process.Pid
	tick, err := procStartTick(pid)
	if err != nil || tick == 0 {
		t.Fatalf("start time of %d: %d %v", pid, tick, err)
	}
	for _, c := range []struct {
		name string
		pid  int
		tick uint64
		want bool
	}{
		{"the process started", pid, tick, true},
		{"another process under the recorded pid", pid, tick + 1, false},
		{"no recorded start time", pid, 0, false},
		{"no process under the pid: only the task's leftovers can hold the group", 1 << 30, tick, true},
	} {
		if got := groupIsTasks(c.pid, c.tick); got != c.want {
			t.Errorf("%s: groupIsTasks = %v, want %v", c.name, got, c.want)
		}
	}

	// A proc recorded with another start time (the pid was reused): its
	// signal and its group kill reach nobody.
	reused := &rawProc{pid: pid, startTick: tick + 1}
	if err := reused.signal(syscall.SIGKILL); err != nil {
		t.Fatalf("signal: %v", err)
	}
	reused.killGroup()
	select {
	case <-exited:
		t.Fatal("a process whose start time differs from the recorded one was killed")
	case <-time.After(200 * time.Millisecond):
	}
	// The real one is signalled.
	if err := (&rawProc{pid: pid, startTick: tick}).signal(syscall.SIGKILL); err != nil {
		t.Fatalf("signal: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the task's own process group was not signalled")
	}
}
