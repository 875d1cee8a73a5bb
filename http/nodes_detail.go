package http

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/state"
)

// nodePoolRE is Nomad's rule for a node pool name.
var nodePoolRE = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)

// checkNodeClassPool checks a registering node's class and pool; a node
// that names no pool is in "default" (Nomad's).
func checkNodeClassPool(class, pool *string) error {
	if len(*class) > maxNodeKeyLen {
		return badRequest("NodeClass is longer than %d bytes", maxNodeKeyLen)
	}
	if *pool == "" {
		*pool = "default"
	}
	if !nodePoolRE.MatchString(*pool) {
		return badRequest("invalid node pool name %q: a node pool name is 1 to 128 letters, digits, '-' or '_'", *pool)
	}
	if *pool == state.NodePoolAll {
		return badRequest("node is not allowed to register in node pool %q", state.NodePoolAll)
	}
	return nil
}

// nodeResourcesView is Nomad's NodeResources (no disk, networks or devices
// are fingerprinted here: zero and empty).
type nodeResourcesView struct {
	Cpu struct {
		CpuShares          int64
		TotalCpuCores      uint16
		ReservableCpuCores []uint16
	}
	Memory struct {
		MemoryMB int64
	}
	Disk struct {
		DiskMB int64
	}
	Networks       []struct{}
	Devices        []struct{}
	MinDynamicPort int
	MaxDynamicPort int
}

// nodeReserved is Nomad's NodeReservedResources: only host ports.
type nodeReserved struct {
	Cpu struct {
		CpuShares int64
	}
	Memory struct {
		MemoryMB int64
	}
	Disk struct {
		DiskMB int64
	}
	Networks struct {
		ReservedHostPorts string
	}
}

// nodeResourcesOf is the node's NodeResources and ReservedResources.
func nodeResourcesOf(n *state.Node) (*nodeResourcesView, *nodeReserved) {
	r := &nodeResourcesView{Networks: []struct{}{}, Devices: []struct{}{}}
	r.MinDynamicPort, r.MaxDynamicPort = n.PortRange()
	r.Cpu.CpuShares = int64(n.Resources.CPU)
	r.Cpu.ReservableCpuCores = []uint16{}
	if cores, err := parseUint16(n.Attributes["cpu.numcores"]); err == nil {
		r.Cpu.TotalCpuCores = cores
		for i := uint16(0); i < cores; i++ {
			r.Cpu.ReservableCpuCores = append(r.Cpu.ReservableCpuCores, i)
		}
	}
	r.Memory.MemoryMB = int64(n.Resources.MemoryMB)
	res := &nodeReserved{}
	ports := make([]string, len(n.ReservedPorts))
	for i, p := range n.ReservedPorts {
		ports[i] = strconv.Itoa(p)
	}
	res.Networks.ReservedHostPorts = strings.Join(ports, ",")
	return r, res
}

func parseUint16(s string) (uint16, error) {
	v, err := strconv.ParseUint(s, 10, 16)
	return uint16(v), err
}
