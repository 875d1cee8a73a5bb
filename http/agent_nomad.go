package http

import (
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"

	"github.com/ctlplane/ctlplane/server/gctuner"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// AgentSelf is what an agent says about itself beyond AgentInfo (Nomad's
// /v1/agent/self and /v1/agent/members); a backend without it answers 501.
type AgentSelf interface {
	NodeName() string
	NodeID() string
	RaftAddr() string
	HTTPAddr() string
	RaftStats() map[string]string
	// LocalClientNodeName names the client node this agent runs ("" for none).
	LocalClientNodeName() string
}

// Nomad's vocabulary for what ctlplane has one of.
const (
	nomadRegion = "global"
	// nomadBuild is the Nomad API version ctlplane serves, with its own
	// name as build metadata (Nomad's CLI prints it, parses it as a version).
	nomadBuild = "1.6.5+ctlplane"
)

func (h *Handler) registerAgent() {
	h.handleLocal("/v1/agent/self", methods{{http.MethodGet, h.operatorService(h.agentSelf)}})
	h.handleLocal("/v1/agent/members", methods{{http.MethodGet, h.agentMembers}})
	h.handleLocal("/v1/agent/health", methods{{http.MethodGet, h.agentHealth}})
	h.handleLocal("/v1/regions", methods{{http.MethodGet, h.regions}})
}

func (h *Handler) selfInfo() (AgentSelf, error) {
	a, ok := h.backend.(AgentSelf)
	if !ok {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "This agent does not describe itself"}
	}
	return a, nil
}

// agentMember is Nomad's AgentMember (a Serf member there; here a server
// of the Raft cluster, at its Raft address).
type agentMember struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

func (h *Handler) member(name, id, raftAddr string) *agentMember {
	host, portText, err := net.SplitHostPort(raftAddr)
	if err != nil {
		host, portText = raftAddr, "0"
	}
	port, _ := strconv.ParseUint(portText, 10, 16) // 0 when the address has none
	return &agentMember{
		Name: name + "." + nomadRegion, Addr: host, Port: uint16(port), Status: "alive",
		Tags: map[string]string{
			"role": "nomad", "region": nomadRegion, "dc": h.backend.Datacenter(), "build": nomadBuild,
			"raft_vsn": "3", "port": portText, "id": id, "vsn": "1", "mvn": "1",
		},
		ProtocolMin: 1, ProtocolMax: 5, ProtocolCur: 2, DelegateMin: 2, DelegateMax: 5, DelegateCur: 4,
	}
}

// agentSelf is Nomad's GET /v1/agent/self: config, member and the stats
// sections `nomad agent-info` prints and `nomad node status -self` reads
// (client.node_id). Needs operator:read (ctlplane's policy language has no
// agent rule; Nomad asks agent:read).
func (h *Handler) agentSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.readAgent(r); err != nil {
		return nil, err
	}
	a, err := h.selfInfo()
	if err != nil {
		return nil, err
	}
	leader := h.backend.Leader()
	stats := map[string]map[string]string{
		"nomad": {
			"server": "true", "leader": strconv.FormatBool(leader != "" && leader == a.RaftAddr()),
			"leader_addr": leader, "bootstrap": "false", "known_regions": "1",
		},
		"raft": a.RaftStats(),
		"runtime": {
			"os": runtime.GOOS, "arch": runtime.GOARCH, "version": runtime.Version(),
			"max_procs": strconv.Itoa(runtime.GOMAXPROCS(0)), "goroutines": strconv.Itoa(runtime.NumGoroutine()),
			"cpu_count": strconv.Itoa(runtime.NumCPU()), "kernel.name": runtime.GOOS,
		},
	}
	for k, v := range gcStats() {
		stats["runtime"][k] = v
	}
	client := map[string]any{"Enabled": false}
	if name := a.LocalClientNodeName(); name != "" {
		node, allocs, err := localNode(h.backend.State(), name)
		if err != nil {
			return nil, err
		}
		if node != nil {
			stats["client"] = map[string]string{"node_id": node.ID, "known_servers": a.HTTPAddr(), "num_allocations": strconv.Itoa(allocs)}
			client = map[string]any{"Enabled": true, "NodeID": node.ID}
		}
	}
	hostname, _ := os.Hostname() // informational only
	return &struct {
		Config map[string]any               `json:"config"`
		Member *agentMember                 `json:"member"`
		Stats  map[string]map[string]string `json:"stats"`
	}{
		Config: map[string]any{
			"Region": nomadRegion, "Datacenter": h.backend.Datacenter(), "NodeName": a.NodeName(),
			"Version":   map[string]string{"Version": "1.6.5", "VersionMetadata": "ctlplane", "Revision": ""},
			"ACL":       map[string]any{"Enabled": h.backend.ACLEnabled()},
			"Server":    map[string]any{"Enabled": true},
			"Client":    client,
			"DevMode":   h.backend.IsDev(),
			"Hostname":  hostname,
			"Addresses": map[string]string{"HTTP": a.HTTPAddr(), "RPC": a.RaftAddr()},
		},
		Member: h.member(a.NodeName(), a.NodeID(), a.RaftAddr()),
		Stats:  stats,
	}, nil
}

// localNode finds the agent's own client node by name, with its number of
// live allocations.
func localNode(s *state.Store, name string) (*state.Node, int, error) {
	_, nodes, err := s.Nodes(memdb.NewWatchSet())
	if err != nil {
		return nil, 0, err
	}
	for _, n := range nodes {
		if n.Name != name {
			continue
		}
		_, allocs, err := s.AllocsByNode(memdb.NewWatchSet(), n.ID)
		if err != nil {
			return nil, 0, err
		}
		live := 0
		for _, a := range allocs {
			if !a.TerminalStatus() {
				live++
			}
		}
		return n, live, nil
	}
	return nil, 0, nil
}

// agentMembers is Nomad's GET /v1/agent/members: the cluster's servers,
// from the replicated servers table, all "alive". Needs node:read.
func (h *Handler) agentMembers(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.nodeReader(r); err != nil {
		return nil, err
	}
	a, err := h.selfInfo()
	if err != nil {
		return nil, err
	}
	_, servers, err := h.backend.State().Servers(memdb.NewWatchSet())
	if err != nil {
		return nil, err
	}
	out := &struct {
		ServerName   string
		ServerRegion string
		ServerDC     string
		Members      []*agentMember
	}{ServerName: a.NodeName(), ServerRegion: nomadRegion, ServerDC: h.backend.Datacenter(), Members: []*agentMember{}}
	for _, srv := range servers {
		out.Members = append(out.Members, h.member(srv.Name, srv.ID, srv.RaftAddr))
	}
	return out, nil
}

// agentHealth is Nomad's GET /v1/agent/health (no token needed): the
// server is healthy when it knows a leader.
func (h *Handler) agentHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.KnownLeader() {
		return nil, &apiError{code: http.StatusInternalServerError, msg: "server: No cluster leader"}
	}
	type health struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	return map[string]health{"server": {OK: true, Message: "ok"}}, nil
}

// regions is Nomad's GET /v1/regions: ctlplane is one region, "global".
func (h *Handler) regions(w http.ResponseWriter, r *http.Request) (any, error) {
	return []string{nomadRegion}, nil
}

// gcStats are the garbage collector's percent (GOGC, or what the agent's
// -gc-heap-floor-mb tuner set), its current heap goal, whether the idle
// collector (-gc-when-idle) runs and how many collections it has made.
func gcStats() map[string]string {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	out := map[string]string{}
	for i, name := range []string{"gc_percent", "gc_heap_goal_bytes"} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			out[name] = strconv.FormatUint(s[i].Value.Uint64(), 10)
		}
	}
	idle, running := gctuner.IdleCollections()
	out["gc_when_idle"] = strconv.FormatBool(running)
	out["gc_idle_collections"] = strconv.FormatUint(idle, 10)
	return out
}
