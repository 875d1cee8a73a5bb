package jobs

import "github.com/ctlplane/ctlplane/server/acl"

// The jobs family's reads (jobs, their versions, summaries, scaling, and
// what belongs to a job: evaluations, allocations) are decided here. They
// need no Service: every server answers them from its own store, also when
// it was built without a jobs service, so these rules are functions of the
// Caller alone.

// ReadJob refuses unless c may read the jobs of namespace ns and what
// belongs to them (Nomad's read-job).
func ReadJob(c acl.Caller, ns string) error { return c.RequireNamespace(ns, acl.CapReadJob) }

// ReadJobsIn decides a read over the jobs' objects of ns, which may be
// "*" for every namespace: one namespace without read-job is refused;
// visible says which objects' namespaces c may see (with "*", only those
// with read-job; Nomad filters the same way rather than refusing).
func ReadJobsIn(c acl.Caller, ns string) (visible func(ns string) bool, err error) {
	return acl.ReadIn(ns, func(n string) bool { return ReadJob(c, n) == nil })
}

// ListJobs decides GET /v1/jobs over ns ("*" for every namespace): list-jobs
// or read-job (which reads each of them anyway), filtered as ReadJobsIn.
func ListJobs(c acl.Caller, ns string) (visible func(ns string) bool, err error) {
	return acl.ReadIn(ns, func(n string) bool {
		return c.RequireNamespace(n, acl.CapListJobs) == nil || ReadJob(c, n) == nil
	})
}

// ReadJobScaling refuses unless c may read a job's scaling policies and
// status in ns: read-job-scaling, or read-job.
func ReadJobScaling(c acl.Caller, ns string) error {
	if c.RequireNamespace(ns, acl.CapReadJobScaling) == nil {
		return nil
	}
	return ReadJob(c, ns)
}
