package http

import (
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// JobService is what the jobs endpoints call (see server/jobs).
type JobService interface {
	// Parse decodes a job in Nomad's JSON job format (the body's "Job"
	// value), fills in Nomad's defaults and validates it; ns is the
	// namespace of a job that names none.
	Parse(raw []byte, ns string) (*state.Job, error)
	// Register registers a parsed job with a job-register evaluation.
	Register(caller acl.Caller, job *state.Job, opts state.JobRegisterOptions) (*state.JobWriteResult, error)
	// Deregister stops a job, or with purge removes it, with a
	// job-deregister evaluation.
	Deregister(caller acl.Caller, ns, id string, purge bool, evalPriority int) (*state.JobWriteResult, error)
	// SetStable marks one version of a job stable or not.
	SetStable(caller acl.Caller, ns, id string, version uint64, stable bool) (*state.JobWriteResult, error)
	// Revert registers an earlier version's spec as a new version.
	Revert(caller acl.Caller, ns, id string, version uint64, enforcePriorVersion *uint64) (*state.JobWriteResult, error)
}
