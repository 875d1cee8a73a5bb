package scheduler

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// portNode registers a ready node with a dynamic port range (0: Nomad's
// default) and reserved ports.
func (h *harness) portNode(name string, lo, hi int, reserved ...int) *state.Node {
	h.t.Helper()
	n := &state.Node{
		ID: uuid.NewString(), Name: name, Datacenter: "dc1",
		Drivers:   map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}},
		Resources: state.Resources{CPU: 100000, MemoryMB: 100000}, MinDynamicPort: lo, MaxDynamicPort: hi, ReservedPorts: reserved,
		Attributes: map[string]string{"unique.network.ip-address": "10.0.0." + strings.TrimPrefix(name, "n")},
		Status:     state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible,
	}
	if err := h.store.NodeRegister(h.next(), n, nil); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func withPorts(static map[string]int, dynamic ...string) jobOpt {
	return func(j *state.Job) {
		nw := &state.NetworkResource{Mode: "host"}
		for _, label := range sortedKeys(static) {
			nw.ReservedPorts = append(nw.ReservedPorts, state.Port{Label: label, Value: static[label], To: static[label], HostNetwork: "default"})
		}
		for _, label := range dynamic {
			nw.DynamicPorts = append(nw.DynamicPorts, state.Port{Label: label, HostNetwork: "default"})
		}
		j.TaskGroups[0].Networks = []*state.NetworkResource{nw}
	}
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestPortsStaticCollision: a static port a node already hands out (to a
// live allocation, or as one of its reserved ports) makes the node
// infeasible, with Nomad's metric "network: reserved port collision
// <label>=<port>"; once the holder stops, the port is free again.
func TestPortsStaticCollision(t *testing.T) {
	h := newHarness(t)
	h.portNode("n1", 0, 0)
	h.portNode("n2", 0, 0)
	h.portNode("n3", 0, 0, 8080) // keeps 8080 for itself
	h.process(h.register(testJob("a", 2, withPorts(map[string]int{"http": 8080}))))
	live := h.live("a")
	if len(live) != 2 || live[0].NodeID == live[1].NodeID {
		t.Fatalf("a's allocations: %+v", live)
	}
	for _, a := range live {
		if len(a.AllocatedPorts) != 1 || a.AllocatedPorts[0] != (state.AllocatedPort{Label: "http", Value: 8080, To: 8080, HostIP: a.AllocatedPorts[0].HostIP}) ||
			!strings.HasPrefix(a.AllocatedPorts[0].HostIP, "10.0.0.") {
			t.Fatalf("ports of %s: %+v", a.Name, a.AllocatedPorts)
		}
	}
	e := h.process(h.register(testJob("b", 1, withPorts(map[string]int{"http": 8080}))))
	m := e.FailedTGAllocs["web"]
	if m == nil || m.NodesEvaluated != 3 || m.NodesExhausted != 3 ||
		!reflect.DeepEqual(m.DimensionExhausted, map[string]int{"network: reserved port collision http=8080": 3}) {
		t.Fatalf("metric %+v", m)
	}
	if e.BlockedEval == "" || len(h.live("b")) != 0 {
		t.Fatalf("blocked %q, live %d", e.BlockedEval, len(h.live("b")))
	}
	// Stopping a frees its ports: b fits on n1 or n2 (never n3).
	j := testJob("a", 2, withPorts(map[string]int{"http": 8080}))
	j.Stop = true
	h.process(h.register(j))
	h.run("b", state.EvalTriggerJobRegister)
	got := h.live("b")
	if len(got) != 1 || got[0].AllocatedPorts[0].Value != 8080 || got[0].NodeName == "n3" {
		t.Fatalf("b after a stopped: %+v", got)
	}
}

// TestPortsDynamicUniquePerNode: dynamic ports come from the node's range
// (Nomad's default 20000–32000), the lowest free first, never one another
// allocation on the node holds, nor a static port of the same group; a node
// whose range is used up is exhausted with Nomad's "network: dynamic port
// selection failed".
func TestPortsDynamicUniquePerNode(t *testing.T) {
	h := newHarness(t)
	h.portNode("n1", 0, 0, 20001)
	h.process(h.register(testJob("a", 1, withPorts(map[string]int{"admin": 20002}, "http", "grpc"))))
	h.process(h.register(testJob("x", 3, withPorts(nil, "http", "grpc"))))
	h.process(h.register(testJob("b", 1, withPorts(nil, "http"))))
	seen := map[int]string{}
	for _, a := range append(append(h.live("a"), h.live("x")...), h.live("b")...) {
		for _, p := range a.AllocatedPorts {
			if other, dup := seen[p.Value]; dup {
				t.Fatalf("port %d of %s also held by %s", p.Value, a.Name, other)
			}
			seen[p.Value] = a.Name + "/" + p.Label
			if p.Label != "admin" && (p.Value < state.DefaultMinDynamicPort || p.Value > state.DefaultMaxDynamicPort) {
				t.Fatalf("dynamic port %d out of range", p.Value)
			}
		}
	}
	// a[0] gets the lowest free ports: 20000, then 20003 (20001 is
	// reserved, 20002 is a's static port).
	want := []state.AllocatedPort{{Label: "admin", Value: 20002, To: 20002, HostIP: "10.0.0.1"},
		{Label: "http", Value: 20000, HostIP: "10.0.0.1"}, {Label: "grpc", Value: 20003, HostIP: "10.0.0.1"}}
	if got := h.live("a")[0].AllocatedPorts; !reflect.DeepEqual(got, want) {
		t.Fatalf("a[0] ports %+v, want %+v", got, want)
	}
	if len(seen) != 3+3*2+1 || seen[20010] != "b.web[0]/http" {
		t.Fatalf("ports %v", seen)
	}

	h2 := newHarness(t)
	h2.portNode("n1", 30000, 30002)
	e := h2.process(h2.register(testJob("c", 2, withPorts(nil, "http", "grpc"))))
	if len(h2.live("c")) != 1 {
		t.Fatalf("live %d", len(h2.live("c")))
	}
	m := e.FailedTGAllocs["web"]
	if m == nil || m.NodesExhausted != 1 || !reflect.DeepEqual(m.DimensionExhausted, map[string]int{dimensionDynamicPorts: 1}) {
		t.Fatalf("metric %+v", m)
	}
}

// TestPortsNeverSharedProperty: over random registrations (static and
// dynamic ports, counts, destructive versions, stops), failures and
// reschedules on three nodes with small port ranges, no two live
// allocations on a node ever share a port, none takes a node's reserved
// port or leaves its range, and the scheduler never needs the plan
// applier to refuse a collision.
func TestPortsNeverSharedProperty(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runPortsProperty(t, seed, 100) })
	}
}

func runPortsProperty(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t)
	nodes := map[string]*state.Node{}
	for _, n := range []*state.Node{h.portNode("n1", 20000, 20007), h.portNode("n2", 20000, 20007, 20002), h.portNode("n3", 20004, 20009, 8080)} {
		nodes[n.ID] = n
	}
	check := func(h *harness, p *state.Plan, _ *state.Store) {
		_, all, err := h.store.Allocs(nil, state.AllNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		held := map[string]map[int]string{}
		for _, a := range all {
			if a.TerminalStatus() {
				continue
			}
			n := nodes[a.NodeID]
			if held[a.NodeID] == nil {
				held[a.NodeID] = map[int]string{}
			}
			for _, port := range a.AllocatedPorts {
				if other, dup := held[a.NodeID][port.Value]; dup {
					t.Fatalf("seed %d: port %d on %s held by %s and %s", seed, port.Value, n.Name, other, a.Name)
				}
				held[a.NodeID][port.Value] = a.Name
				for _, r := range n.ReservedPorts {
					if r == port.Value {
						t.Fatalf("seed %d: %s took %s's reserved port %d", seed, a.Name, n.Name, r)
					}
				}
				lo, hi := n.PortRange()
				if port.Label != "static" && (port.Value < lo || port.Value > hi) {
					t.Fatalf("seed %d: dynamic port %d of %s outside %d-%d", seed, port.Value, a.Name, lo, hi)
				}
			}
		}
	}
	h.afterApply = check
	jobs := []string{"j0", "j1", "j2", "j3"}
	for step := 0; step < steps; step++ {
		id := jobs[rng.Intn(len(jobs))]
		switch op := rng.Intn(6); {
		case op <= 2: // register a version: count, ports, spec
			static := map[string]int(nil)
			if rng.Intn(3) == 0 {
				static = map[string]int{"static": []int{8080, 9090, 20005}[rng.Intn(3)]}
			}
			dyn := []string{"http", "grpc", "admin"}[:rng.Intn(3)]
			j := testJob(id, rng.Intn(4), withPorts(static, dyn...), withSpec(fmt.Sprint(rng.Intn(3))), withMaxParallel(1+rng.Intn(2)))
			j.Stop = rng.Intn(8) == 0
			h.process(h.register(j))
		case op == 3: // a live allocation fails and is rescheduled
			if live := h.live(id); len(live) > 0 {
				h.report([]*state.Allocation{live[rng.Intn(len(live))]}, state.AllocClientStatusFailed, nil)
				h.run(id, state.EvalTriggerRetryFailedAlloc)
			}
		default: // clients report health; the deployment moves on
			if h.job(id) != nil {
				h.healthy(id)
				h.run(id, state.EvalTriggerDeploymentWatcher)
			}
		}
		// Blocked evaluations run again as capacity frees.
		for _, jid := range jobs {
			if h.job(jid) != nil && rng.Intn(4) == 0 {
				h.run(jid, state.EvalTriggerQueuedAllocs)
			}
		}
	}
	withPortsPlaced := 0
	for _, p := range h.plans {
		for _, a := range p.Placements {
			if len(a.AllocatedPorts) > 0 {
				withPortsPlaced++
			}
		}
	}
	if withPortsPlaced < 20 {
		t.Fatalf("seed %d: only %d placements with ports: the history exercised too little", seed, withPortsPlaced)
	}
	for _, r := range h.refused {
		if strings.Contains(r, "port") {
			t.Fatalf("seed %d: the applier had to refuse a plan: %s", seed, r)
		}
	}
}
