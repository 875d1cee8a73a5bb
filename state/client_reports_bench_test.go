package state

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkAllocsClientUpdates applies the nodes' reports as orchbench's
// placement run makes them: 50 jobs × 1,000 allocations (a deployment and
// an evaluation each) packed onto 16 nodes, each report the allocation
// running and healthy, 4 nodes × 250 reports an entry.
func BenchmarkAllocsClientUpdates(b *testing.B) {
	s := NewStore()
	idx := uint64(10)
	next := func() uint64 { idx++; return idx }
	var nodes []*Node
	for i := range 16 {
		n := &Node{ID: uuid.NewString(), Name: fmt.Sprint("n", i), Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible,
			Resources: Resources{CPU: 1 << 30, MemoryMB: 1 << 30}}
		if err := s.NodeRegister(next(), n, nil); err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	byNode := map[string][]string{}
	placed := 0
	for j := range 50 {
		job := &Job{Namespace: "default", ID: fmt.Sprint("place-", j), Type: JobTypeService, Datacenters: []string{"dc1"},
			TaskGroups: []*TaskGroup{{Name: "g", Count: 1000, Update: &UpdateStrategy{MaxParallel: 1000},
				Tasks: []*Task{{Name: "t", Driver: "mock_driver", Resources: &Resources{CPU: 10, MemoryMB: 16}}}}}}
		if _, err := s.JobRegister(next(), job, nil); err != nil {
			b.Fatal(err)
		}
		_, job, _ = s.Job(nil, "default", job.ID)
		d := &Deployment{ID: uuid.NewString(), Namespace: "default", JobID: job.ID, JobVersion: job.Version,
			JobModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex, Status: DeploymentStatusRunning,
			TaskGroups: map[string]*DeploymentState{"g": {DesiredTotal: 1000}}}
		p := &Plan{EvalID: uuid.NewString(), Namespace: "default", JobID: job.ID, JobModifyIndex: job.JobModifyIndex, Deployment: d, Now: 1}
		for i := range 1000 {
			n := nodes[placed/(50*1000/16+1)]
			placed++
			a := &Allocation{ID: uuid.NewString(), Namespace: "default", EvalID: p.EvalID, Name: fmt.Sprintf("%s.g[%d]", job.ID, i),
				NodeID: n.ID, JobID: job.ID, JobVersion: job.Version, TaskGroup: "g", Resources: Resources{CPU: 10, MemoryMB: 16},
				DeploymentID: d.ID, DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusPending}
			p.Placements = append(p.Placements, a)
			byNode[n.ID] = append(byNode[n.ID], a.ID)
		}
		if res, err := s.ApplyPlan(next(), p); err != nil || res.Refused != "" {
			b.Fatalf("plan: %v %+v", err, res)
		}
	}
	healthy := true
	report := func(id string) *AllocClientUpdate {
		return &AllocClientUpdate{ID: id, ClientStatus: AllocClientStatusRunning, ClientDescription: "Tasks are running",
			TaskStates: map[string]*TaskState{"t": {State: TaskStateRunning, Events: []*TaskEvent{
				{Type: "Received", Time: 1}, {Type: "Task Setup", Time: 2}, {Type: "Started", Time: 3}}}},
			DeploymentStatus: &AllocDeploymentStatus{Healthy: &healthy}}
	}
	r := rand.New(rand.NewPCG(1, 2))
	pos := map[string]int{}
	b.ResetTimer()
	for range b.N {
		var entry []*NodeAllocReports
		for range 4 {
			n := nodes[r.IntN(len(nodes))]
			ids := byNode[n.ID]
			var ups []*AllocClientUpdate
			for range 250 {
				ups = append(ups, report(ids[pos[n.ID]%len(ids)]))
				pos[n.ID]++
			}
			entry = append(entry, &NodeAllocReports{NodeID: n.ID, Updates: ups, Now: 5})
		}
		if err := s.AllocsClientUpdates(next(), entry); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/report")
}
