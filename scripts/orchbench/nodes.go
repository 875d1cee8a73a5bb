package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/hashicorp/go-hclog"
)

// Resources of a simulated node, as a dev agent's own (server/agent).
const (
	simNodeCPU      = 64000
	simNodeMemoryMB = 256 << 10
)

// startSimNodes runs n simulated nodes in a child process (this binary with
// -sim-nodes) against the agent at url; stop ends it.
func startSimNodes(n int, url string) (stop func()) {
	exe, err := os.Executable()
	if err != nil {
		fail("finding this binary: %v", err)
	}
	cmd := exec.Command(exe, fmt.Sprintf("-sim-nodes=%d", n), "-server="+url)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		fail("starting the simulated nodes: %v", err)
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// runSimNodes is the child process: n simulated nodes (mock_driver) talking
// to the agent over TCP, until SIGTERM.
func runSimNodes(n int, url string) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	base := client.Config{
		Servers:    []string{url},
		NodeName:   "bench-node",
		Datacenter: "dc1",
		// Simulated nodes run the mock driver.
		TestDrivers: true,
		Resources:   api.Resources{CPU: simNodeCPU, MemoryMB: simNodeMemoryMB},
		Logger:      hclog.New(&hclog.LoggerOptions{Name: "client", Level: hclog.Warn, Output: os.Stderr}),
		Now:         time.Now,
	}
	if _, err := client.StartPool(ctx, n, base, nil); err != nil {
		fail("starting %d simulated nodes: %v", n, err)
	}
	<-ctx.Done()
}
