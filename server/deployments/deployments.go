// Package deployments holds the deployment control operations (fail, pause,
// promote, allocation health, unblock) and the deployment watcher, the
// leader routine that fails, promotes and nudges deployments on its own.
// Each operation checks its preconditions against the current state and
// writes one Raft entry that also carries the evaluation it creates.
package deployments

import (
	"errors"
	"strings"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// Result is what a control operation reports.
type Result = state.DeploymentActionResult

// Service runs the control operations.
type Service struct {
	deps svc.Deps
}

// New returns the deployment operations over deps.
func New(deps svc.Deps) *Service { return &Service{deps: deps} }

// Operation names, as recorded in a deployment's history.
const (
	OpFail        = "fail"
	OpPause       = "pause"
	OpResume      = "resume"
	OpPromote     = "promote"
	OpAllocHealth = "allocation-health"
	OpUnblock     = "unblock"
)

func opCause(op, accessorID string) state.DeploymentCause {
	return state.DeploymentCause{Kind: "operation", Operation: op, AccessorID: accessorID}
}

// active looks the deployment up (see authorized); terminal is 409 with
// Nomad's text for the operation.
func (s *Service) active(caller acl.Caller, id, terminalMsg string) (*state.Store, *state.Deployment, error) {
	st, d, err := s.authorized(caller, id)
	if err != nil {
		return nil, nil, err
	}
	if err := activeOrConflict(d, terminalMsg); err != nil {
		return nil, nil, err
	}
	return st, d, nil
}

// authorized looks the deployment up: unknown is 404, a caller without
// submit-job in its namespace 403.
func (s *Service) authorized(caller acl.Caller, id string) (*state.Store, *state.Deployment, error) {
	st := s.deps.State()
	_, d, err := st.Deployment(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, state.NewError(state.ErrNotFound, "deployment not found")
	}
	if err := caller.RequireNamespace(d.Namespace, acl.CapSubmitJob); err != nil {
		return nil, nil, err
	}
	return st, d, nil
}

func activeOrConflict(d *state.Deployment, terminalMsg string) error {
	if !d.Active() {
		return state.NewError(state.ErrConflict, "%s", terminalMsg)
	}
	return nil
}

// Fail marks a deployment failed, rolling back to the latest stable job
// version when a group has AutoRevert and that version differs.
func (s *Service) Fail(caller acl.Caller, id string) (*Result, error) {
	st, d, err := s.active(caller, id, "can't fail terminal deployment")
	if err != nil {
		return nil, err
	}
	desc, job, err := rollback(st, d, state.DeploymentStatusDescriptionFailedByUser, autoRevert(d, nil), true)
	if err != nil {
		return nil, err
	}
	eval, err := newEval(st, d, s.deps.NowNanos())
	if err != nil {
		return nil, err
	}
	return s.setStatus(d, state.DeploymentStatusFailed, desc, job, eval, opCause(OpFail, caller.AccessorID))
}

// Pause pauses (no evaluation) or resumes (with one) a deployment.
func (s *Service) Pause(caller acl.Caller, id string, pause bool) (*Result, error) {
	msg := "can't resume terminal deployment"
	if pause {
		msg = "can't pause terminal deployment"
	}
	st, d, err := s.active(caller, id, msg)
	if err != nil {
		return nil, err
	}
	if pause {
		return s.setStatus(d, state.DeploymentStatusPaused, state.DeploymentStatusDescriptionPaused, nil, nil, opCause(OpPause, caller.AccessorID))
	}
	eval, err := newEval(st, d, s.deps.NowNanos())
	if err != nil {
		return nil, err
	}
	return s.setStatus(d, state.DeploymentStatusRunning, state.DeploymentStatusDescriptionRunning, nil, eval, opCause(OpResume, caller.AccessorID))
}

// Promote promotes the canaries of every group (all) or of the named ones,
// once the selected groups' canaries are healthy.
func (s *Service) Promote(caller acl.Caller, id string, all bool, groups []string) (*Result, error) {
	st, d, err := s.active(caller, id, "can't promote terminal deployment")
	if err != nil {
		return nil, err
	}
	return s.promote(st, d, all, groups, opCause(OpPromote, caller.AccessorID))
}

func (s *Service) promote(st *state.Store, d *state.Deployment, all bool, groups []string, cause state.DeploymentCause) (*Result, error) {
	if !all {
		for _, g := range groups {
			if d.TaskGroups[g] == nil {
				return nil, state.NewError(state.ErrInvalid, "Task group %q is not part of deployment %q", g, d.ID)
			}
		}
	}
	if errs := state.PromotionErrors(d, allocLookup(st), all, groups); len(errs) > 0 {
		return nil, state.NewError(state.ErrConflict, "%s", strings.Join(errs, "; "))
	}
	now := s.deps.NowNanos()
	eval, err := newEval(st, d, now)
	if err != nil {
		return nil, err
	}
	cause.EvalID = eval.ID
	res, err := fsm.Apply(s.deps.Raft, fsm.DeploymentPromote, &state.DeploymentPromoteRequest{
		DeploymentID: d.ID, All: all, Groups: groups, Eval: eval, Cause: cause, Now: now,
	})
	if err != nil {
		return nil, err
	}
	return result(res, eval), nil
}

// SetAllocHealth marks allocations of a deployment healthy or unhealthy by
// hand (their groups must use health_check = "manual"); any unhealthy one
// fails the deployment, with the rollback rule of Fail.
func (s *Service) SetAllocHealth(caller acl.Caller, id string, healthy, unhealthy []string) (*Result, error) {
	st, d, err := s.authorized(caller, id)
	if err != nil {
		return nil, err
	}
	if len(healthy)+len(unhealthy) == 0 {
		return nil, state.NewError(state.ErrInvalid, "must specify at least one healthy/unhealthy allocation ID")
	}
	if err := activeOrConflict(d, "can't set health of allocations for a terminal deployment"); err != nil {
		return nil, err
	}
	_, job, err := st.JobVersion(nil, d.Namespace, d.JobID, d.JobVersion)
	if err != nil {
		return nil, err
	}
	for _, aid := range append(append([]string(nil), healthy...), unhealthy...) {
		_, a, err := st.Alloc(nil, aid)
		if err != nil {
			return nil, state.NewError(state.ErrInvalid, "alloc %q lookup failed: %v", aid, unwrapAll(err))
		}
		if a == nil {
			return nil, state.NewError(state.ErrInvalid, "unknown alloc %q", aid)
		}
		if a.DeploymentID != d.ID {
			return nil, state.NewError(state.ErrInvalid, "alloc %q is not part of deployment %q", aid, d.ID)
		}
		if hc := healthCheck(job, a.TaskGroup); hc != state.UpdateHealthManual {
			return nil, state.NewError(state.ErrConflict, "Task group %q of alloc %q uses health_check = %q: allocation health can only be set by hand when it is \"manual\"", a.TaskGroup, aid, hc)
		}
	}
	now := s.deps.NowNanos()
	eval, err := newEval(st, d, now)
	if err != nil {
		return nil, err
	}
	cause := opCause(OpAllocHealth, caller.AccessorID)
	cause.EvalID = eval.ID
	req := &state.DeploymentAllocHealthRequest{
		DeploymentID: d.ID, Healthy: healthy, Unhealthy: unhealthy, Eval: eval,
		Timestamp: s.deps.Now().UTC(), Cause: cause, Now: now,
	}
	if len(unhealthy) > 0 {
		groups := map[string]bool{}
		for _, aid := range unhealthy {
			if _, a, _ := st.Alloc(nil, aid); a != nil {
				groups[a.TaskGroup] = true
			}
		}
		desc, job, err := rollback(st, d, state.DeploymentStatusDescriptionFailedAllocations, autoRevert(d, groups), false)
		if err != nil {
			return nil, err
		}
		req.Fail = &state.DeploymentStatusUpdate{DeploymentID: d.ID, Status: state.DeploymentStatusFailed, StatusDescription: desc}
		req.Job = job
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.DeploymentAllocHealth, req)
	if err != nil {
		return nil, err
	}
	return result(res, eval), nil
}

// Unblock marks a blocked multiregion deployment successful; its job
// version becomes stable.
func (s *Service) Unblock(caller acl.Caller, id string) (*Result, error) {
	st, d, err := s.active(caller, id, "can't unblock terminal deployment")
	if err != nil {
		return nil, err
	}
	if d.Status != state.DeploymentStatusBlocked {
		return nil, state.NewError(state.ErrConflict, "deployment is not blocked")
	}
	eval, err := newEval(st, d, s.deps.NowNanos())
	if err != nil {
		return nil, err
	}
	return s.setStatus(d, state.DeploymentStatusSuccessful, state.DeploymentStatusDescriptionSuccessful, nil, eval, opCause(OpUnblock, caller.AccessorID))
}

// setStatus writes one status change with its evaluation and rollback job.
func (s *Service) setStatus(d *state.Deployment, status, desc string, job *state.Job, eval *state.Evaluation, cause state.DeploymentCause) (*Result, error) {
	if eval != nil {
		cause.EvalID = eval.ID
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.DeploymentStatus, &state.DeploymentUpdateRequest{
		Update: state.DeploymentStatusUpdate{DeploymentID: d.ID, Status: status, StatusDescription: desc},
		Eval:   eval, Job: job, Cause: cause, Now: s.deps.NowNanos(),
	})
	if err != nil {
		return nil, err
	}
	return result(res, eval), nil
}

func result(res *state.DeploymentUpdateResult, eval *state.Evaluation) *Result {
	out := &Result{DeploymentModifyIndex: res.Index, Index: res.Index, RevertedJobVersion: res.RevertedJobVersion}
	if eval != nil {
		out.EvalID = eval.ID
		out.EvalCreateIndex = res.Index
	}
	return out
}

// autoRevert says whether any group (of those in only, when given) has AutoRevert.
func autoRevert(d *state.Deployment, only map[string]bool) bool {
	for name, g := range d.TaskGroups {
		if g.AutoRevert && (only == nil || only[name]) {
			return true
		}
	}
	return false
}

// rollback applies Nomad's rollback rule to a failure described by base:
// with revert set, the latest stable job version is registered again when
// its spec differs from the version the deployment tracks. It returns the
// description (with the suffix that says what happened) and the job to
// register (nil: none). noTargetSuffix adds "no stable job version to auto
// revert to" when there is no stable version.
func rollback(st *state.Store, d *state.Deployment, base string, revert, noTargetSuffix bool) (string, *state.Job, error) {
	if !revert {
		return base, nil, nil
	}
	stable, err := st.LatestStableJob(nil, d.Namespace, d.JobID)
	if err != nil {
		return "", nil, err
	}
	if stable == nil {
		if noTargetSuffix {
			return state.DeploymentStatusDescriptionNoRollbackTarget(base), nil, nil
		}
		return base, nil, nil
	}
	_, tracked, err := st.JobVersion(nil, d.Namespace, d.JobID, d.JobVersion)
	if err != nil {
		return "", nil, err
	}
	if tracked != nil && !tracked.SpecChanged(stable) {
		return state.DeploymentStatusDescriptionRollbackNoop(base, stable.Version), nil, nil
	}
	job := stable.Copy()
	job.Stop = false
	return state.DeploymentStatusDescriptionRollback(base, stable.Version), job, nil
}

// newEval is the evaluation a deployment change creates for the scheduler.
func newEval(st *state.Store, d *state.Deployment, now int64) (*state.Evaluation, error) {
	_, job, err := st.Job(nil, d.Namespace, d.JobID)
	if err != nil {
		return nil, err
	}
	e := &state.Evaluation{
		ID:           uuid.NewString(),
		Namespace:    d.Namespace,
		Priority:     d.EvalPriority,
		Type:         state.JobTypeService,
		TriggeredBy:  state.EvalTriggerDeploymentWatcher,
		JobID:        d.JobID,
		DeploymentID: d.ID,
		Status:       state.EvalStatusPending,
		CreateTime:   now,
		ModifyTime:   now,
	}
	if job != nil {
		if e.Priority == 0 {
			e.Priority = job.Priority
		}
		if job.Type != "" {
			e.Type = job.Type
		}
		e.JobModifyIndex = job.JobModifyIndex
	}
	if e.Priority == 0 {
		e.Priority = 50
	}
	return e, nil
}

// healthCheck is the health_check mode of a group of job ("" if unknown).
func healthCheck(job *state.Job, group string) string {
	if job == nil {
		return ""
	}
	u := job.Update
	if tg := job.LookupTaskGroup(group); tg != nil && tg.Update != nil {
		u = tg.Update
	}
	if u == nil {
		return ""
	}
	return u.HealthCheck
}

func allocLookup(st *state.Store) func(string) *state.Allocation {
	return func(id string) *state.Allocation {
		_, a, err := st.Alloc(nil, id)
		if err != nil {
			return nil
		}
		return a
	}
}

// unwrapAll is the innermost error: memdb's own text for a malformed ID.
func unwrapAll(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
