package agent_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
)

func nomadClient(t *testing.T, url string) *nomadapi.Client {
	t.Helper()
	cfg := nomadapi.DefaultConfig()
	cfg.Address = url
	nc, err := nomadapi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// waitServices polls the service's registrations until there are n.
func waitServices(t *testing.T, nc *nomadapi.Client, name string, n int) []*nomadapi.ServiceRegistration {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var regs []*nomadapi.ServiceRegistration
	for time.Now().Before(deadline) {
		var err error
		regs, _, err = nc.Services().Get(name, nil)
		if err != nil {
			t.Fatalf("Services().Get(%s): %v", name, err)
		}
		if len(regs) == n {
			return regs
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("service %s has %d registrations, want %d: %+v", name, len(regs), n, regs)
	return nil
}

// TestNativeServicesEndToEnd: a job with a group service and a task
// service (provider "nomad") on a dev agent: once its two allocations run,
// each has its registrations (Nomad's IDs, the host IP and port of the
// service's label, node, datacenter, job, tags), read through the official
// nomad/api client (List, Get, blocking Get, Delete) and announced on the
// Service event topic; stopping the job deregisters them all.
func TestNativeServicesEndToEnd(t *testing.T) {
	ts := devAgent(t)
	nc := nomadClient(t, ts.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := nc.EventStream().Stream(ctx, map[nomadapi.Topic][]string{"Service": {"*"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}

	job := `{"Job":{"ID":"web","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":2,` +
		`"Networks":[{"DynamicPorts":[{"Label":"http"},{"Label":"admin"}]}],` +
		`"Services":[{"Name":"web","PortLabel":"http","Provider":"nomad","Tags":["v1","public"]}],` +
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{},` +
		`"Services":[{"Name":"${JOB}-admin","PortLabel":"admin","Provider":"nomad"}]}]}]}}`
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", job); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	regs := waitServices(t, nc, "web", 2)
	admin := waitServices(t, nc, "web-admin", 2)
	allocs, _, err := nc.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("allocations: %v %d", err, len(allocs))
	}
	byAlloc := map[string]*nomadapi.ServiceRegistration{}
	for _, r := range regs {
		byAlloc[r.AllocID] = r
	}
	for _, stub := range allocs {
		a, _, err := nc.Allocations().Info(stub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := byAlloc[a.ID]
		if r == nil {
			t.Fatalf("no registration of web for allocation %s: %+v", a.ID, regs)
		}
		var port int
		for _, p := range a.AllocatedResources.Shared.Ports {
			if p.Label == "http" {
				port = p.Value
			}
		}
		if r.ID != "_nomad-task-"+a.ID+"-group-g-web-http" || r.ServiceName != "web" || r.Namespace != "default" ||
			r.NodeID != a.NodeID || r.Datacenter != "dc1" || r.JobID != "web" || r.Address != "127.0.0.1" ||
			r.Port != port || port == 0 || strings.Join(r.Tags, ",") != "v1,public" || r.CreateIndex == 0 || r.ModifyIndex < r.CreateIndex {
			t.Fatalf("registration %+v for allocation %s (http port %d)", r, a.ID, port)
		}
	}
	for _, r := range admin {
		if !strings.HasPrefix(r.ID, "_nomad-task-"+r.AllocID+"-t-web-admin-admin") {
			t.Fatalf("task service registration %+v", r)
		}
	}

	list, _, err := nc.Services().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Namespace != "default" || len(list[0].Services) != 2 ||
		list[0].Services[0].ServiceName != "web" || strings.Join(list[0].Services[0].Tags, ",") != "public,v1" ||
		list[0].Services[1].ServiceName != "web-admin" || len(list[0].Services[1].Tags) != 0 {
		t.Fatalf("Services().List: %+v", list)
	}
	if r := ts.Do(t, http.MethodGet, "/v1/service/nope", ""); r.Status != http.StatusOK || strings.TrimSpace(r.Body) != "[]" {
		t.Fatalf("unknown service: %s", r)
	}

	// A blocking Get wakes on the delete.
	_, meta, err := nc.Services().Get("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	woke := make(chan []*nomadapi.ServiceRegistration, 1)
	go func() {
		regs, _, err := nc.Services().Get("web", &nomadapi.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		woke <- regs
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := nc.Services().Delete("web", regs[0].ID, nil); err != nil {
		t.Fatalf("Services().Delete: %v", err)
	}
	select {
	case got := <-woke:
		if len(got) != 1 || got[0].ID == regs[0].ID {
			t.Fatalf("after the delete: %+v", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the blocking Get did not wake on the delete")
	}
	if r := ts.Do(t, http.MethodDelete, "/v1/service/web/"+regs[0].ID, ""); r.Status != http.StatusNotFound {
		t.Fatalf("second delete: %s", r)
	}

	// Stopping the job deregisters every instance.
	if _, _, err := nc.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatal(err)
	}
	waitServices(t, nc, "web", 0)
	waitServices(t, nc, "web-admin", 0)

	seen := map[string]int{}
	deadline := time.After(10 * time.Second)
	for seen["ServiceDeregistration"] < 4 {
		select {
		case evs := <-events:
			if evs.Err != nil {
				t.Fatal(evs.Err)
			}
			for _, e := range evs.Events {
				if e.Topic != "Service" || !strings.HasPrefix(e.Key, "_nomad-task-") {
					t.Fatalf("event %+v", e)
				}
				seen[e.Type]++
			}
		case <-deadline:
			t.Fatalf("service events: %v", seen)
		}
	}
	if seen["ServiceRegistration"] != 4 {
		t.Fatalf("service events: %v", seen)
	}
}
