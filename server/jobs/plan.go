package jobs

import (
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/jobdiff"
	"github.com/hashicorp/go-memdb"
)

// PlanResult is what registering a job would do (Nomad's JobPlanResponse
// less its wire fields).
type PlanResult struct {
	// JobModifyIndex is the current job's (0: no such job), what
	// `job run -check-index` enforces.
	JobModifyIndex uint64
	Annotations    *state.PlanAnnotations
	FailedTGAllocs map[string]*scheduler.PlacementMetric
	// Diff from the current job to the proposed one (nil unless asked).
	Diff *jobdiff.JobDiff
	// CreatedEvals are the evaluations registering would create (a blocked
	// one when something cannot be placed); none is written.
	CreatedEvals []*state.Evaluation
}

// Plan runs the scheduler over the current state with job registered in
// place of the current version, and commits nothing: nothing is written
// to Raft or to the state store. The caller needs submit-job, as Nomad's
// plan does. With diff, the answer carries the annotated job diff.
func (s *Service) Plan(caller acl.Caller, job *state.Job, diff bool) (*PlanResult, error) {
	if err := caller.RequireNamespace(job.Namespace, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	return s.planChecked(job, diff)
}

// planChecked is Plan once the caller is checked.
func (s *Service) planChecked(job *state.Job, diff bool) (*PlanResult, error) {
	if err := Validate(job); err != nil {
		return nil, err
	}
	// Before the dry run: 100 groups of 10,000 computed a million
	// placements in 7.8 s.
	if err := s.checkTotalAllocs(job); err != nil {
		return nil, err
	}
	snap := s.deps.State().PointInTime()
	// Registering would be refused in a namespace that does not exist.
	if _, ns, err := snap.NamespaceByName(memdb.NewWatchSet(), job.Namespace); err != nil {
		return nil, err
	} else if ns == nil {
		return nil, invalid("job %q is in nonexistent namespace %q", job.ID, job.Namespace)
	}
	// And in a node pool that does not exist.
	poolName := job.NodePool
	if poolName == "" {
		poolName = state.NodePoolDefault
	}
	if _, pool, err := snap.NodePoolByName(memdb.NewWatchSet(), poolName); err != nil {
		return nil, err
	} else if pool == nil {
		return nil, invalid("job %q is in nonexistent node pool %q", job.ID, poolName)
	}
	_, cur, err := snap.Job(memdb.NewWatchSet(), job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	proposed := s.proposedVersion(snap, cur, job)
	eval := s.newEval(proposed, state.EvalTriggerJobRegister, 0, s.deps.NowNanos())
	// Nomad's plan evaluation (and the blocked one it may create) carries
	// the index the job would be registered at: the current one's plus one
	// when the spec changed, else 0 (a new job too).
	if cur != nil && proposed != cur {
		eval.JobModifyIndex = cur.JobModifyIndex + 1
	}
	view := &proposedState{Store: snap, job: proposed}
	out, err := scheduler.DryRunEvals(view, eval, nil, s.deps.Now())
	if err != nil {
		return nil, err
	}
	plan := out.Plan
	res := &PlanResult{Annotations: plan.Annotations, FailedTGAllocs: out.Failed, CreatedEvals: out.CreatedEvals}
	if cur != nil {
		res.JobModifyIndex = cur.JobModifyIndex
	}
	if diff {
		if res.Diff, err = jobdiff.Diff(cur, proposed, true); err != nil {
			return nil, err
		}
		if err := scheduler.Annotate(res.Diff, cur, proposed, plan.Annotations); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// proposedVersion is job as the state store would register it over cur:
// the same version when its spec did not change, else the next one at an
// index past everything in snap (so it is newer than every allocation).
func (s *Service) proposedVersion(snap *state.Store, cur, job *state.Job) *state.Job {
	p := job.Copy()
	p.Status, p.StatusDescription, p.Stable = state.JobStatusPending, "", false
	p.SubmitTime = s.deps.NowNanos()
	if cur != nil && !cur.SpecChanged(job) {
		return cur
	}
	next := latestIndex(snap) + 1
	p.Version, p.CreateIndex = 0, next
	if cur != nil {
		p.Version, p.CreateIndex = cur.Version+1, cur.CreateIndex
	}
	p.ModifyIndex, p.JobModifyIndex = next, next
	if p.Stop {
		p.Status = state.JobStatusDead
	}
	return p
}

func latestIndex(snap *state.Store) uint64 {
	var max uint64
	for _, t := range state.Tables() {
		if i := snap.TableIndex(t); i > max {
			max = i
		}
	}
	return max
}

// proposedState is a point-in-time state in which the proposed version is
// the job's latest: the scheduler reads it as if the job were registered.
type proposedState struct {
	*state.Store
	job *state.Job
}

func (p *proposedState) Job(ws memdb.WatchSet, ns, id string) (uint64, *state.Job, error) {
	idx, j, err := p.Store.Job(ws, ns, id)
	if err == nil && ns == p.job.Namespace && id == p.job.ID {
		j = p.job
	}
	return idx, j, err
}

func (p *proposedState) JobVersion(ws memdb.WatchSet, ns, id string, version uint64) (uint64, *state.Job, error) {
	if ns == p.job.Namespace && id == p.job.ID && version == p.job.Version {
		return p.Store.TableIndex("job_versions"), p.job, nil
	}
	return p.Store.JobVersion(ws, ns, id, version)
}
