package http

import (
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/state"
)

// JobService is what the jobs endpoints call (see server/jobs).
type JobService interface {
	// Submit parses a submitted job (Nomad's JSON job format, Nomad's
	// defaults, validation) and registers it with a job-register
	// evaluation; it checks submit-job where the job lands, first.
	Submit(caller acl.Caller, sub jobs.Submission, opts state.JobRegisterOptions) (*state.JobWriteResult, error)
	// Deregister stops a job, or with purge removes it, with a
	// job-deregister evaluation.
	Deregister(caller acl.Caller, ns, id string, purge bool, evalPriority int) (*state.JobWriteResult, error)
	// SetStable marks one version of a job stable or not.
	SetStable(caller acl.Caller, ns, id string, version uint64, stable bool) (*state.JobWriteResult, error)
	// Revert registers an earlier version's spec as a new version.
	Revert(caller acl.Caller, ns, id string, version uint64, enforcePriorVersion *uint64) (*state.JobWriteResult, error)
}
