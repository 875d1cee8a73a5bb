package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// GCApply deletes at idx the candidates of req that still qualify under
// req.Params in this state; the others are kept (they changed since they
// were chosen). Every decision is taken before anything is deleted, so the
// order of the request does not matter. Each table it deletes from has its
// index set to idx, which wakes the blocking queries on it.
func (s *Store) GCApply(idx uint64, req *GCRequest) (*GCResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	batch, err := newGCReader(txn, req.Params).recheck(req)
	if err != nil {
		return nil, err
	}
	d := &gcDeleter{txn: txn, res: &GCResult{Index: idx}, touched: map[string]bool{}}
	if err := d.deleteBatch(batch); err != nil {
		return nil, err
	}
	for table := range d.touched {
		if err := setIndex(txn, table, idx); err != nil {
			return nil, err
		}
	}
	s.commitOrch(txn, idx)
	return d.res, nil
}

// gcBatch is what one GC write deletes: the candidates that still qualify.
type gcBatch struct {
	jobs        []*jobObjects
	evals       []*Evaluation
	allocs      map[string]*Allocation
	deployments map[string]*Deployment
	nodes       []*Node
}

// recheck keeps the candidates of req that still qualify in g's state.
// Allocations come before evaluations: an evaluation goes only if all of
// its allocations do.
func (g *gcReader) recheck(req *GCRequest) (*gcBatch, error) {
	b := &gcBatch{allocs: map[string]*Allocation{}, deployments: map[string]*Deployment{}}
	if err := g.recheckJobs(req, b); err != nil {
		return nil, err
	}
	if err := recheckIDs(g.txn, allocsTable, "allocation", req.AllocIDs, g.allocCandidate,
		func(a *Allocation) { b.allocs[a.ID] = a }); err != nil {
		return nil, err
	}
	evalQualifies := func(e *Evaluation) (bool, error) {
		all, its, _, err := g.evalCandidate(e)
		if err != nil {
			return false, err
		}
		for _, a := range its {
			all = all && b.allocs[a.ID] != nil
		}
		return all, nil
	}
	if err := recheckIDs(g.txn, evalsTable, "evaluation", req.EvalIDs, evalQualifies,
		func(e *Evaluation) { b.evals = append(b.evals, e) }); err != nil {
		return nil, err
	}
	if err := recheckIDs(g.txn, deploymentsTable, "deployment", req.DeploymentIDs, g.deploymentCandidate,
		func(d *Deployment) { b.deployments[d.ID] = d }); err != nil {
		return nil, err
	}
	if err := recheckIDs(g.txn, nodesTable, "node", req.NodeIDs, g.nodeCandidate,
		func(n *Node) { b.nodes = append(b.nodes, n) }); err != nil {
		return nil, err
	}
	return b, nil
}

func (g *gcReader) recheckJobs(req *GCRequest, b *gcBatch) error {
	for _, k := range req.Jobs {
		j, err := g.job(k.Namespace, k.ID)
		if err != nil {
			return err
		}
		if j == nil {
			continue
		}
		objs, err := g.jobCandidate(j)
		if err != nil {
			return err
		}
		if objs != nil {
			b.jobs = append(b.jobs, objs)
		}
	}
	return nil
}

// recheckIDs reads each of ids from table and passes those still there
// that qualify to keep.
func recheckIDs[T any](txn *memdb.Txn, table, what string, ids []string, qualifies func(*T) (bool, error), keep func(*T)) error {
	for _, id := range ids {
		obj, err := gcLookup[T](txn, table, what, id)
		if err != nil {
			return err
		}
		if obj == nil {
			continue
		}
		ok, err := qualifies(obj)
		if err != nil {
			return err
		}
		if ok {
			keep(obj)
		}
	}
	return nil
}

// gcLookup reads the row of table whose id is id (nil: it is gone).
func gcLookup[T any](txn *memdb.Txn, table, what, id string) (*T, error) {
	raw, err := txn.First(table, "id", id)
	if err != nil {
		return nil, fmt.Errorf("failed %s lookup: %w", what, err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*T), nil
}

// gcDeleter deletes a batch, counting what it deleted and noting the
// tables it touched (their indexes are set afterwards).
type gcDeleter struct {
	txn     *memdb.Txn
	res     *GCResult
	touched map[string]bool
}

func (d *gcDeleter) del(table string, obj any) error {
	if err := d.txn.Delete(table, obj); err != nil {
		return fmt.Errorf("failed deleting from %s: %w", table, err)
	}
	d.touched[table] = true
	return nil
}

// deleteBatch deletes b. A job's objects join the sets (the sets
// deduplicate).
func (d *gcDeleter) deleteBatch(b *gcBatch) error {
	evalSet := map[string]*Evaluation{}
	for _, e := range b.evals {
		evalSet[e.ID] = e
	}
	for _, o := range b.jobs {
		if err := d.deleteJob(o.job); err != nil {
			return err
		}
		for _, e := range o.evals {
			evalSet[e.ID] = e
		}
		for _, a := range o.allocs {
			b.allocs[a.ID] = a
		}
		for _, dep := range o.deployments {
			b.deployments[dep.ID] = dep
		}
	}
	for _, e := range evalSet {
		if err := d.del(evalsTable, e); err != nil {
			return err
		}
		d.res.Evals++
	}
	for _, a := range b.allocs {
		if err := d.del(allocsTable, a); err != nil {
			return err
		}
		d.res.Allocs++
	}
	for _, dep := range b.deployments {
		if err := d.deleteDeployment(dep); err != nil {
			return err
		}
	}
	for _, n := range b.nodes {
		if err := d.del(nodesTable, n); err != nil {
			return err
		}
		d.res.Nodes++
	}
	return nil
}

// deleteJob deletes a job with its versions.
func (d *gcDeleter) deleteJob(j *Job) error {
	if err := d.del(jobsTable, j); err != nil {
		return err
	}
	d.res.Jobs++
	versions, err := jobVersionsTxn(d.txn, nil, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := d.del(jobVersionsTable, v); err != nil {
			return err
		}
	}
	return nil
}

// deleteDeployment deletes a deployment with its history.
func (d *gcDeleter) deleteDeployment(dep *Deployment) error {
	if err := d.del(deploymentsTable, dep); err != nil {
		return err
	}
	d.res.Deployments++
	events, err := listTxn[DeploymentEvent](d.txn, nil, deploymentHistoryTable, "id_prefix", dep.ID)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if err := d.del(deploymentHistoryTable, ev); err != nil {
			return err
		}
		d.res.History++
	}
	return nil
}
