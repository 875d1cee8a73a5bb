package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// The eligibility rules of garbage collection (see gc.go), one reader per
// transaction so that candidates and apply-time re-checks decide alike.

// gcReader reads with one transaction (a read one for candidates, the
// write one when applying) and caches lookups.
type gcReader struct {
	txn    *memdb.Txn
	p      GCParams
	jobs   map[GCJob]*Job
	active map[GCJob]bool
	queued map[GCJob]bool
}

func newGCReader(txn *memdb.Txn, p GCParams) *gcReader {
	return &gcReader{txn: txn, p: p, jobs: map[GCJob]*Job{}, active: map[GCJob]bool{}, queued: map[GCJob]bool{}}
}

func (g *gcReader) job(ns, id string) (*Job, error) {
	k := GCJob{ns, id}
	if j, ok := g.jobs[k]; ok {
		return j, nil
	}
	raw, err := g.txn.First(jobsTable, "id", ns, id)
	if err != nil {
		return nil, fmt.Errorf("failed job lookup: %w", err)
	}
	var j *Job
	if raw != nil {
		j = raw.(*Job)
	}
	g.jobs[k] = j
	return j, nil
}

// hasActiveDeployment says whether the job ID has a deployment in progress.
func (g *gcReader) hasActiveDeployment(ns, id string) (bool, error) {
	k := GCJob{ns, id}
	if v, ok := g.active[k]; ok {
		return v, nil
	}
	ds, err := listTxn[Deployment](g.txn, nil, deploymentsTable, "job", ns, id)
	if err != nil {
		return false, err
	}
	v := false
	for _, d := range ds {
		if d.Active() {
			v = true
			break
		}
	}
	g.active[k] = v
	return v, nil
}

// hasQueuedEval says whether the job ID has a pending or blocked evaluation.
func (g *gcReader) hasQueuedEval(ns, id string) (bool, error) {
	k := GCJob{ns, id}
	if v, ok := g.queued[k]; ok {
		return v, nil
	}
	evals, err := listTxn[Evaluation](g.txn, nil, evalsTable, "job", ns, id)
	if err != nil {
		return false, err
	}
	v := false
	for _, e := range evals {
		if !e.Terminal() {
			v = true
			break
		}
	}
	g.queued[k] = v
	return v, nil
}

// allocFinished: told to stop or ended, and ended on its client, so no
// node runs it any more.
func allocFinished(a *Allocation) bool {
	return a.TerminalStatus() && a.ClientTerminalStatus()
}

// allocEligible applies the allocation rule with cutoff (its evaluation's
// condition aside).
func (g *gcReader) allocEligible(a *Allocation, cutoff int64) (bool, error) {
	if !allocFinished(a) || a.ModifyTime > cutoff {
		return false, nil
	}
	job, err := g.job(a.Namespace, a.JobID)
	if err != nil {
		return false, err
	}
	// A job that is gone or stopped (or a newer job under the same ID)
	// needs none of its allocations any more. (Nomad also lets a dead job's
	// go; a service job here is dead while its failed allocations wait for
	// their replacements, so it must not.)
	if job == nil || job.Stop || a.CreateIndex <= job.CreateIndex {
		return true, nil
	}
	if a.DeploymentID != "" {
		raw, err := g.txn.First(deploymentsTable, "id", a.DeploymentID)
		if err != nil {
			return false, fmt.Errorf("failed deployment lookup: %w", err)
		}
		if raw != nil && raw.(*Deployment).Active() {
			return false, nil
		}
	}
	if a.NextAllocation != "" {
		// Replaced: no scheduler decision reads it any more (the
		// replacement's PreviousAllocation is only a link to show).
		return true, nil
	}
	if a.ClientStatus == AllocClientStatusFailed || a.ClientStatus == AllocClientStatusLost {
		if a.DesiredStatus == AllocDesiredStatusRun {
			return false, nil
		}
		queued, err := g.hasQueuedEval(a.Namespace, a.JobID)
		if err != nil || queued {
			return false, err
		}
	}
	return true, nil
}

// evalOld: the evaluation is terminal and as old as the evaluation cutoff.
func (g *gcReader) evalOld(e *Evaluation) bool {
	return e.Terminal() && e.ModifyTime <= g.p.EvalCutoff
}

// allocCandidate applies the whole allocation rule: its own, and its
// evaluation terminal and old (or gone).
func (g *gcReader) allocCandidate(a *Allocation) (bool, error) {
	if a.EvalID != "" {
		raw, err := g.txn.First(evalsTable, "id", a.EvalID)
		if err != nil {
			return false, fmt.Errorf("failed evaluation lookup: %w", err)
		}
		if raw != nil && !g.evalOld(raw.(*Evaluation)) {
			return false, nil
		}
	}
	return g.allocEligible(a, g.p.EvalCutoff)
}

// evalCandidate applies the evaluation rule; it also returns the
// evaluation's allocations, each with whether it may go.
func (g *gcReader) evalCandidate(e *Evaluation) (bool, []*Allocation, []bool, error) {
	if !g.evalOld(e) {
		return false, nil, nil, nil
	}
	allocs, err := listTxn[Allocation](g.txn, nil, allocsTable, "eval", e.ID)
	if err != nil {
		return false, nil, nil, err
	}
	ok := make([]bool, len(allocs))
	all := true
	for i, a := range allocs {
		if ok[i], err = g.allocEligible(a, g.p.EvalCutoff); err != nil {
			return false, nil, nil, err
		}
		all = all && ok[i]
	}
	if all {
		active, err := g.hasActiveDeployment(e.Namespace, e.JobID)
		if err != nil {
			return false, nil, nil, err
		}
		all = !active
	}
	return all, allocs, ok, nil
}

// deploymentCandidate applies the deployment rule.
func (g *gcReader) deploymentCandidate(d *Deployment) (bool, error) {
	if d.Active() || d.ModifyTime > g.p.DeploymentCutoff {
		return false, nil
	}
	allocs, err := listTxn[Allocation](g.txn, nil, allocsTable, "deployment", d.ID)
	if err != nil {
		return false, err
	}
	for _, a := range allocs {
		if !allocFinished(a) {
			return false, nil
		}
	}
	job, err := g.job(d.Namespace, d.JobID)
	if err != nil {
		return false, err
	}
	if job == nil {
		return true, nil
	}
	// The scheduler reads the current version's deployment (a failed one
	// stops it placing), and the job's /deployment answers the latest.
	if d.JobVersion == job.Version && d.JobCreateIndex == job.CreateIndex {
		return false, nil
	}
	ds, err := listTxn[Deployment](g.txn, nil, deploymentsTable, "job", d.Namespace, d.JobID)
	if err != nil {
		return false, err
	}
	for _, o := range ds {
		if o.CreateIndex > d.CreateIndex || (o.CreateIndex == d.CreateIndex && o.ID > d.ID) {
			return true, nil
		}
	}
	return false, nil // the latest
}

// jobObjects are what goes with a collected job.
type jobObjects struct {
	job         *Job
	evals       []*Evaluation
	allocs      []*Allocation
	deployments []*Deployment
}

func (o *jobObjects) size() int { return 1 + len(o.evals) + len(o.allocs) + len(o.deployments) }

// jobCandidate applies the job rule; when the job may go it returns it
// with everything of its ID.
func (g *gcReader) jobCandidate(j *Job) (*jobObjects, error) {
	if !j.Stop || j.Status != JobStatusDead || j.SubmitTime > g.p.JobCutoff {
		return nil, nil
	}
	cutoff := g.p.JobCutoff
	evals, err := listTxn[Evaluation](g.txn, nil, evalsTable, "job", j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	for _, e := range evals {
		if !e.Terminal() || e.ModifyTime > cutoff {
			return nil, nil
		}
	}
	allocs, err := listTxn[Allocation](g.txn, nil, allocsTable, "job", j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		if !allocFinished(a) || a.ModifyTime > cutoff {
			return nil, nil
		}
	}
	ds, err := listTxn[Deployment](g.txn, nil, deploymentsTable, "job", j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if d.Active() || d.ModifyTime > cutoff {
			return nil, nil
		}
	}
	return &jobObjects{job: j, evals: evals, allocs: allocs, deployments: ds}, nil
}

// nodeCandidate applies the node rule.
func (g *gcReader) nodeCandidate(n *Node) (bool, error) {
	if n.Status != NodeStatusDown || n.StatusUpdatedAt > g.p.NodeCutoff {
		return false, nil
	}
	allocs, err := allocsOfNodeTxn(g.txn, nil, n.ID)
	if err != nil {
		return false, err
	}
	for _, a := range allocs {
		if !allocFinished(a) {
			return false, nil
		}
	}
	return true, nil
}
