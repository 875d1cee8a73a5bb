package http

import (
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// allocDetail is an allocation as Nomad's GET /v1/allocation/:id answers
// it: the stored allocation with its job (at the allocation's version) and
// the resource views `nomad alloc status` reads, never nil. Lists keep
// their stubs.
type allocDetail struct {
	*state.Allocation
	Job                *state.Job
	Resources          *allocResources
	TaskResources      map[string]*allocResources
	AllocatedResources *allocatedResources
	Metrics            *allocMetric
	// AllocatedPorts is stored state, answered in Nomad's places
	// (AllocatedResources.Shared.Ports, Resources.Networks).
	AllocatedPorts struct{} `json:"-"`
}

// allocResources is Nomad's (deprecated, still read) Resources block.
type allocResources struct {
	CPU      int
	MemoryMB int
	DiskMB   int
	Networks []*allocNetwork
}

// allocNetwork is Nomad's NetworkResource as an allocation got it: the
// group's network with its host IP and every port's host value.
type allocNetwork struct {
	Mode          string
	Device        string
	CIDR          string
	IP            string
	MBits         int
	DNS           *struct{}
	ReservedPorts []state.Port
	DynamicPorts  []state.Port
	Hostname      string
}

// allocatedResources is Nomad's AllocatedResources: per task CPU and
// memory, the group's network and host ports shared by its tasks.
type allocatedResources struct {
	Tasks  map[string]*allocatedTask
	Shared struct {
		DiskMB   int
		Networks []*allocNetwork
		Ports    []state.AllocatedPort
	}
}

type allocatedTask struct {
	Cpu struct {
		CpuShares int64
	}
	Memory struct {
		MemoryMB int64
	}
	Networks []struct{}
}

// allocMetric is Nomad's AllocationMetric: the scheduler's metric of the
// allocation's placement, maps and lists never null (allocations placed
// before metrics were kept answer zeros).
type allocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	Scores             map[string]float64
	AllocationTime     int64
	CoalescedFailures  int
	ScoreMetaData      []*state.NodeScoreMeta
}

// viewAllocMetric is m in Nomad's wire shape (nil: zero counters).
func viewAllocMetric(m *state.AllocMetric) *allocMetric {
	if m == nil {
		m = &state.AllocMetric{}
	}
	v := &allocMetric{
		NodesEvaluated: m.NodesEvaluated, NodesFiltered: m.NodesFiltered, NodesInPool: m.NodesInPool,
		NodesAvailable: orEmpty(m.NodesAvailable), ClassFiltered: orEmpty(m.ClassFiltered),
		ConstraintFiltered: orEmpty(m.ConstraintFiltered), NodesExhausted: m.NodesExhausted,
		ClassExhausted: orEmpty(m.ClassExhausted), DimensionExhausted: orEmpty(m.DimensionExhausted),
		QuotaExhausted: m.QuotaExhausted, Scores: map[string]float64{}, ScoreMetaData: m.ScoreMetaData,
		AllocationTime: m.AllocationTime, CoalescedFailures: m.CoalescedFailures,
	}
	if v.QuotaExhausted == nil {
		v.QuotaExhausted = []string{}
	}
	if v.ScoreMetaData == nil {
		v.ScoreMetaData = []*state.NodeScoreMeta{}
	}
	return v
}

func orEmpty(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// readAllocDetail reads an allocation and resolves its job at its version
// (nil allocation: not found). A version that is gone (a purged job) is
// stood in for by the current job, or by a job of the allocation's group
// and the tasks it reported, so that Job is never nil.
func readAllocDetail(ws memdb.WatchSet, s *state.Store, id string) (uint64, *allocDetail, error) {
	idx, a, err := s.Alloc(ws, id)
	if err != nil || a == nil {
		return idx, nil, err
	}
	_, job, err := s.JobVersion(ws, a.Namespace, a.JobID, a.JobVersion)
	if err != nil {
		return 0, nil, err
	}
	if job == nil {
		if _, job, err = s.Job(ws, a.Namespace, a.JobID); err != nil {
			return 0, nil, err
		}
	}
	if job == nil || job.LookupTaskGroup(a.TaskGroup) == nil {
		job = standInJob(a)
	}
	d := &allocDetail{
		Allocation: a, Job: job,
		Resources:          &allocResources{CPU: a.Resources.CPU, MemoryMB: a.Resources.MemoryMB},
		TaskResources:      map[string]*allocResources{},
		AllocatedResources: &allocatedResources{Tasks: map[string]*allocatedTask{}},
		Metrics:            viewAllocMetric(a.Metrics),
	}
	tg := job.LookupTaskGroup(a.TaskGroup)
	nets := allocNetworks(tg, a.AllocatedPorts)
	d.Resources.Networks, d.AllocatedResources.Shared.Networks = nets, nets
	d.AllocatedResources.Shared.Ports = append([]state.AllocatedPort{}, a.AllocatedPorts...)
	for _, t := range tg.Tasks {
		var r state.Resources
		if t.Resources != nil {
			r = *t.Resources
		}
		d.TaskResources[t.Name] = &allocResources{CPU: r.CPU, MemoryMB: r.MemoryMB, Networks: []*allocNetwork{}}
		at := &allocatedTask{Networks: []struct{}{}}
		at.Cpu.CpuShares, at.Memory.MemoryMB = int64(r.CPU), int64(r.MemoryMB)
		d.AllocatedResources.Tasks[t.Name] = at
	}
	return idx, d, nil
}

// allocNetworks is the group's network block with the ports the
// allocation got (never nil; empty without a network block).
func allocNetworks(tg *state.TaskGroup, ports []state.AllocatedPort) []*allocNetwork {
	out := []*allocNetwork{}
	got := map[string]state.AllocatedPort{}
	ip := ""
	for _, p := range ports {
		got[p.Label], ip = p, p.HostIP
	}
	for _, nw := range tg.Networks {
		n := &allocNetwork{Mode: nw.Mode, IP: ip, ReservedPorts: []state.Port{}, DynamicPorts: []state.Port{}}
		n.ReservedPorts = append(n.ReservedPorts, nw.ReservedPorts...)
		for _, p := range nw.DynamicPorts {
			if g, ok := got[p.Label]; ok {
				p.Value, p.To = g.Value, g.To
			}
			n.DynamicPorts = append(n.DynamicPorts, p)
		}
		out = append(out, n)
	}
	return out
}

// standInJob is the job of an allocation whose job is gone: its ID,
// version and group, with the tasks the client reported.
func standInJob(a *state.Allocation) *state.Job {
	tg := &state.TaskGroup{Name: a.TaskGroup, Count: 1}
	for name := range a.TaskStates {
		tg.Tasks = append(tg.Tasks, &state.Task{Name: name})
	}
	return &state.Job{Namespace: a.Namespace, ID: a.JobID, Name: a.JobID, Type: state.JobTypeService,
		Version: a.JobVersion, Status: state.JobStatusDead, TaskGroups: []*state.TaskGroup{tg}}
}
