package client

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// Host and task usage from /proc, in Nomad's shapes (HostStats,
// AllocResourceUsage). CPU percentages are measured over sampleWindow:
// each request reads the counters twice, so the client keeps no state.

const (
	sampleWindow = 100 * time.Millisecond
	// clockTicks is USER_HZ, 100 on every Linux platform Go supports.
	clockTicks = 100
)

// Measured fields, as Nomad's executor reports them without cgroups.
var (
	measuredCPU = []string{"System Mode", "User Mode", "Percent"}
	measuredMem = []string{"RSS", "Swap"}
)

func (c *Client) handleHostStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		plainError(w, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
		return
	}
	if code, err := c.authorizeGrant(r.Context(), r, api.Grant{Op: api.GrantHostStats, NodeID: c.nodeID}, false); err != nil {
		plainError(w, code, "%v", err)
		return
	}
	hs, err := c.hostStats()
	if err != nil {
		plainError(w, http.StatusInternalServerError, "failed to read host stats: %v", err)
		return
	}
	writeNodeJSON(w, hs)
}

// cpuTimes are one CPU line of /proc/stat, in ticks.
type cpuTimes struct{ user, system, idle, total uint64 }

func readCPUTimes() (map[string]cpuTimes, []string, error) {
	buf, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, nil, err
	}
	out := map[string]cpuTimes{}
	var names []string
	for _, line := range strings.Split(string(buf), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var v []uint64
		for _, s := range f[1:] {
			n, _ := strconv.ParseUint(s, 10, 64)
			v = append(v, n)
		}
		var t cpuTimes
		for i, n := range v {
			if i >= 8 { // guest times are already in user
				break
			}
			t.total += n
		}
		t.user = v[0] + v[1]
		t.system = v[2]
		if len(v) > 6 {
			t.system += v[5] + v[6]
		}
		t.idle = v[3]
		if len(v) > 4 {
			t.idle += v[4]
		}
		out[f[0]] = t
		names = append(names, f[0])
	}
	return out, names, nil
}

func (c *Client) hostStats() (*api.HostStats, error) {
	before, _, err := readCPUTimes()
	if err != nil {
		return nil, err
	}
	time.Sleep(sampleWindow)
	after, names, err := readCPUTimes()
	if err != nil {
		return nil, err
	}
	hs := &api.HostStats{Timestamp: time.Now().UnixNano(), DeviceStats: []any{}}
	var busy float64
	for _, n := range names {
		a, b := after[n], before[n]
		d := float64(a.total - b.total)
		st := &api.HostCPUStats{CPU: n, Idle: 100}
		if d > 0 {
			st.User = float64(a.user-b.user) / d * 100
			st.System = float64(a.system-b.system) / d * 100
			st.Idle = float64(a.idle-b.idle) / d * 100
		}
		busy += (st.User + st.System) / 100
		hs.CPU = append(hs.CPU, st)
	}
	if len(names) > 0 && c.cfg.Resources.CPU > 0 {
		hs.CPUTicksConsumed = busy * float64(c.cfg.Resources.CPU) / float64(len(names))
	}
	if hs.Memory, err = memStats(); err != nil {
		return nil, err
	}
	if buf, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(buf)); len(f) > 0 {
			up, _ := strconv.ParseFloat(f[0], 64)
			hs.Uptime = uint64(up)
		}
	}
	dir := c.cfg.DataDir
	if dir == "" {
		dir = "/"
	}
	if ds := diskStats(dir); ds != nil {
		hs.DiskStats = []*api.HostDiskStats{ds}
		alloc := *ds
		hs.AllocDirStats = &alloc
	}
	return hs, nil
}

// memStats reads /proc/meminfo (kB) into bytes.
func memStats() (*api.HostMemoryStats, error) {
	buf, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	kv := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(buf))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			kv[strings.TrimSuffix(f[0], ":")] = n * 1024
		}
	}
	m := &api.HostMemoryStats{Total: kv["MemTotal"], Available: kv["MemAvailable"], Free: kv["MemFree"]}
	if m.Available == 0 {
		m.Available = m.Free + kv["Buffers"] + kv["Cached"]
	}
	if m.Total > m.Available {
		m.Used = m.Total - m.Available
	}
	return m, nil
}

// diskStats is the usage of the filesystem holding dir, named by its
// mount (the longest mount point of /proc/self/mounts above dir).
func diskStats(dir string) *api.HostDiskStats {
	var fs syscall.Statfs_t
	if syscall.Statfs(dir, &fs) != nil {
		return nil
	}
	bs := uint64(fs.Bsize)
	ds := &api.HostDiskStats{Device: "unknown", Mountpoint: "/", Size: fs.Blocks * bs, Available: fs.Bavail * bs}
	if ds.Size > fs.Bfree*bs {
		ds.Used = ds.Size - fs.Bfree*bs
	}
	if ds.Used+ds.Available > 0 {
		ds.UsedPercent = float64(ds.Used) / float64(ds.Used+ds.Available) * 100
	}
	if fs.Files > 0 {
		ds.InodesUsedPercent = float64(fs.Files-fs.Ffree) / float64(fs.Files) * 100
	}
	abs, _ := filepath.Abs(dir)
	if buf, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(buf), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			mp := f[1]
			if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(ds.Mountpoint) {
				ds.Device, ds.Mountpoint = f[0], mp
			}
		}
	}
	return ds
}

// procSample is one process's counters.
type procSample struct {
	user, system uint64 // ticks
	rss, swap    uint64 // bytes
	pgrp         int
}

// groupSamples reads every process of the process groups pgids.
func groupSamples(pgids map[int]bool) map[int]procSample {
	out := map[int]procSample{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	page := uint64(os.Getpagesize())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		buf, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(buf)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// After the name: state(3) ppid(4) pgrp(5) ... utime(14) stime(15) ... rss(24).
		if len(f) < 22 {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		if !pgids[pgrp] {
			continue
		}
		ps := procSample{pgrp: pgrp}
		ps.user, _ = strconv.ParseUint(f[11], 10, 64)
		ps.system, _ = strconv.ParseUint(f[12], 10, 64)
		rss, _ := strconv.ParseUint(f[21], 10, 64)
		ps.rss = rss * page
		if st, err := os.ReadFile("/proc/" + e.Name() + "/status"); err == nil {
			for _, line := range strings.Split(string(st), "\n") {
				if v, ok := strings.CutPrefix(line, "VmSwap:"); ok {
					n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					ps.swap = n * 1024
				}
			}
		}
		out[pid] = ps
	}
	return out
}

func (c *Client) handleAllocStats(w http.ResponseWriter, r *http.Request) {
	allocID, ok := allocRequest(w, r, http.MethodGet)
	if !ok {
		return
	}
	if code, err := c.authorizeGrant(r.Context(), r, api.Grant{Op: api.GrantAllocStats, AllocID: allocID}, false); err != nil {
		plainError(w, code, "%v", err)
		return
	}
	// The running tasks and their process groups.
	c.mu.Lock()
	ar := c.runners[allocID]
	tasks := map[string]int{} // task -> pgid (0: no process, the mock driver)
	if ar != nil {
		for _, tr := range ar.tasks {
			if tr.phase == phaseDead {
				continue
			}
			tasks[tr.task.Name] = 0
			if tr.proc != nil {
				tasks[tr.task.Name] = tr.proc.pid
			}
		}
	}
	c.mu.Unlock()
	if ar == nil {
		plainError(w, http.StatusNotFound, "allocation %s is not running on this node", allocID)
		return
	}
	pgids := map[int]bool{}
	for _, pg := range tasks {
		if pg > 0 {
			pgids[pg] = true
		}
	}
	before := groupSamples(pgids)
	start := time.Now()
	if len(pgids) > 0 {
		time.Sleep(sampleWindow)
	}
	after := groupSamples(pgids)
	elapsed := time.Since(start).Seconds()
	now := time.Now().UnixNano()
	mhzPerCore := 0.0
	if ncpu := runtime.NumCPU(); ncpu > 0 {
		mhzPerCore = float64(c.cfg.Resources.CPU) / float64(ncpu)
	}
	usage := func(b, a procSample, hasBefore bool) *api.ResourceUsage {
		cs := &api.CpuStats{Measured: measuredCPU}
		if hasBefore && elapsed > 0 {
			cs.UserMode = float64(a.user-b.user) / clockTicks / elapsed * 100
			cs.SystemMode = float64(a.system-b.system) / clockTicks / elapsed * 100
			cs.Percent = cs.UserMode + cs.SystemMode
			cs.TotalTicks = cs.Percent / 100 * mhzPerCore
		}
		return &api.ResourceUsage{MemoryStats: &api.MemoryStats{RSS: a.rss, Swap: a.swap, Measured: measuredMem}, CpuStats: cs, DeviceStats: []any{}}
	}
	out := &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{}, Timestamp: now,
		ResourceUsage: &api.ResourceUsage{MemoryStats: &api.MemoryStats{Measured: measuredMem}, CpuStats: &api.CpuStats{Measured: measuredCPU}, DeviceStats: []any{}}}
	for name, pg := range tasks {
		tu := &api.TaskResourceUsage{Timestamp: now, Pids: map[string]*api.ResourceUsage{},
			ResourceUsage: &api.ResourceUsage{MemoryStats: &api.MemoryStats{Measured: measuredMem}, CpuStats: &api.CpuStats{Measured: measuredCPU}, DeviceStats: []any{}}}
		if pg > 0 {
			for pid, a := range after {
				if a.pgrp == pg {
					b, ok := before[pid]
					ru := usage(b, a, ok)
					tu.Pids[strconv.Itoa(pid)] = ru
					addUsage(tu.ResourceUsage, ru)
				}
			}
		}
		out.Tasks[name] = tu
		addUsage(out.ResourceUsage, tu.ResourceUsage)
	}
	writeNodeJSON(w, out)
}

func addUsage(sum, ru *api.ResourceUsage) {
	sum.MemoryStats.RSS += ru.MemoryStats.RSS
	sum.MemoryStats.Swap += ru.MemoryStats.Swap
	sum.CpuStats.UserMode += ru.CpuStats.UserMode
	sum.CpuStats.SystemMode += ru.CpuStats.SystemMode
	sum.CpuStats.Percent += ru.CpuStats.Percent
	sum.CpuStats.TotalTicks += ru.CpuStats.TotalTicks
}
