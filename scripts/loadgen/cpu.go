package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuWindow measures the CPU time the server's process and the load
// generator itself use over a measurement: on a machine whose cores they
// share, it says which side a latency is bound by.
type cpuWindow struct {
	pid          int
	server, self time.Duration // at the start
}

type cpuUse struct {
	wall, server, self time.Duration
	serverKnown        bool
}

func startCPU(pid int) cpuWindow {
	return cpuWindow{pid: pid, server: processCPU(pid), self: selfCPU()}
}

func (c cpuWindow) stop(wall time.Duration) cpuUse {
	return cpuUse{wall: wall, server: processCPU(c.pid) - c.server, self: selfCPU() - c.self, serverKnown: c.pid > 0}
}

// row reports the use as cores busy on average over the window.
func (u cpuUse) row(scenario, what string) row {
	server := "server ?"
	if u.serverKnown {
		server = fmt.Sprintf("server %v (%.2f cores)", u.server.Round(time.Millisecond), u.server.Seconds()/u.wall.Seconds())
	}
	return row{scenario: scenario, what: fmt.Sprintf("%s: %s, loadgen %v (%.2f cores), over %v", what, server,
		u.self.Round(time.Millisecond), u.self.Seconds()/u.wall.Seconds(), u.wall.Round(time.Millisecond))}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is utime+stime of pid from /proc (Linux; 0 when unknown).
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks
}

// perOp is the server's CPU per operation (0: unknown, or no operation).
func (u cpuUse) perOp(ops int) time.Duration {
	if !u.serverKnown || ops == 0 {
		return 0
	}
	return u.server / time.Duration(ops)
}
