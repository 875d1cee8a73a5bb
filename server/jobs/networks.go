package jobs

import (
	"math"

	"github.com/ctlplane/ctlplane/state"
)

// NetworkSpec is a group's network block (Nomad's api.NetworkResource).
// ctlplane runs tasks on the host: only host mode, static and dynamic
// ports. Task-level networks (deprecated in Nomad) stay unsupported.
type NetworkSpec struct {
	Mode          string
	ReservedPorts []*PortSpec
	DynamicPorts  []*PortSpec

	Device   Unsupported
	CIDR     Unsupported
	IP       Unsupported
	DNS      Unsupported
	Hostname Unsupported
	CNI      Unsupported
	// MBits is deprecated in Nomad and ignored.
	MBits ReadOnly
}

// PortSpec is Nomad's api.Port.
type PortSpec struct {
	Label       string
	Value       int
	To          int
	HostNetwork string

	IgnoreCollision Unsupported
}

// MaxPortsPerGroup bounds a group's ports (a node has 12,000 dynamic ones).
const MaxPortsPerGroup = 64

func canonicalNetworks(in []*NetworkSpec) []*state.NetworkResource {
	var out []*state.NetworkResource
	for _, n := range in {
		if n == nil {
			continue
		}
		nr := &state.NetworkResource{Mode: n.Mode, ReservedPorts: canonicalPorts(n.ReservedPorts), DynamicPorts: canonicalPorts(n.DynamicPorts)}
		if nr.Mode == "" {
			nr.Mode = "host"
		}
		// A dynamic port has no host port until placed.
		for i := range nr.DynamicPorts {
			nr.DynamicPorts[i].Value = 0
		}
		out = append(out, nr)
	}
	return out
}

func canonicalPorts(in []*PortSpec) []state.Port {
	var out []state.Port
	for _, p := range in {
		if p == nil {
			continue
		}
		hn := p.HostNetwork
		if hn == "" {
			hn = "default"
		}
		out = append(out, state.Port{Label: p.Label, Value: p.Value, To: p.To, HostNetwork: hn})
	}
	return out
}

// checkNetworks validates a group's network block with Nomad's texts
// (TaskGroup.validateNetworks).
func checkNetworks(errs *errList, nets []*state.NetworkResource) {
	if len(nets) > 1 {
		errs.add("Only one network resource is currently supported, found %d", len(nets))
		return
	}
	labels := map[string]bool{}
	static := map[int]string{}
	for _, n := range nets {
		if n.Mode != "host" {
			errs.add("Network mode %q is not supported: ctlplane runs tasks in host mode", n.Mode)
		}
		if c := len(n.ReservedPorts) + len(n.DynamicPorts); c > MaxPortsPerGroup {
			errs.add("Network has %d ports: at most %d are allowed", c, MaxPortsPerGroup)
			return
		}
		for i, port := range append(append([]state.Port{}, n.ReservedPorts...), n.DynamicPorts...) {
			isStatic := i < len(n.ReservedPorts)
			if port.Label == "" {
				errs.add("Port label must not be empty")
			} else if labels[port.Label] {
				errs.add("Port label %s already in use", port.Label)
			}
			labels[port.Label] = true
			if port.HostNetwork != "default" {
				errs.add("Port %q: host_network %q is not supported (only the default host network)", port.Label, port.HostNetwork)
			}
			if isStatic {
				switch other, dup := static[port.Value]; {
				case port.Value <= 0:
					errs.add("Port %s has static value %d: it must be between 1 and %d", port.Label, port.Value, math.MaxUint16)
				case port.Value > math.MaxUint16:
					errs.add("Port %s (%d) cannot be greater than %d", port.Label, port.Value, math.MaxUint16)
				case dup:
					errs.add("Static port %d already reserved by %s", port.Value, other)
				default:
					static[port.Value] = "taskgroup network:" + port.Label
				}
			}
			if port.To < -1 {
				errs.add("Port %q cannot be mapped to negative value %d", port.Label, port.To)
			} else if port.To > math.MaxUint16 {
				errs.add("Port %q cannot be mapped to a port (%d) greater than %d", port.Label, port.To, math.MaxUint16)
			}
		}
	}
}
