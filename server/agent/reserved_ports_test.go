package agent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// portOf is the port of a host:port address.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}

// portJob is a mock job of one group in dc whose network asks for ports
// (a JSON list of static ports, and one dynamic port when dynamic).
func portJob(id, dc string, static []int, dynamic bool) string {
	reserved := "["
	for i, p := range static {
		if i > 0 {
			reserved += ","
		}
		reserved += fmt.Sprintf(`{"Label":"p%d","Value":%d}`, i, p)
	}
	reserved += "]"
	dyn := "[]"
	if dynamic {
		dyn = `[{"Label":"dyn"}]`
	}
	return fmt.Sprintf(`{"Job":{"ID":%q,"Datacenters":[%q],"TaskGroups":[{"Name":"g","Count":1,`+
		`"Networks":[{"ReservedPorts":%s,"DynamicPorts":%s}],`+
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{}}]}]}}`, id, dc, reserved, dyn)
}

// placement waits until the job's first evaluation is done: the number of
// allocations it placed and whether a blocked evaluation waits for room.
func placement(t *testing.T, ts *servertest.TestServer, job string) (allocs int, blocked bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var evals []struct{ Status string }
		ts.Do(t, http.MethodGet, "/v1/job/"+job+"/evaluations", "").JSON(t, &evals)
		done := len(evals) > 0
		for _, e := range evals {
			if e.Status == "pending" {
				done = false
			}
			if e.Status == "blocked" {
				blocked = true
			}
		}
		if done {
			var stubs []struct{ ID string }
			ts.Do(t, http.MethodGet, "/v1/job/"+job+"/allocations", "").JSON(t, &stubs)
			return len(stubs), blocked
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the evaluation of job %s did not finish", job)
	return 0, false
}

// Issue 31, finding 6: the ports an agent listens on are its node's
// reserved ports: a dev node reserves the server's HTTP and Raft ports and
// its own API's, a client agent its own API's, so no allocation gets one,
// as a static port (the node is infeasible, the evaluation blocks) or as a
// dynamic one.
func TestAgentPortsAreNeverHandedOut(t *testing.T) {
	// Persistent: Raft over TCP, so the agent has a Raft port too.
	ts := devAgent(t, servertest.Persistent(t.TempDir()))
	var nodes []struct{ ID, HTTPAddr string }
	ts.Do(t, http.MethodGet, "/v1/nodes", "").JSON(t, &nodes)
	if len(nodes) != 1 || nodes[0].HTTPAddr == "" {
		t.Fatalf("dev nodes %+v", nodes)
	}
	var node struct {
		HTTPAddr          string
		ReservedResources struct {
			Networks struct{ ReservedHostPorts string }
		}
	}
	ts.Do(t, http.MethodGet, "/v1/node/"+nodes[0].ID, "").JSON(t, &node)
	own := map[string]int{
		"the server's HTTP port":   portOf(t, ts.HTTPAddr()),
		"the server's Raft port":   portOf(t, ts.RaftAddr()),
		"the dev client's own API": portOf(t, node.HTTPAddr),
	}
	for what, port := range own {
		t.Run(what, func(t *testing.T) {
			job := fmt.Sprintf("static-%d", port)
			if r := ts.Do(t, http.MethodPost, "/v1/jobs", portJob(job, "dc1", []int{port}, false)); r.Status != http.StatusOK {
				t.Fatalf("register: %s", r)
			}
			if n, blocked := placement(t, ts, job); n != 0 || !blocked {
				t.Errorf("a static port %d (%s): %d allocations, blocked %v; want none and a blocked evaluation (reserved ports %q)",
					port, what, n, blocked, node.ReservedResources.Networks.ReservedHostPorts)
			}
		})
	}
	// A free static port is placed on the same node.
	free := portOf(t, servertest.FreeAddr(t))
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", portJob("free", "dc1", []int{free}, false)); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	if n, blocked := placement(t, ts, "free"); n != 1 || blocked {
		t.Fatalf("a free static port %d: %d allocations, blocked %v", free, n, blocked)
	}

	// A client whose dynamic range is its own API's port alone has no
	// dynamic port to give.
	addr := servertest.FreeAddr(t)
	p := portOf(t, addr)
	c, err := client.New(client.Config{Servers: []string{ts.URL}, NodeName: "narrow", Datacenter: "dc2", TestDrivers: true,
		HTTPAddr: addr, MinDynamicPort: p, MaxDynamicPort: p, Resources: api.Resources{CPU: 1000, MemoryMB: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-c.Registered():
	case <-time.After(20 * time.Second):
		t.Fatal("the narrow client did not register")
	}
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", portJob("dynamic", "dc2", nil, true)); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	if n, blocked := placement(t, ts, "dynamic"); n != 0 || !blocked {
		t.Errorf("a dynamic port on a node whose range is its API's port %d: %d allocations, blocked %v", p, n, blocked)
	}
	if r := ts.Do(t, http.MethodPost, "/v1/jobs", portJob("portless", "dc2", nil, false)); r.Status != http.StatusOK {
		t.Fatalf("register: %s", r)
	}
	if n, blocked := placement(t, ts, "portless"); n != 1 || blocked {
		t.Fatalf("a job without ports on the narrow client: %d allocations, blocked %v", n, blocked)
	}
}
