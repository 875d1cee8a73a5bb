package scheduler

import (
	"fmt"

	"github.com/ctlplane/ctlplane/state"
)

// Nomad's dimension for a node without the free dynamic ports a group asks.
const dimensionDynamicPorts = "network: dynamic port selection failed"

// portsOn is the set of host ports taken on the node: its reserved ports,
// those of its live allocations (less the ones this plan stops) and this
// plan's placements. Loaded on first need: only groups with a network
// block look.
func (p *placer) portsOn(ni *nodeInfo) map[int]bool {
	if ni.ports != nil {
		return ni.ports
	}
	ni.ports = map[int]bool{}
	for _, port := range ni.node.ReservedPorts {
		ni.ports[port] = true
	}
	var allocs []*state.Allocation
	if p.nodeAllocs != nil {
		var err error
		if allocs, err = p.nodeAllocs(ni.node.ID); err != nil && p.err == nil {
			p.err = fmt.Errorf("reading the allocations of node %s: %w", ni.node.ID, err)
		}
	}
	for _, a := range allocs {
		if !a.TerminalStatus() && !p.released[a.ID] {
			for _, port := range a.HostPorts() {
				ni.ports[port] = true
			}
		}
	}
	return ni.ports
}

// assignPorts gives the group's network ports on the node: static ports
// as asked, dynamic ones the lowest free in the node's range (deterministic,
// where Nomad picks at random). dim names Nomad's exhausted dimension when
// they do not fit.
func (p *placer) assignPorts(ni *nodeInfo, tg *state.TaskGroup) (ports []state.AllocatedPort, dim string) {
	if tg.NetworkPorts() == 0 {
		return nil, ""
	}
	used := p.portsOn(ni)
	taken := map[int]bool{}
	ip := ni.node.Attributes["unique.network.ip-address"]
	if ip == "" {
		ip = "127.0.0.1"
	}
	for _, nw := range tg.Networks {
		for _, sp := range nw.ReservedPorts {
			if used[sp.Value] || taken[sp.Value] {
				return nil, fmt.Sprintf("network: reserved port collision %s=%d", sp.Label, sp.Value)
			}
			taken[sp.Value] = true
			ports = append(ports, state.AllocatedPort{Label: sp.Label, Value: sp.Value, To: sp.To, HostIP: ip})
		}
	}
	lo, hi := ni.node.PortRange()
	next := lo
	for _, nw := range tg.Networks {
		for _, dp := range nw.DynamicPorts {
			for next <= hi && (used[next] || taken[next]) {
				next++
			}
			if next > hi {
				return nil, dimensionDynamicPorts
			}
			taken[next] = true
			to := dp.To
			if to == -1 {
				to = next // Nomad: to = -1 maps to the host port
			}
			ports = append(ports, state.AllocatedPort{Label: dp.Label, Value: next, To: to, HostIP: ip})
		}
	}
	return ports, ""
}

// bookPorts marks ports taken on the node (a placement of this plan).
func (p *placer) bookPorts(ni *nodeInfo, ports []state.AllocatedPort) {
	if len(ports) == 0 {
		return
	}
	used := p.portsOn(ni)
	for _, port := range ports {
		used[port.Value] = true
	}
	ni.version++ // scoreCache: the node's ports changed
}
