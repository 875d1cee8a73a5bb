package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const jobSummaryTable = "job_summary"

// JobSummary counts a job's allocations per task group by client status, as
// Nomad's job_summary table does. The store keeps it on every write that
// changes the job, its allocations or its evaluations (commitOrch), at the
// Raft index of that write.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary is one group's counts (Nomad's field names).
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// JobChildrenSummary counts the child jobs of a periodic or parameterized
// job; ctlplane has neither, so it stays at zero (never nil: Nomad's CLI
// reads it).
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

func (s *JobSummary) copy() *JobSummary {
	c := *s
	c.Summary = make(map[string]TaskGroupSummary, len(s.Summary))
	for k, v := range s.Summary {
		c.Summary[k] = v
	}
	if s.Children != nil {
		ch := *s.Children
		c.Children = &ch
	}
	return &c
}

// bin is the counter of a client status, nil for none.
func (t *TaskGroupSummary) bin(status string) *int {
	switch status {
	case AllocClientStatusPending:
		return &t.Starting
	case AllocClientStatusRunning:
		return &t.Running
	case AllocClientStatusComplete:
		return &t.Complete
	case AllocClientStatusFailed:
		return &t.Failed
	case AllocClientStatusLost:
		return &t.Lost
	case AllocClientStatusUnknown:
		return &t.Unknown
	}
	return nil
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: jobSummaryTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				stringIndex("Namespace", func(o *JobSummary) string { return o.Namespace }),
				stringIndex("JobID", func(o *JobSummary) string { return o.JobID }),
			}}},
		},
	}, func() any { return new(JobSummary) })
}

// JobSummary returns a job's summary, or nil, with the summary table's index.
func (s *Store) JobSummary(ws memdb.WatchSet, ns, id string) (uint64, *JobSummary, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(jobSummaryTable, "id", ns, id)
	if err != nil {
		return 0, nil, fmt.Errorf("failed job summary lookup: %w", err)
	}
	ws.Add(ch)
	idx := maxIndex(txn, jobSummaryTable)
	if raw == nil {
		watchTableIndex(txn, ws, jobSummaryTable)
		return idx, nil, nil
	}
	return idx, raw.(*JobSummary), nil
}

// JobSummaries returns the summaries of the given jobs, by namespace and ID,
// from one read (the job list's stubs carry them).
func (s *Store) JobSummaries(ws memdb.WatchSet, jobs []*Job) (uint64, map[[2]string]*JobSummary, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	watchTableIndex(txn, ws, jobSummaryTable)
	out := make(map[[2]string]*JobSummary, len(jobs))
	for _, j := range jobs {
		raw, err := txn.First(jobSummaryTable, "id", j.Namespace, j.ID)
		if err != nil {
			return 0, nil, fmt.Errorf("failed job summary lookup: %w", err)
		}
		if raw != nil {
			out[[2]string{j.Namespace, j.ID}] = raw.(*JobSummary)
		}
	}
	return maxIndex(txn, jobSummaryTable), out, nil
}

// commitOrch updates the summaries of the jobs txn touched, at idx, and
// commits; the nodes' allocation watch takes the commit in. A summary
// write can only fail on a broken schema: it panics, as maxIndex does,
// rather than leave the summaries behind the allocations.
func (s *Store) commitOrch(txn *memdb.Txn, idx uint64) {
	changes := txn.Changes()
	if err := updateSummariesTxn(txn, idx, changes); err != nil {
		panic(fmt.Sprintf("state: job summary update at index %d: %v", idx, err))
	}
	if err := updateServicesTxn(txn, idx, changes); err != nil {
		panic(fmt.Sprintf("state: service registration update at index %d: %v", idx, err))
	}
	// Nothing is written after: these are the changes committed (memdb
	// builds the list anew on every call). Once committed, the nodes'
	// usage takes them in, then the change log.
	final := txn.Changes()
	tracking := s.tracking()
	txn.Defer(func() {
		s.usage.apply(final)
		if tracking {
			s.logChanges(final)
		}
	})
	s.nodeAllocs.commit(txn, idx, final)
}

// updateSummariesTxn applies Nomad's summary rules to a transaction's
// changes: jobs first (a new job, or a job created again, starts a zeroed
// summary; a new group gets a zeroed entry; a deleted job loses its
// summary), then allocations (an inserted one counts in the bin of its
// client status, Starting for pending, taking one from Queued; a changed
// client status moves it between bins; a deleted one stays counted, as
// garbage collection leaves Nomad's summary alone), then evaluations (their
// QueuedAllocations set Queued).
func updateSummariesTxn(txn *memdb.Txn, idx uint64, changes memdb.Changes) error {
	touched := map[[2]string]*JobSummary{}
	deleted := map[[2]string]bool{}
	get := func(ns, id string) (*JobSummary, error) {
		k := [2]string{ns, id}
		if s, ok := touched[k]; ok {
			return s, nil
		}
		if deleted[k] {
			return nil, nil
		}
		raw, err := txn.First(jobSummaryTable, "id", ns, id)
		if err != nil || raw == nil {
			return nil, err
		}
		s := raw.(*JobSummary).copy()
		touched[k] = s
		return s, nil
	}
	for _, c := range changes {
		if c.Table != jobsTable {
			continue
		}
		if c.After == nil {
			j := c.Before.(*Job)
			k := [2]string{j.Namespace, j.ID}
			delete(touched, k)
			deleted[k] = true
			continue
		}
		j := c.After.(*Job)
		k := [2]string{j.Namespace, j.ID}
		s, err := get(j.Namespace, j.ID)
		if err != nil {
			return err
		}
		if s == nil || s.CreateIndex != j.CreateIndex {
			s = &JobSummary{JobID: j.ID, Namespace: j.Namespace, Summary: map[string]TaskGroupSummary{},
				Children: &JobChildrenSummary{}, CreateIndex: j.CreateIndex}
		}
		delete(deleted, k)
		touched[k] = s
		for _, tg := range j.TaskGroups {
			if _, ok := s.Summary[tg.Name]; !ok {
				s.Summary[tg.Name] = TaskGroupSummary{}
			}
		}
	}
	for _, c := range changes {
		if c.Table != allocsTable || c.After == nil {
			continue
		}
		a := c.After.(*Allocation)
		var before *Allocation
		if c.Before != nil {
			before = c.Before.(*Allocation)
			if before.ClientStatus == a.ClientStatus {
				continue
			}
		}
		s, err := get(a.Namespace, a.JobID)
		if err != nil {
			return err
		}
		// Allocations older than the job were an earlier job's of that ID.
		if s == nil || a.CreateIndex < s.CreateIndex {
			continue
		}
		tg := s.Summary[a.TaskGroup]
		if before == nil && a.ClientStatus == AllocClientStatusPending && tg.Queued > 0 {
			tg.Queued--
		}
		if b := tg.bin(a.ClientStatus); b != nil {
			*b++
		}
		if before != nil {
			if b := tg.bin(before.ClientStatus); b != nil && *b > 0 {
				*b--
			}
		}
		s.Summary[a.TaskGroup] = tg
	}
	for _, c := range changes {
		if c.Table != evalsTable || c.After == nil {
			continue
		}
		e := c.After.(*Evaluation)
		if len(e.QueuedAllocations) == 0 {
			continue
		}
		s, err := get(e.Namespace, e.JobID)
		if err != nil || s == nil {
			if err != nil {
				return err
			}
			continue
		}
		for name, n := range e.QueuedAllocations {
			if tg, ok := s.Summary[name]; ok {
				tg.Queued = n
				s.Summary[name] = tg
			}
		}
	}
	return writeSummariesTxn(txn, idx, touched, deleted)
}

// writeSummariesTxn stores the summaries that changed and deletes those of
// deleted jobs.
func writeSummariesTxn(txn *memdb.Txn, idx uint64, touched map[[2]string]*JobSummary, deleted map[[2]string]bool) error {
	wrote := false
	for k := range deleted {
		if err := deleteScalingEventsTxn(txn, idx, k[0], k[1]); err != nil {
			return err
		}
		raw, err := txn.First(jobSummaryTable, "id", k[0], k[1])
		if err != nil {
			return fmt.Errorf("failed job summary lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		if err := txn.Delete(jobSummaryTable, raw); err != nil {
			return fmt.Errorf("failed deleting job summary: %w", err)
		}
		wrote = true
	}
	for _, s := range touched {
		raw, err := txn.First(jobSummaryTable, "id", s.Namespace, s.JobID)
		if err != nil {
			return fmt.Errorf("failed job summary lookup: %w", err)
		}
		if raw != nil && summaryEqual(raw.(*JobSummary), s) {
			continue
		}
		s.ModifyIndex = idx
		if err := txn.Insert(jobSummaryTable, s); err != nil {
			return fmt.Errorf("failed inserting job summary: %w", err)
		}
		wrote = true
	}
	if wrote {
		return setIndex(txn, jobSummaryTable, idx)
	}
	return nil
}

func summaryEqual(a, b *JobSummary) bool {
	if a.CreateIndex != b.CreateIndex || len(a.Summary) != len(b.Summary) {
		return false
	}
	for k, v := range a.Summary {
		if w, ok := b.Summary[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// rebuildSummariesTxn derives every job's summary from its allocations, for
// a store restored from a snapshot taken before summaries were kept.
func rebuildSummariesTxn(txn *memdb.Txn) error {
	jobs, err := listTxn[Job](txn, nil, jobsTable, "id")
	if err != nil || len(jobs) == 0 {
		return err
	}
	raw, err := txn.First(jobSummaryTable, "id")
	if err != nil || raw != nil {
		return err // summaries came with the snapshot
	}
	idx := maxIndex(txn, jobsTable, allocsTable)
	for _, j := range jobs {
		s := &JobSummary{JobID: j.ID, Namespace: j.Namespace, Summary: map[string]TaskGroupSummary{},
			Children: &JobChildrenSummary{}, CreateIndex: j.CreateIndex, ModifyIndex: idx}
		for _, tg := range j.TaskGroups {
			s.Summary[tg.Name] = TaskGroupSummary{}
		}
		allocs, err := listTxn[Allocation](txn, nil, allocsTable, "job", j.Namespace, j.ID)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.CreateIndex < j.CreateIndex {
				continue
			}
			tg := s.Summary[a.TaskGroup]
			if b := tg.bin(a.ClientStatus); b != nil {
				*b++
			}
			s.Summary[a.TaskGroup] = tg
		}
		if err := txn.Insert(jobSummaryTable, s); err != nil {
			return fmt.Errorf("failed inserting job summary: %w", err)
		}
	}
	return setIndex(txn, jobSummaryTable, idx)
}
