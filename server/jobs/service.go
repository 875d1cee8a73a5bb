// Package jobs is the domain side of Nomad's jobs API: parsing Nomad's JSON
// job format, Nomad's defaults and validation, and the writes (register,
// stop, purge, stability, revert), each one Raft entry together with the
// evaluation it creates. It knows nothing of HTTP.
package jobs

import (
	"fmt"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// Service performs job operations.
type Service struct {
	deps svc.Deps
	// maxAllocs caps a job's allocations (the sum of its groups' Count).
	maxAllocs int
}

// DefaultMaxJobAllocs is the default cap on a job's total allocations.
const DefaultMaxJobAllocs = 10000

// Option configures the service.
type Option func(*Service)

// MaxJobAllocs caps the sum of a job's task groups' Count (n <= 0: the
// default).
func MaxJobAllocs(n int) Option {
	return func(s *Service) {
		if n > 0 {
			s.maxAllocs = n
		}
	}
}

// New returns the jobs service.
func New(deps svc.Deps, opts ...Option) *Service {
	s := &Service{deps: deps, maxAllocs: DefaultMaxJobAllocs}
	for _, o := range opts {
		o(s)
	}
	return s
}

// checkTotalAllocs refuses a job asking for more allocations in all than
// the cap: one small job could otherwise ask for a million.
func (s *Service) checkTotalAllocs(job *state.Job) error {
	total := 0
	for _, tg := range job.TaskGroups {
		total += tg.Count
	}
	if total > s.maxAllocs {
		return invalid("Job asks for %d allocations in all (the sum of its task groups' Count): at most %d are allowed (server flag -max-job-allocs)", total, s.maxAllocs)
	}
	return nil
}

// Parse decodes a job in Nomad's JSON job format (the value of the request
// body's "Job" key), fills in Nomad's defaults and validates it. ns is the
// namespace of a job that names none.
func Parse(raw []byte, ns string) (*state.Job, error) {
	spec, err := DecodeSpec(raw)
	if err != nil {
		return nil, err
	}
	if spec.ID == nil || *spec.ID == "" {
		return nil, invalid("Job ID hasn't been provided")
	}
	job := Canonicalize(spec, ns)
	if err := Validate(job); err != nil {
		return nil, err
	}
	return job, nil
}

// Register registers a canonical job (a new version when its spec changed)
// with a pending job-register evaluation, in one Raft entry. The caller
// needs submit-job in the job's namespace.
func (s *Service) Register(caller acl.Caller, job *state.Job, opts state.JobRegisterOptions) (*state.JobWriteResult, error) {
	if err := caller.RequireNamespace(job.Namespace, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	return s.registerChecked(job, opts)
}

// registerChecked is Register once the caller is checked.
func (s *Service) registerChecked(job *state.Job, opts state.JobRegisterOptions) (*state.JobWriteResult, error) {
	if err := Validate(job); err != nil {
		return nil, err
	}
	if opts.EvalPriority != 0 && (opts.EvalPriority < 1 || opts.EvalPriority > 100) {
		return nil, invalid("eval priority must be between 1 and 100 inclusively")
	}
	job = job.Copy()
	// Enforcement and preserved counts read the current job: Nomad does
	// the same in its endpoint, before the Raft write.
	if opts.EnforceIndex || opts.PreserveCounts {
		_, cur, err := s.deps.State().Job(memdb.NewWatchSet(), job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		if opts.EnforceIndex {
			if err := enforceIndex(cur, opts.JobModifyIndex); err != nil {
				return nil, err
			}
		}
		if opts.PreserveCounts && cur != nil {
			preserveCounts(job, cur)
		}
	}
	if err := s.checkTotalAllocs(job); err != nil {
		return nil, err
	}
	return s.register(job, state.EvalTriggerJobRegister, opts.EvalPriority)
}

// enforceIndex is Nomad's EnforceIndex check, with its texts.
func enforceIndex(cur *state.Job, want uint64) error {
	switch {
	case cur != nil && want == 0:
		return conflict("Enforcing job modify index 0: job already exists")
	case cur == nil && want != 0:
		return conflict("Enforcing job modify index %d: job does not exist", want)
	case cur != nil && cur.JobModifyIndex != want:
		return conflict("Enforcing job modify index %d: job exists with conflicting job modify index: %d", want, cur.JobModifyIndex)
	}
	return nil
}

// preserveCounts keeps the running counts of the groups the job already has.
func preserveCounts(job, cur *state.Job) {
	groups := make([]*state.TaskGroup, len(job.TaskGroups))
	for i, tg := range job.TaskGroups {
		c := *tg
		if old := cur.LookupTaskGroup(tg.Name); old != nil {
			c.Count = old.Count
		}
		groups[i] = &c
	}
	job.TaskGroups = groups
}

// register writes job and its evaluation. Status, version and indexes are
// the state store's to set.
func (s *Service) register(job *state.Job, trigger string, evalPriority int) (*state.JobWriteResult, error) {
	now := s.deps.NowNanos()
	job.Status, job.StatusDescription, job.Stable, job.Version = "", "", false, 0
	job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = 0, 0, 0
	job.SubmitTime = now
	eval := s.newEval(job, trigger, evalPriority, now)
	res, err := fsm.Apply(s.deps.Raft, fsm.JobRegister, &fsm.JobRegisterRequest{Job: job, Eval: eval,
		// Stopping a job stays possible whatever became of its namespace.
		NamespaceMustExist: trigger != state.EvalTriggerJobDeregister})
	if err != nil {
		return nil, err
	}
	return &state.JobWriteResult{
		EvalID:          eval.ID,
		EvalCreateIndex: res.Index,
		JobModifyIndex:  res.JobModifyIndex,
		Index:           res.Index,
		JobVersion:      res.Version,
	}, nil
}

func (s *Service) newEval(job *state.Job, trigger string, priority int, now int64) *state.Evaluation {
	if priority == 0 {
		priority = job.Priority
	}
	return &state.Evaluation{
		ID:          uuid.NewString(),
		Namespace:   job.Namespace,
		Priority:    priority,
		Type:        job.Type,
		TriggeredBy: trigger,
		JobID:       job.ID,
		Status:      state.EvalStatusPending,
		CreateTime:  now,
		ModifyTime:  now,
	}
}

// Deregister stops a job (it is re-registered with Stop set, keeping its
// versions), or with purge removes it and its versions; either way with a
// pending job-deregister evaluation, so that the scheduler stops its
// allocations. The caller needs submit-job in ns, as for every job write.
func (s *Service) Deregister(caller acl.Caller, ns, id string, purge bool, evalPriority int) (*state.JobWriteResult, error) {
	if err := caller.RequireNamespace(ns, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	if evalPriority != 0 && (evalPriority < 1 || evalPriority > 100) {
		return nil, invalid("eval priority must be between 1 and 100 inclusively")
	}
	cur, err := s.job(ns, id)
	if err != nil {
		return nil, err
	}
	if !purge {
		job := cur.Copy()
		job.Stop = true
		return s.register(job, state.EvalTriggerJobDeregister, evalPriority)
	}
	eval := s.newEval(cur, state.EvalTriggerJobDeregister, evalPriority, s.deps.NowNanos())
	res, err := fsm.Apply(s.deps.Raft, fsm.JobPurge, &fsm.JobPurgeRequest{Namespace: ns, JobID: id, Eval: eval})
	if err != nil {
		return nil, err
	}
	return &state.JobWriteResult{EvalID: eval.ID, EvalCreateIndex: res.Index, JobModifyIndex: res.Index, Index: res.Index, JobVersion: cur.Version}, nil
}

// SetStable marks one version of a job stable or not.
func (s *Service) SetStable(caller acl.Caller, ns, id string, version uint64, stable bool) (*state.JobWriteResult, error) {
	if err := caller.RequireNamespace(ns, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	if _, err := s.job(ns, id); err != nil {
		return nil, err
	}
	if _, err := s.version(ns, id, version); err != nil {
		return nil, err
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.JobStable, &fsm.JobStableRequest{Namespace: ns, JobID: id, Version: version, Stable: stable})
	if err != nil {
		return nil, err
	}
	return &state.JobWriteResult{JobModifyIndex: res.Index, Index: res.Index, JobVersion: version}, nil
}

// Revert registers the spec of an earlier version as the job's new version.
// enforcePriorVersion, when given, must be the current version.
func (s *Service) Revert(caller acl.Caller, ns, id string, version uint64, enforcePriorVersion *uint64) (*state.JobWriteResult, error) {
	if err := caller.RequireNamespace(ns, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	cur, err := s.job(ns, id)
	if err != nil {
		return nil, err
	}
	if version == cur.Version {
		return nil, invalid("can't revert to current version")
	}
	old, err := s.version(ns, id, version)
	if err != nil {
		return nil, err
	}
	if enforcePriorVersion != nil && *enforcePriorVersion != cur.Version {
		return nil, conflict("Current job has version %d; enforcing version %d", cur.Version, *enforcePriorVersion)
	}
	// Registered again, so checked again as Nomad's revert (a register) is:
	// the version may predate a cap or the cap may have been lowered.
	if err := Validate(old); err != nil {
		return nil, err
	}
	if err := s.checkTotalAllocs(old); err != nil {
		return nil, err
	}
	return s.register(old.Copy(), state.EvalTriggerJobRegister, 0)
}

func (s *Service) job(ns, id string) (*state.Job, error) {
	_, job, err := s.deps.State().Job(memdb.NewWatchSet(), ns, id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, &state.Error{Code: state.ErrNotFound, Msg: "job not found"}
	}
	return job, nil
}

func (s *Service) version(ns, id string, version uint64) (*state.Job, error) {
	_, job, err := s.deps.State().JobVersion(memdb.NewWatchSet(), ns, id, version)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, &state.Error{Code: state.ErrNotFound, Msg: fmt.Sprintf("job %q in namespace %q at version %d not found", id, ns, version)}
	}
	return job, nil
}

func conflict(format string, args ...any) error {
	return &state.Error{Code: state.ErrConflict, Msg: fmt.Sprintf(format, args...)}
}
