package api

import "time"

// Shapes of a node's own API (files, stats, lifecycle), as Nomad's.

// AllocFileInfo is a file of an allocation directory (ls, stat).
type AllocFileInfo struct {
	Name        string
	IsDir       bool
	Size        int64
	FileMode    string
	ModTime     time.Time
	ContentType string `json:",omitempty"`
}

// StreamFrame is one frame of a framed stream (logs without plain=true).
type StreamFrame struct {
	Offset    int64  `json:",omitempty"`
	Data      []byte `json:",omitempty"`
	File      string `json:",omitempty"`
	FileEvent string `json:",omitempty"`
}

// HostStats is a node's host usage (GET /v1/client/stats).
type HostStats struct {
	Memory           *HostMemoryStats
	CPU              []*HostCPUStats
	DiskStats        []*HostDiskStats
	AllocDirStats    *HostDiskStats
	DeviceStats      []any
	Uptime           uint64
	Timestamp        int64
	CPUTicksConsumed float64
}

type HostMemoryStats struct {
	Total     uint64
	Available uint64
	Used      uint64
	Free      uint64
}

type HostCPUStats struct {
	CPU    string
	User   float64
	System float64
	Idle   float64
}

type HostDiskStats struct {
	Device            string
	Mountpoint        string
	Size              uint64
	Used              uint64
	Available         uint64
	UsedPercent       float64
	InodesUsedPercent float64
}

// MemoryStats and CpuStats are a task's (or a process's) usage.
type MemoryStats struct {
	RSS            uint64
	Cache          uint64
	Swap           uint64
	Usage          uint64
	MaxUsage       uint64
	KernelUsage    uint64
	KernelMaxUsage uint64
	Measured       []string
}

type CpuStats struct {
	SystemMode       float64
	UserMode         float64
	TotalTicks       float64
	ThrottledPeriods uint64
	ThrottledTime    uint64
	Percent          float64
	Measured         []string
}

type ResourceUsage struct {
	MemoryStats *MemoryStats
	CpuStats    *CpuStats
	DeviceStats []any
}

// TaskResourceUsage is a task's usage, summed over its processes.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	Timestamp     int64
	Pids          map[string]*ResourceUsage
}

// AllocResourceUsage is an allocation's usage (GET /v1/client/allocation/:id/stats).
type AllocResourceUsage struct {
	ResourceUsage *ResourceUsage
	Tasks         map[string]*TaskResourceUsage
	Timestamp     int64
}

// AllocationRestartRequest is the body of /v1/client/allocation/:id/restart.
type AllocationRestartRequest struct {
	TaskName string
	AllTasks bool
}

// AllocSignalRequest is the body of /v1/client/allocation/:id/signal.
type AllocSignalRequest struct {
	Task   string
	Signal string
}

// TaskSignaling is the event of a signal sent to a task.
const TaskSignaling = "Signaling"
