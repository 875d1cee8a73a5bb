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

// GCApply deletes at idx the candidates of req that still qualify under
// req.Params in this state; the others are kept (they changed since they
// were chosen). Every decision is taken before anything is deleted, so the
// order of the request does not matter. Each table it deletes from has its
// index set to idx, which wakes the blocking queries on it.
func (s *Store) GCApply(idx uint64, req *GCRequest) (*GCResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	g := newGCReader(txn, req.Params)

	var (
		jobs        []*jobObjects
		evals       []*Evaluation
		allocs      = map[string]*Allocation{}
		deployments = map[string]*Deployment{}
		nodes       []*Node
	)
	for _, k := range req.Jobs {
		j, err := g.job(k.Namespace, k.ID)
		if err != nil {
			return nil, err
		}
		if j == nil {
			continue
		}
		objs, err := g.jobCandidate(j)
		if err != nil {
			return nil, err
		}
		if objs != nil {
			jobs = append(jobs, objs)
		}
	}
	// Allocations first: an evaluation goes only if all of its do.
	for _, id := range req.AllocIDs {
		raw, err := txn.First(allocsTable, "id", id)
		if err != nil {
			return nil, fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		ok, err := g.allocCandidate(raw.(*Allocation))
		if err != nil {
			return nil, err
		}
		if ok {
			allocs[id] = raw.(*Allocation)
		}
	}
	for _, id := range req.EvalIDs {
		raw, err := txn.First(evalsTable, "id", id)
		if err != nil {
			return nil, fmt.Errorf("failed evaluation lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		all, its, _, err := g.evalCandidate(raw.(*Evaluation))
		if err != nil {
			return nil, err
		}
		for _, a := range its {
			all = all && allocs[a.ID] != nil
		}
		if all {
			evals = append(evals, raw.(*Evaluation))
		}
	}
	for _, id := range req.DeploymentIDs {
		raw, err := txn.First(deploymentsTable, "id", id)
		if err != nil {
			return nil, fmt.Errorf("failed deployment lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		ok, err := g.deploymentCandidate(raw.(*Deployment))
		if err != nil {
			return nil, err
		}
		if ok {
			deployments[id] = raw.(*Deployment)
		}
	}
	for _, id := range req.NodeIDs {
		raw, err := txn.First(nodesTable, "id", id)
		if err != nil {
			return nil, fmt.Errorf("failed node lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		ok, err := g.nodeCandidate(raw.(*Node))
		if err != nil {
			return nil, err
		}
		if ok {
			nodes = append(nodes, raw.(*Node))
		}
	}

	// Delete. A job's objects join the sets (the sets deduplicate).
	res := &GCResult{Index: idx}
	touched := map[string]bool{}
	del := func(table string, obj any) error {
		if err := txn.Delete(table, obj); err != nil {
			return fmt.Errorf("failed deleting from %s: %w", table, err)
		}
		touched[table] = true
		return nil
	}
	evalSet := map[string]*Evaluation{}
	for _, e := range evals {
		evalSet[e.ID] = e
	}
	for _, o := range jobs {
		if err := del(jobsTable, o.job); err != nil {
			return nil, err
		}
		res.Jobs++
		versions, err := jobVersionsTxn(txn, nil, o.job.Namespace, o.job.ID)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			if err := del(jobVersionsTable, v); err != nil {
				return nil, err
			}
		}
		for _, e := range o.evals {
			evalSet[e.ID] = e
		}
		for _, a := range o.allocs {
			allocs[a.ID] = a
		}
		for _, d := range o.deployments {
			deployments[d.ID] = d
		}
	}
	for _, e := range evalSet {
		if err := del(evalsTable, e); err != nil {
			return nil, err
		}
		res.Evals++
	}
	for _, a := range allocs {
		if err := del(allocsTable, a); err != nil {
			return nil, err
		}
		res.Allocs++
	}
	for _, d := range deployments {
		if err := del(deploymentsTable, d); err != nil {
			return nil, err
		}
		res.Deployments++
		events, err := listTxn[DeploymentEvent](txn, nil, deploymentHistoryTable, "id_prefix", d.ID)
		if err != nil {
			return nil, err
		}
		for _, ev := range events {
			if err := del(deploymentHistoryTable, ev); err != nil {
				return nil, err
			}
			res.History++
		}
	}
	for _, n := range nodes {
		if err := del(nodesTable, n); err != nil {
			return nil, err
		}
		res.Nodes++
	}
	for table := range touched {
		if err := setIndex(txn, table, idx); err != nil {
			return nil, err
		}
	}
	s.commitOrch(txn, idx)
	return res, nil
}
