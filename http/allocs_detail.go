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
}

// allocResources is Nomad's (deprecated, still read) Resources block.
type allocResources struct {
	CPU      int
	MemoryMB int
	DiskMB   int
	Networks []struct{}
}

// allocatedResources is Nomad's AllocatedResources: per task CPU and
// memory; no networks or ports (ctlplane does not allocate them).
type allocatedResources struct {
	Tasks  map[string]*allocatedTask
	Shared struct {
		DiskMB   int
		Networks []struct{}
		Ports    []struct{}
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

// allocMetric is Nomad's AllocationMetric. The scheduler keeps no placement
// metrics per allocation: the counters are zero, the maps empty.
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
	ScoreMetaData      []struct{}
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
		Resources:          &allocResources{CPU: a.Resources.CPU, MemoryMB: a.Resources.MemoryMB, Networks: []struct{}{}},
		TaskResources:      map[string]*allocResources{},
		AllocatedResources: &allocatedResources{Tasks: map[string]*allocatedTask{}},
		Metrics: &allocMetric{NodesAvailable: map[string]int{}, ClassFiltered: map[string]int{}, ConstraintFiltered: map[string]int{},
			ClassExhausted: map[string]int{}, DimensionExhausted: map[string]int{}, QuotaExhausted: []string{},
			Scores: map[string]float64{}, ScoreMetaData: []struct{}{}},
	}
	d.AllocatedResources.Shared.Networks, d.AllocatedResources.Shared.Ports = []struct{}{}, []struct{}{}
	for _, t := range job.LookupTaskGroup(a.TaskGroup).Tasks {
		var r state.Resources
		if t.Resources != nil {
			r = *t.Resources
		}
		d.TaskResources[t.Name] = &allocResources{CPU: r.CPU, MemoryMB: r.MemoryMB, Networks: []struct{}{}}
		at := &allocatedTask{Networks: []struct{}{}}
		at.Cpu.CpuShares, at.Memory.MemoryMB = int64(r.CPU), int64(r.MemoryMB)
		d.AllocatedResources.Tasks[t.Name] = at
	}
	return idx, d, nil
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
