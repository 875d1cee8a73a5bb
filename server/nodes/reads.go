package nodes

import "github.com/ctlplane/ctlplane/server/acl"

// ReadNodes refuses unless c may read client nodes (node:read): the node
// list, a node, and the cluster's members. Node reads need no Service —
// every server answers them from its own store — so the rule is a function
// of the Caller. The allocations a node runs are read with read-job in
// their namespace (jobs.ReadJob), as Nomad filters them.
func ReadNodes(c acl.Caller) error { return c.RequireNodeRead() }
