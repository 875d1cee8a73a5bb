package nodepools

import "github.com/ctlplane/ctlplane/server/acl"

// ReadPools refuses unless c may read node pools and their nodes:
// node:read (ctlplane's ACL model has no node_pool rules, as for writes).
// The reads need no Service (every server answers them from its own
// store); the jobs of a pool are read with read-job (jobs.ReadJobsIn).
func ReadPools(c acl.Caller) error { return c.RequireNodeRead() }
