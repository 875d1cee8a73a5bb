package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuUse is CPU time (user and system) spent so far by this process and by
// its child processes (the simulated nodes of -nodes-process). On a shared
// machine the time per placement varies with the load; the CPU per
// placement much less.
type cpuUse struct{ self, children time.Duration }

func cpuNow() cpuUse {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpuUse{self: self, children: childrenCPU()}
}

func (c cpuUse) since(before cpuUse) cpuUse {
	return cpuUse{self: c.self - before.self, children: c.children - before.children}
}

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTick = 10 * time.Millisecond

// childrenCPU sums utime and stime of this process's live children.
func childrenCPU() time.Duration {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var total time.Duration
	for _, f := range files {
		buf, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(buf)) {
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue
			}
			// The fields after the command (which may hold spaces) in ")".
			s := string(stat)
			fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(fields) < 13 {
				continue
			}
			utime, _ := strconv.ParseInt(fields[11], 10, 64)
			stime, _ := strconv.ParseInt(fields[12], 10, 64)
			total += time.Duration(utime+stime) * clockTick
		}
	}
	return total
}
