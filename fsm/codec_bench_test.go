package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// benchPlan is a plan of n placements as the scheduler makes them.
func benchPlan(n int) *state.Plan {
	p := &state.Plan{EvalID: "0b5e8d2c-4a5f-4e57-9c0e-1f7a7d2b9e11", Namespace: "default", JobID: "place-1", JobModifyIndex: 12, Now: time.Now().UnixNano()}
	for i := range n {
		p.Placements = append(p.Placements, &state.Allocation{
			ID: fmt.Sprintf("%08d-4a5f-4e57-9c0e-1f7a7d2b9e11", i), Namespace: "default", EvalID: p.EvalID,
			Name: fmt.Sprintf("place-1.g[%d]", i), NodeID: fmt.Sprintf("%08d-node-4e57-9c0e-1f7a7d2b9e11", i%1000), NodeName: fmt.Sprint("sim-", i%1000),
			JobID: "place-1", TaskGroup: "g", Resources: state.Resources{CPU: 10, MemoryMB: 16},
			DesiredStatus: "run", ClientStatus: "pending", DeploymentID: "7c0e1f7a-4a5f-4e57-9c0e-1f7a7d2b9e11",
			Metrics: &state.AllocMetric{NodesEvaluated: 1000, NodesInPool: 1000, NodesAvailable: map[string]int{"dc1": 1000},
				ScoreMetaData: []*state.NodeScoreMeta{{NodeID: "n1", Scores: map[string]float64{"binpack": 0.5, "job-anti-affinity": 0}, NormScore: 0.25}}},
			CreateTime: p.Now, ModifyTime: p.Now,
		})
	}
	return p
}

// benchReports is one batch of n running reports, as the nodes send them.
func benchReports(n int) *AllocClientUpdatesRequest {
	now := time.Now()
	var r AllocClientUpdatesRequest
	for i := range n {
		r.Nodes = append(r.Nodes, &state.NodeAllocReports{NodeID: fmt.Sprintf("%08d-node", i), Now: now.UnixNano(),
			Updates: []*state.AllocClientUpdate{{ID: fmt.Sprintf("%08d-alloc", i), ClientStatus: "running",
				TaskStates: map[string]*state.TaskState{"t": {State: "running", StartedAt: now,
					Events: []*state.TaskEvent{{Type: "Received", Time: now.UnixNano()}, {Type: "Started", Time: now.UnixNano()}}}},
				DeploymentStatus: &state.AllocDeploymentStatus{Healthy: new(true), Timestamp: now}}}})
	}
	return &r
}

// BenchmarkEntryCodec encodes and decodes the orchestrator's two largest
// entries: what the leader pays to write them, and every server to apply them.
func BenchmarkEntryCodec(b *testing.B) {
	for _, c := range []struct {
		name string
		req  any
		out  func() any
	}{
		{"plan-1000", &PlanApplyEvalsRequest{Plan: benchPlan(1000)}, func() any { return new(PlanApplyEvalsRequest) }},
		{"reports-1000", benchReports(1000), func() any { return new(AllocClientUpdatesRequest) }},
	} {
		buf, err := Encode(0, c.req)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				if _, err := Encode(0, c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				if err := decode(buf[1:], c.out()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
