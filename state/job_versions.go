package state

// A job's versions: every version registered, kept up to the newest few
// (pruneJobVersionsTxn), with their stable marks.

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

func init() {
	registerTable(&memdb.TableSchema{
		Name: jobVersionsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "ID"},
				&memdb.UintFieldIndex{Field: "Version"},
			}}},
		},
	}, func() any { return new(Job) })
}

// JobVersions lists every version of a job, newest first.
func (s *Store) JobVersions(ws memdb.WatchSet, ns, id string) (uint64, []*Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out, err := jobVersionsTxn(txn, ws, ns, id)
	if err != nil {
		return 0, nil, err
	}
	return maxIndex(txn, jobVersionsTable, jobsTable), out, nil
}

func jobVersionsTxn(txn *memdb.Txn, ws memdb.WatchSet, ns, id string) ([]*Job, error) {
	iter, err := txn.Get(jobVersionsTable, "id_prefix", ns, id)
	if err != nil {
		return nil, fmt.Errorf("failed job version list: %w", err)
	}
	ws.Add(iter.WatchCh())
	var out []*Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		j := raw.(*Job)
		// The prefix also matches IDs that only start with id.
		if j.ID == id {
			out = append(out, j)
		}
	}
	for i, k := 0, len(out)-1; i < k; i, k = i+1, k-1 {
		out[i], out[k] = out[k], out[i]
	}
	return out, nil
}

// JobTrackedVersions is how many versions of a job are kept (Nomad's
// default): a new version deletes the older ones beyond it, except the latest
// stable version (what a failed deployment rolls back to) and any version an
// allocation or a deployment still refers to (the scheduler, the deployment
// watcher and the clients read those); they go once garbage collection has
// taken what refers to them and a newer version is registered.
const JobTrackedVersions = 6

func pruneJobVersionsTxn(txn *memdb.Txn, ns, id string) error {
	versions, err := jobVersionsTxn(txn, nil, ns, id) // newest first
	if err != nil || len(versions) <= JobTrackedVersions {
		return err
	}
	keep := map[uint64]bool{}
	for _, v := range versions {
		if v.Stable {
			keep[v.Version] = true
			break
		}
	}
	allocs, err := txn.Get(allocsTable, "job", ns, id)
	if err != nil {
		return fmt.Errorf("failed allocation lookup: %w", err)
	}
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		keep[raw.(*Allocation).JobVersion] = true
	}
	deployments, err := txn.Get(deploymentsTable, "job", ns, id)
	if err != nil {
		return fmt.Errorf("failed deployment lookup: %w", err)
	}
	for raw := deployments.Next(); raw != nil; raw = deployments.Next() {
		keep[raw.(*Deployment).JobVersion] = true
	}
	for _, v := range versions[JobTrackedVersions:] {
		if keep[v.Version] {
			continue
		}
		if err := txn.Delete(jobVersionsTable, v); err != nil {
			return fmt.Errorf("failed deleting job version: %w", err)
		}
	}
	return nil
}

// JobVersion returns one version of a job, or nil.
func (s *Store) JobVersion(ws memdb.WatchSet, ns, id string, version uint64) (uint64, *Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(jobVersionsTable, "id", ns, id, version)
	if err != nil {
		return 0, nil, fmt.Errorf("failed job version lookup: %w", err)
	}
	ws.Add(ch)
	idx := maxIndex(txn, jobVersionsTable)
	if raw == nil {
		return idx, nil, nil
	}
	return idx, raw.(*Job), nil
}

// LatestStableJob is the highest version of the job marked stable, or nil.
func (s *Store) LatestStableJob(ws memdb.WatchSet, ns, id string) (*Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return latestStableTxn(txn, ws, ns, id)
}

func latestStableTxn(txn *memdb.Txn, ws memdb.WatchSet, ns, id string) (*Job, error) {
	versions, err := jobVersionsTxn(txn, ws, ns, id)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if v.Stable {
			return v, nil
		}
	}
	return nil, nil
}

// JobSetStable marks one version of a job stable or not at idx.
func (s *Store) JobSetStable(idx uint64, ns, id string, version uint64, stable bool) error {
	txn := s.orchTxn()
	defer txn.Abort()
	if err := setJobStableTxn(txn, idx, ns, id, version, stable); err != nil {
		return err
	}
	s.commitOrch(txn, idx)
	return nil
}

func setJobStableTxn(txn *memdb.Txn, idx uint64, ns, id string, version uint64, stable bool) error {
	raw, err := txn.First(jobVersionsTable, "id", ns, id, version)
	if err != nil {
		return fmt.Errorf("failed job version lookup: %w", err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "job %q has no version %d", id, version)
	}
	v := raw.(*Job).Copy()
	v.Stable = stable
	if err := txn.Insert(jobVersionsTable, v); err != nil {
		return fmt.Errorf("failed updating job version: %w", err)
	}
	if err := setIndex(txn, jobVersionsTable, idx); err != nil {
		return err
	}
	// The latest version is also the jobs table's row.
	cur, err := txn.First(jobsTable, "id", ns, id)
	if err != nil {
		return fmt.Errorf("failed job lookup: %w", err)
	}
	if cur != nil && cur.(*Job).Version == version {
		j := cur.(*Job).Copy()
		j.Stable = stable
		j.ModifyIndex = idx
		if err := txn.Insert(jobsTable, j); err != nil {
			return fmt.Errorf("failed updating job: %w", err)
		}
		if err := setIndex(txn, jobsTable, idx); err != nil {
			return err
		}
	}
	return nil
}
