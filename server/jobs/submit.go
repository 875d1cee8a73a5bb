package jobs

import (
	"encoding/json"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// Submission is a job as a request submits it, not yet parsed.
type Submission struct {
	// Spec is the job in Nomad's JSON job format (the body's "Job" value).
	Spec []byte
	// Namespace is the namespace of a job that names none.
	Namespace string
	// PathID is the job ID the request's path names ("" for none): the
	// parsed job must have it.
	PathID string
}

// target is the namespace the job would land in: the one the spec names,
// else Namespace. The spec is read leniently here; a malformed one is
// reported by Parse, after the permission check.
func (sub Submission) target() string {
	var head struct{ Namespace *string }
	_ = json.Unmarshal(sub.Spec, &head)
	if head.Namespace != nil && *head.Namespace != "" {
		return *head.Namespace
	}
	return sub.Namespace
}

// parse checks submit-job where the job would land (Nomad's order: before
// validation, so a caller without it learns nothing of its job's faults),
// then parses the job.
func (sub Submission) parse(caller acl.Caller) (*state.Job, error) {
	if err := caller.RequireNamespace(sub.target(), acl.CapSubmitJob); err != nil {
		return nil, err
	}
	job, err := Parse(sub.Spec, sub.Namespace)
	if err != nil {
		return nil, err
	}
	if sub.PathID != "" && job.ID != sub.PathID {
		return nil, invalid("Job ID does not match name")
	}
	return job, nil
}

// Submit registers a submitted job (Register's work on Parse's job). The
// caller needs submit-job where the job lands, checked once, first.
func (s *Service) Submit(caller acl.Caller, sub Submission, opts state.JobRegisterOptions) (*state.JobWriteResult, error) {
	job, err := sub.parse(caller)
	if err != nil {
		return nil, err
	}
	return s.registerChecked(job, opts)
}

// PlanSubmission plans a submitted job (Plan's work on Parse's job). The
// caller needs submit-job where the job would land, checked once, first.
func (s *Service) PlanSubmission(caller acl.Caller, sub Submission, diff bool) (*PlanResult, error) {
	job, err := sub.parse(caller)
	if err != nil {
		return nil, err
	}
	return s.planChecked(job, diff)
}
