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

// processCPU is the CPU time pid has used (Linux; 0 when unknown): the sum
// of its threads' run time in nanoseconds from /proc/PID/task/*/schedstat,
// or, where that is missing, utime+stime from /proc/PID/stat in ticks of
// 10 ms, too coarse for a wake-up's ~250 ms. (A thread that exits inside a
// window takes its time with it; Go's runtime keeps its threads.)
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	if d, ok := schedstatCPU(pid); ok {
		return d
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

// schedstatCPU sums the first field (time on a CPU, ns) of every thread's
// schedstat.
func schedstatCPU(pid int) (time.Duration, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread has exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// perOp is the server's CPU per operation (0: unknown, or no operation).
func (u cpuUse) perOp(ops int) time.Duration {
	if !u.serverKnown || ops == 0 {
		return 0
	}
	return u.server / time.Duration(ops)
}
