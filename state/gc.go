package state

import (
	"fmt"
	"math"
)

// Garbage collection of what is finished: terminal evaluations and
// allocations, finished deployments (with their history), stopped jobs
// that are dead (with their versions and everything of theirs), and nodes
// long down. The leader computes candidates from a point-in-time state
// (GCCandidates) and commits them as one log entry per batch; the write
// (GCApply) checks every candidate again with the same rules against the
// state it is applied to, so an object that became live meanwhile is kept.
//
// The rules (Nomad's core scheduler, made more conservative where a live
// decision of this orchestrator reads the object):
//   - allocation: desired stop/evict or ended on its client, and ended on
//     its client (complete, failed, lost: never one its node may still run);
//     last changed at or before the evaluation cutoff; its evaluation
//     terminal and as old (or gone). When its job still exists and is not
//     stopped it is also not part of an active deployment and, when it
//     failed or was lost and nothing replaced it yet (no NextAllocation),
//     neither meant to run nor waited on by a pending or blocked
//     evaluation of its job: the scheduler replaces such an allocation
//     under its name.
//   - evaluation: terminal, as old as the evaluation cutoff, every one of
//     its allocations collectable with it, and its job has no active
//     deployment (the deployment watcher compares the job's evaluations
//     with its allocations' health).
//   - deployment: not active, as old as the deployment cutoff, no
//     allocation of it that is not finished, and, while its job exists,
//     neither the job's latest deployment nor the one of its current version.
//   - job: stopped and dead, submitted at or before the job cutoff, and
//     every evaluation, allocation and deployment of its ID finished and as
//     old: all are collected with it, with its versions and the history of
//     its deployments.
//   - node: down since at or before the node cutoff, and every allocation
//     on it finished (the allocations stay; their own rules collect them).

// GCParams are the cutoffs of one collection, Unix nanoseconds: an object
// whose last change is at or before its kind's cutoff is old enough.
// GCForce sets them all to the maximum (thresholds ignored).
type GCParams struct {
	EvalCutoff       int64
	DeploymentCutoff int64
	JobCutoff        int64
	NodeCutoff       int64
}

// GCForce are the cutoffs of a forced collection: every finished object is
// old enough.
var GCForce = GCParams{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64}

// GCJob names a job.
type GCJob struct {
	Namespace string
	ID        string
}

// GCRequest is one batch of candidates with the cutoffs they were chosen
// by; the write deletes those that still qualify under the same cutoffs.
// A job's evaluations, allocations and deployments are not listed: they go
// with the job.
type GCRequest struct {
	Params        GCParams
	EvalIDs       []string
	AllocIDs      []string
	DeploymentIDs []string
	Jobs          []GCJob
	NodeIDs       []string
}

// Size is how many objects the request names.
func (r *GCRequest) Size() int {
	return len(r.EvalIDs) + len(r.AllocIDs) + len(r.DeploymentIDs) + len(r.Jobs) + len(r.NodeIDs)
}

// GCResult counts what a GC write deleted (a job's own objects included).
type GCResult struct {
	Index       uint64
	Evals       int
	Allocs      int
	Deployments int
	Jobs        int
	Nodes       int
	// History is how many deployment history records went with their deployments.
	History int
}

// Total is how many objects were deleted (history records aside).
func (r *GCResult) Total() int { return r.Evals + r.Allocs + r.Deployments + r.Jobs + r.Nodes }

// GCCandidates chooses up to about limit objects that may be collected
// under p (a job counts with its evaluations, allocations and
// deployments, an evaluation with its allocations; a unit larger than
// limit is taken alone). Jobs come first, then evaluations with their
// allocations, deployments and nodes (Nomad's order). An empty request
// means there is nothing to collect.
func (s *Store) GCCandidates(p GCParams, limit int) (*GCRequest, error) {
	if limit <= 0 {
		limit = math.MaxInt
	}
	txn := s.db.Txn(false)
	defer txn.Abort()
	g := newGCReader(txn, p)
	req := &GCRequest{Params: p}
	n := 0
	fits := func(size int) bool { return n == 0 || n+size <= limit }
	full := func() bool { return n >= limit }
	taken := map[string]bool{} // evaluations and allocations in a job's unit

	iter, err := txn.Get(jobsTable, "id")
	if err != nil {
		return nil, fmt.Errorf("failed job list: %w", err)
	}
	for raw := iter.Next(); raw != nil && !full(); raw = iter.Next() {
		objs, err := g.jobCandidate(raw.(*Job))
		if err != nil {
			return nil, err
		}
		if objs == nil || !fits(objs.size()) {
			continue
		}
		req.Jobs = append(req.Jobs, GCJob{objs.job.Namespace, objs.job.ID})
		n += objs.size()
		for _, e := range objs.evals {
			taken[e.ID] = true
		}
		for _, a := range objs.allocs {
			taken[a.ID] = true
		}
		for _, d := range objs.deployments {
			taken[d.ID] = true
		}
	}

	for _, status := range []string{EvalStatusComplete, EvalStatusFailed, EvalStatusCanceled} {
		iter, err := txn.Get(evalsTable, "status", status)
		if err != nil {
			return nil, fmt.Errorf("failed evaluation list: %w", err)
		}
		for raw := iter.Next(); raw != nil && !full(); raw = iter.Next() {
			e := raw.(*Evaluation)
			if taken[e.ID] {
				continue
			}
			all, allocs, ok, err := g.evalCandidate(e)
			if err != nil {
				return nil, err
			}
			var ids []string
			for i, a := range allocs {
				if ok[i] && !taken[a.ID] {
					ids = append(ids, a.ID)
				}
			}
			size := len(ids)
			if all {
				size++
			}
			if size == 0 || !fits(size) {
				continue
			}
			if all {
				req.EvalIDs = append(req.EvalIDs, e.ID)
			}
			req.AllocIDs = append(req.AllocIDs, ids...)
			n += size
		}
	}

	iter, err = txn.Get(deploymentsTable, "id")
	if err != nil {
		return nil, fmt.Errorf("failed deployment list: %w", err)
	}
	for raw := iter.Next(); raw != nil && !full(); raw = iter.Next() {
		d := raw.(*Deployment)
		if taken[d.ID] {
			continue
		}
		ok, err := g.deploymentCandidate(d)
		if err != nil {
			return nil, err
		}
		if ok {
			req.DeploymentIDs = append(req.DeploymentIDs, d.ID)
			n++
		}
	}

	iter, err = txn.Get(nodesTable, "id")
	if err != nil {
		return nil, fmt.Errorf("failed node list: %w", err)
	}
	for raw := iter.Next(); raw != nil && !full(); raw = iter.Next() {
		ok, err := g.nodeCandidate(raw.(*Node))
		if err != nil {
			return nil, err
		}
		if ok {
			req.NodeIDs = append(req.NodeIDs, raw.(*Node).ID)
			n++
		}
	}
	return req, nil
}
