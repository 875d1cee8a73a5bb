package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/ctlplane/ctlplane/api"
)

// printAllocAddresses prints the allocation's ports as Nomad's alloc
// status does ("Allocation Addresses"), nothing without a network block.
func printAllocAddresses(w io.Writer, a *api.Allocation) {
	if a.AllocatedResources == nil || len(a.AllocatedResources.Shared.Networks) == 0 {
		return
	}
	nw := a.AllocatedResources.Shared.Networks[0]
	if len(nw.DynamicPorts)+len(nw.ReservedPorts) == 0 {
		return
	}
	mode := ""
	if nw.Mode != "" {
		mode = fmt.Sprintf(" (mode = %q)", nw.Mode)
	}
	fmt.Fprintf(w, "\nAllocation Addresses%s:\n", mode)
	t := newTable(w, "Label", "Dynamic", "Address")
	row := func(p api.Port, dynamic string) {
		addr := nw.IP + ":" + strconv.Itoa(p.Value)
		if p.To > 0 {
			addr += " -> " + strconv.Itoa(p.To)
		}
		t.row("*"+p.Label, dynamic, addr)
	}
	for _, p := range nw.DynamicPorts {
		row(p, "yes")
	}
	for _, p := range nw.ReservedPorts {
		row(p, "no")
	}
	t.flush()
}
