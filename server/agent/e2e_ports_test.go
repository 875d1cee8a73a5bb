package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
)

// TestPortsEndToEnd: on a dev agent, a raw_exec task of a group with a
// network block (a dynamic port and a static one mapped with to) sees
// Nomad's port variables; what it prints (read through the logs endpoint)
// matches the allocation's AllocatedResources.Shared.Ports and
// Resources.Networks, as GET /v1/allocation and the official nomad/api
// client read them.
func TestPortsEndToEnd(t *testing.T) {
	skipProcessInShort(t)
	ts := devAgent(t)
	script := `echo "port=$NOMAD_PORT_http host=$NOMAD_HOST_PORT_http addr=$NOMAD_ADDR_http ip=$NOMAD_IP_http db=$NOMAD_PORT_db dbhost=$NOMAD_HOST_PORT_db alloc=$NOMAD_ALLOC_PORT_db"; exec sleep 60`
	job := `{"Job":{"ID":"web","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,` +
		`"Networks":[{"DynamicPorts":[{"Label":"http"}],"ReservedPorts":[{"Label":"db","Value":15432,"To":5432}]}],` +
		`"Tasks":[{"Name":"t","Driver":"raw_exec","KillTimeout":1000000000,"Config":{"command":"/bin/sh","args":["-c",` + fmt.Sprintf("%q", script) + `]}}]}]}}`
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", job); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	t.Cleanup(func() { ts.Do(t, http.MethodDelete, "/v1/job/web?purge=true", "") })

	var id string
	var alloc struct {
		ClientStatus       string
		AllocatedResources struct {
			Shared struct {
				Ports []struct {
					Label  string
					Value  int
					To     int
					HostIP string
				}
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for alloc.ClientStatus != "running" {
		if time.Now().After(deadline) {
			t.Fatalf("the allocation did not run: %+v", alloc)
		}
		time.Sleep(20 * time.Millisecond)
		var stubs []struct{ ID string }
		ts.Do(t, http.MethodGet, "/v1/job/web/allocations", "").JSON(t, &stubs)
		if len(stubs) == 1 {
			id = stubs[0].ID
			ts.Do(t, http.MethodGet, "/v1/allocation/"+id, "").JSON(t, &alloc)
		}
	}
	ports := alloc.AllocatedResources.Shared.Ports
	if len(ports) != 2 || ports[0].Label != "db" || ports[0].Value != 15432 || ports[0].To != 5432 || ports[0].HostIP != "127.0.0.1" ||
		ports[1].Label != "http" || ports[1].Value < ts.Config.DevMinDynamicPort || ports[1].Value > ts.Config.DevMaxDynamicPort || ports[1].HostIP != "127.0.0.1" {
		t.Fatalf("AllocatedResources.Shared.Ports %+v", ports)
	}
	hp := ports[1].Value
	want := fmt.Sprintf("port=%d host=%d addr=127.0.0.1:%d ip=127.0.0.1 db=5432 dbhost=15432 alloc=5432\n", hp, hp, hp)
	var out string
	for time.Now().Before(deadline) && out != want {
		time.Sleep(20 * time.Millisecond)
		out = ts.Do(t, "GET", "/v1/client/fs/logs/"+id+"?task=t&type=stdout&plain=true", "").Body
	}
	if out != want {
		t.Fatalf("the task printed %q, want %q", out, want)
	}

	// The official client reads the same ports.
	cfg := nomadapi.DefaultConfig()
	cfg.Address = ts.URL
	nc, err := nomadapi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	na, _, err := nc.Allocations().Info(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	np := na.AllocatedResources.Shared.Ports
	if len(np) != 2 || np[1] != (nomadapi.PortMapping{Label: "http", Value: hp, HostIP: "127.0.0.1"}) ||
		np[0] != (nomadapi.PortMapping{Label: "db", Value: 15432, To: 5432, HostIP: "127.0.0.1"}) {
		t.Fatalf("nomad/api Shared.Ports %+v", np)
	}
	nets := na.Resources.Networks
	if len(nets) != 1 || nets[0].IP != "127.0.0.1" || len(nets[0].DynamicPorts) != 1 || nets[0].DynamicPorts[0].Value != hp ||
		len(nets[0].ReservedPorts) != 1 || nets[0].ReservedPorts[0].Value != 15432 || nets[0].ReservedPorts[0].To != 5432 {
		t.Fatalf("nomad/api Resources.Networks %+v", nets)
	}
	if s := na.AllocatedResources.Shared.Networks; len(s) != 1 || s[0].DynamicPorts[0].Label != "http" {
		t.Fatalf("nomad/api Shared.Networks %+v", s)
	}

	// A job the official client registers (its canonicalized body) gets
	// its own dynamic port on the same node; its static port collides.
	nj := nomadapi.NewServiceJob("other", "other", "global", 50)
	nj.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("g", 1)
	tg.Networks = []*nomadapi.NetworkResource{{DynamicPorts: []nomadapi.Port{{Label: "http"}}}}
	tg.AddTask(nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1h"))
	nj.AddTaskGroup(tg)
	if _, _, err := nc.Jobs().Register(nj, nil); err != nil {
		t.Fatalf("nomad/api register: %v", err)
	}
	t.Cleanup(func() { ts.Do(t, http.MethodDelete, "/v1/job/other?purge=true", "") })
	var other []*nomadapi.AllocationListStub
	for time.Now().Before(deadline) && len(other) == 0 {
		time.Sleep(20 * time.Millisecond)
		if other, _, err = nc.Jobs().Allocations("other", false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(other) != 1 {
		t.Fatalf("other's allocations: %+v", other)
	}
	oa, _, err := nc.Allocations().Info(other[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if op := oa.AllocatedResources.Shared.Ports; len(op) != 1 || op[0].Label != "http" || op[0].Value == hp || op[0].Value < ts.Config.DevMinDynamicPort {
		t.Fatalf("other's ports %+v (web has %d)", op, hp)
	}

	clash := strings.Replace(strings.Replace(job, `"ID":"web"`, `"ID":"clash"`, 1), `"DynamicPorts":[{"Label":"http"}],`, "", 1)
	var reg struct{ EvalID string }
	ts.Do(t, http.MethodPost, "/v1/jobs", clash).JSON(t, &reg)
	t.Cleanup(func() { ts.Do(t, http.MethodDelete, "/v1/job/clash?purge=true", "") })
	var ev struct {
		Status         string
		FailedTGAllocs map[string]struct{ DimensionExhausted map[string]int }
	}
	for time.Now().Before(deadline) && ev.Status != "complete" {
		time.Sleep(20 * time.Millisecond)
		ts.Do(t, http.MethodGet, "/v1/evaluation/"+reg.EvalID, "").JSON(t, &ev)
	}
	if got := ev.FailedTGAllocs["g"].DimensionExhausted; ev.Status != "complete" || got["network: reserved port collision db=15432"] != 1 {
		t.Fatalf("clash evaluation %+v", ev)
	}
}
