package http

import (
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// What `nomad node status ID` dereferences on a node and its allocations
// besides their stored fields: the node's Resources and Reserved with
// DiskMB (ctlplane schedules no disk: 0), and each allocation's
// Resources and Job (as GET /v1/allocation/:id answers them).

type nodeResources struct {
	CPU      int
	MemoryMB int
	DiskMB   int
}

// nomadNode is a node as GET /v1/node/:id answers it.
type nomadNode struct {
	*state.Node
	Resources *nodeResources
	Reserved  *nodeResources
	// NodeResources and ReservedResources are Nomad's newer views.
	NodeResources     *nodeResourcesView
	ReservedResources *nodeReserved
}

func nomadNodeOf(n *state.Node) *nomadNode {
	nr, rr := nodeResourcesOf(n)
	return &nomadNode{Node: n, Resources: &nodeResources{CPU: n.Resources.CPU, MemoryMB: n.Resources.MemoryMB}, Reserved: &nodeResources{},
		NodeResources: nr, ReservedResources: rr}
}

// nodeAllocDetails are allocations with their job and resource views.
func nodeAllocDetails(ws memdb.WatchSet, s *state.Store, allocs []*state.Allocation) ([]*allocDetail, error) {
	out := make([]*allocDetail, 0, len(allocs))
	for _, a := range allocs {
		_, d, err := readAllocDetail(ws, s, a.ID)
		if err != nil {
			return nil, err
		}
		if d != nil {
			out = append(out, d)
		}
	}
	return out, nil
}
