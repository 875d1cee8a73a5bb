package state

// NetworkResource is a group's network block (Nomad's NetworkResource):
// ReservedPorts are static ports, DynamicPorts are picked by the scheduler
// from the node's dynamic range.
type NetworkResource struct {
	Mode          string
	ReservedPorts []Port
	DynamicPorts  []Port
}

// Port is one port of a network block (Nomad's Port). Value is the host
// port (0 for a dynamic port until placed); To is the port the task
// listens on inside its network namespace (ctlplane runs tasks on the
// host, so only informative).
type Port struct {
	Label       string
	Value       int
	To          int
	HostNetwork string
}

// AllocatedPort is one port an allocation got on its node (Nomad's
// AllocatedPortMapping).
type AllocatedPort struct {
	Label  string `codec:",omitempty"`
	Value  int    `codec:",omitempty"`
	To     int    `codec:",omitempty"`
	HostIP string `codec:",omitempty"`
}

// Nomad's default dynamic port range of a node.
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
)

// PortRange is the node's dynamic port range (Nomad's client defaults when
// the node reports none).
func (n *Node) PortRange() (lo, hi int) {
	lo, hi = n.MinDynamicPort, n.MaxDynamicPort
	if lo <= 0 {
		lo = DefaultMinDynamicPort
	}
	if hi <= 0 {
		hi = DefaultMaxDynamicPort
	}
	return lo, hi
}

// HostPorts are the host ports the allocation holds on its node.
func (a *Allocation) HostPorts() []int {
	out := make([]int, 0, len(a.AllocatedPorts))
	for _, p := range a.AllocatedPorts {
		out = append(out, p.Value)
	}
	return out
}

// NetworkPorts counts the group's ports (none: no network block).
func (tg *TaskGroup) NetworkPorts() int {
	n := 0
	for _, nw := range tg.Networks {
		n += len(nw.ReservedPorts) + len(nw.DynamicPorts)
	}
	return n
}
