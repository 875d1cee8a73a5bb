package state

import (
	"testing"
)

// TestServiceRegistrationsFollowAllocations: the FSM's writes keep the
// registrations in step: none while pending, one per service (group and
// task) once running, with the node's datacenter, the host IP and port of
// the label (the node's address without a port), re-written only when
// something they show changes; removed when the allocation is told to
// stop, and when its node goes down.
func TestServiceRegistrationsFollowAllocations(t *testing.T) {
	s := NewStore()
	idx := uint64(10)
	next := func() uint64 { idx++; return idx }
	node := &Node{ID: planID(1), Name: "n1", Datacenter: "dc7", Status: NodeStatusReady, SchedulingEligibility: NodeSchedulingEligible,
		Resources: Resources{CPU: 10000, MemoryMB: 10000}, Attributes: map[string]string{"unique.network.ip-address": "10.0.0.7"}}
	if err := s.NodeRegister(next(), node, nil); err != nil {
		t.Fatal(err)
	}
	job := &Job{Namespace: "default", ID: "web", Name: "web", Type: JobTypeService, Datacenters: []string{"dc7"},
		TaskGroups: []*TaskGroup{{Name: "g", Count: 1,
			Networks: []*NetworkResource{{Mode: "host", DynamicPorts: []Port{{Label: "http"}}}},
			Services: []*Service{{Name: "web", PortLabel: "http", Provider: "nomad", Tags: []string{"a"}}},
			Tasks: []*Task{{Name: "t", Driver: "mock_driver", Resources: &Resources{CPU: 100, MemoryMB: 10},
				Services: []*Service{{Name: "side", Provider: "nomad"}}}}}}}
	if _, err := s.JobRegister(next(), job, nil); err != nil {
		t.Fatal(err)
	}
	_, job, _ = s.Job(nil, "default", "web")
	a := &Allocation{ID: planID(101), Namespace: "default", EvalID: planID(800), Name: "web.g[0]", NodeID: node.ID,
		JobID: "web", JobVersion: job.Version, TaskGroup: "g", Resources: Resources{CPU: 100, MemoryMB: 10},
		AllocatedPorts: []AllocatedPort{{Label: "http", Value: 20005, HostIP: "10.0.0.7"}}}
	plan := &Plan{EvalID: planID(800), Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex, Placements: []*Allocation{a}, Now: 1}
	if _, err := s.ApplyPlan(next(), plan); err != nil {
		t.Fatal(err)
	}
	regs := func() []*ServiceRegistration {
		_, out, err := s.AllServices(nil, AllNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if r := regs(); len(r) != 0 {
		t.Fatalf("pending allocation registered: %+v", r)
	}
	report := func(status string) uint64 {
		i := next()
		if err := s.AllocsClientUpdate(i, node.ID, []*AllocClientUpdate{{ID: a.ID, ClientStatus: status}}, nil, 2); err != nil {
			t.Fatal(err)
		}
		return i
	}
	running := report(AllocClientStatusRunning)
	r := regs()
	if len(r) != 2 {
		t.Fatalf("registrations %+v", r)
	}
	web, side := r[0], r[1]
	if web.ServiceName != "web" {
		web, side = side, web
	}
	if web.ID != "_nomad-task-"+a.ID+"-group-g-web-http" || web.Address != "10.0.0.7" || web.Port != 20005 || web.Datacenter != "dc7" ||
		web.NodeID != node.ID || web.JobID != "web" || web.AllocID != a.ID || len(web.Tags) != 1 || web.CreateIndex != running || web.ModifyIndex != running {
		t.Fatalf("group service registration %+v", web)
	}
	if side.ID != "_nomad-task-"+a.ID+"-t-side-" || side.Address != "10.0.0.7" || side.Port != 0 {
		t.Fatalf("task service registration %+v", side)
	}
	if got := s.TableIndex(servicesTable); got != running {
		t.Fatalf("services index %d, want %d", got, running)
	}
	// A report that changes nothing they show leaves them alone.
	report(AllocClientStatusRunning)
	if got := s.TableIndex(servicesTable); got != running {
		t.Fatalf("services index moved to %d on an unchanged report", got)
	}
	// The node going down removes them.
	if err := s.NodeUpdateStatus(next(), node.ID, NodeStatusDown, "missed heartbeats", nil, 3); err != nil {
		t.Fatal(err)
	}
	if r := regs(); len(r) != 0 {
		t.Fatalf("registrations of a down node: %+v", r)
	}
	// Back up and running: registered again; told to stop: removed.
	if err := s.NodeUpdateStatus(next(), node.ID, NodeStatusReady, "", nil, 4); err != nil {
		t.Fatal(err)
	}
	report(AllocClientStatusPending)
	report(AllocClientStatusRunning)
	if r := regs(); len(r) != 2 {
		t.Fatalf("registrations after the node came back: %+v", r)
	}
	stop := &Plan{EvalID: planID(801), Namespace: "default", JobID: "web", JobModifyIndex: job.JobModifyIndex, Now: 5,
		Stops: []*AllocStop{{AllocID: a.ID, DesiredDescription: "alloc not needed"}}}
	if _, err := s.ApplyPlan(next(), stop); err != nil {
		t.Fatal(err)
	}
	if r := regs(); len(r) != 0 {
		t.Fatalf("registrations of a stopped allocation: %+v", r)
	}
	// An operator's delete of an unknown registration is a not-found.
	wantStateError(t, s.ServiceDelete(next(), "default", "web", "nope"), ErrNotFound, "service registration not found")
}
