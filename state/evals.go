package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const evalsTable = "evals"

// Evaluation statuses (Nomad's values).
const (
	EvalStatusPending  = "pending"
	EvalStatusBlocked  = "blocked"
	EvalStatusComplete = "complete"
	EvalStatusFailed   = "failed"
	EvalStatusCanceled = "canceled"
)

// What triggered an evaluation (Nomad's values).
const (
	EvalTriggerJobRegister       = "job-register"
	EvalTriggerJobDeregister     = "job-deregister"
	EvalTriggerNodeUpdate        = "node-update"
	EvalTriggerNodeDrain         = "node-drain"
	EvalTriggerAllocStop         = "alloc-stop"
	EvalTriggerRetryFailedAlloc  = "alloc-failure"
	EvalTriggerRollingUpdate     = "rolling-update"
	EvalTriggerDeploymentWatcher = "deployment-watcher"
	EvalTriggerFailedFollowUp    = "failed-follow-up"
	EvalTriggerQueuedAllocs      = "queued-allocs"
	EvalTriggerScaling           = "job-scaling"
	EvalTriggerMaxPlans          = "max-plan-attempts"
	EvalTriggerMaxDisconnect     = "max-disconnect-timeout"
	EvalTriggerReconnect         = "reconnect"
)

// Evaluation asks the scheduler to reconcile one job with the cluster.
type Evaluation struct {
	ID                string `codec:",omitempty"`
	Namespace         string `codec:",omitempty"`
	Priority          int    `codec:",omitempty"`
	Type              string `codec:",omitempty"`
	TriggeredBy       string `codec:",omitempty"`
	JobID             string `codec:",omitempty"`
	JobModifyIndex    uint64 `codec:",omitempty"`
	NodeID            string `codec:",omitempty"`
	DeploymentID      string `codec:",omitempty"`
	Status            string `codec:",omitempty"`
	StatusDescription string `codec:",omitempty"`
	// WaitUntil delays a follow-up evaluation (Unix nanoseconds; 0: at once).
	WaitUntil    int64  `codec:",omitempty"`
	NextEval     string `codec:",omitempty"`
	PreviousEval string `codec:",omitempty"`
	BlockedEval  string `codec:",omitempty"`
	// QueuedAllocations per group that could not be placed.
	QueuedAllocations map[string]int
	// FailedTGAllocs says, per group, why allocations could not be placed.
	FailedTGAllocs map[string]*AllocMetric
	// ClassEligibility (on a blocked evaluation) says, per computed node
	// class the scheduler saw, whether it could use such a node; with
	// EscapedComputedClass any node may help. The broker re-runs the
	// evaluation only when a node of an eligible or unseen class (or any
	// node, when escaped) becomes ready.
	ClassEligibility     map[string]bool
	EscapedComputedClass bool `codec:",omitempty"`
	// SnapshotIndex, on a blocked evaluation, is the nodes table's index in
	// the state the scheduler saw: when the nodes have changed since, the
	// broker runs it again at once (the change may have come too early to
	// wake it).
	SnapshotIndex uint64 `codec:",omitempty"`
	CreateIndex   uint64 `codec:",omitempty"`
	ModifyIndex   uint64 `codec:",omitempty"`
	CreateTime    int64  `codec:",omitempty"`
	ModifyTime    int64  `codec:",omitempty"`
}

// Terminal says whether the evaluation is done with.
func (e *Evaluation) Terminal() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCanceled:
		return true
	}
	return false
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: evalsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: uuidIndex("ID", func(o *Evaluation) string { return o.ID })},
			"job": {Name: "job", Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				stringIndex("Namespace", func(o *Evaluation) string { return o.Namespace }),
				stringIndex("JobID", func(o *Evaluation) string { return o.JobID }),
			}}},
			"status": {Name: "status", Indexer: stringIndex("Status", func(o *Evaluation) string { return o.Status })},
			// ModifyIndex order, for readers that follow only what changed.
			"modify": {Name: "modify", Indexer: uint64Index("ModifyIndex", func(o *Evaluation) uint64 { return o.ModifyIndex })},
		},
	}, func() any { return new(Evaluation) })
}

// Eval returns the evaluation with that ID, or nil.
func (s *Store) Eval(ws memdb.WatchSet, id string) (uint64, *Evaluation, error) {
	return getOneOrWatchTable[Evaluation](s, ws, evalsTable, id)
}

// Evals lists the evaluations of namespace ns (AllNamespaces: every one), by ID.
func (s *Store) Evals(ws memdb.WatchSet, ns string) (uint64, []*Evaluation, error) {
	return getAll(s, ws, evalsTable, func(e *Evaluation) bool { return ns == AllNamespaces || e.Namespace == ns })
}

// EvalsByJob lists a job's evaluations, by ID.
func (s *Store) EvalsByJob(ws memdb.WatchSet, ns, jobID string) (uint64, []*Evaluation, error) {
	return getByIndex[Evaluation](s, ws, evalsTable, "job", ns, jobID)
}

// EvalsByStatus lists the evaluations with a status (e.g. pending), by ID.
func (s *Store) EvalsByStatus(ws memdb.WatchSet, status string) (uint64, []*Evaluation, error) {
	return getByIndex[Evaluation](s, ws, evalsTable, "status", status)
}

// EvalsModifiedSince lists the evaluations written after index, in
// ModifyIndex order; ws fires on the next write to the table. The index
// returned is the table's.
func (s *Store) EvalsModifiedSince(ws memdb.WatchSet, index uint64) (uint64, []*Evaluation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	watchTableIndex(txn, ws, evalsTable)
	iter, err := txn.LowerBound(evalsTable, "modify", index+1)
	if err != nil {
		return 0, nil, fmt.Errorf("failed evaluation list: %w", err)
	}
	var out []*Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*Evaluation))
	}
	return maxIndex(txn, evalsTable), out, nil
}

// EvalsUpsert inserts or replaces evaluations at idx.
func (s *Store) EvalsUpsert(idx uint64, evals []*Evaluation) error {
	txn := s.orchTxn()
	defer txn.Abort()
	jobs := map[[2]string]bool{}
	for _, e := range evals {
		if err := upsertEvalTxn(txn, idx, e); err != nil {
			return err
		}
		jobs[[2]string{e.Namespace, e.JobID}] = true
	}
	// An evaluation's status is part of its job's (pending while one waits).
	for k := range jobs {
		if err := refreshJobStatusTxn(txn, idx, k[0], k[1]); err != nil {
			return err
		}
	}
	s.commitOrch(txn, idx)
	return nil
}

// upsertEvalTxn inserts or replaces one evaluation, keeping its CreateIndex.
func upsertEvalTxn(txn *memdb.Txn, idx uint64, eval *Evaluation) error {
	if eval.ID == "" {
		return errorf(ErrInvalid, "evaluation is missing its ID")
	}
	stored := *eval
	raw, err := txn.First(evalsTable, "id", eval.ID)
	if err != nil {
		return fmt.Errorf("failed evaluation lookup: %w", err)
	}
	if raw != nil {
		stored.CreateIndex = raw.(*Evaluation).CreateIndex
		stored.CreateTime = raw.(*Evaluation).CreateTime
	} else {
		stored.CreateIndex = idx
	}
	stored.ModifyIndex = idx
	if err := txn.Insert(evalsTable, &stored); err != nil {
		return fmt.Errorf("failed inserting evaluation: %w", err)
	}
	return setIndex(txn, evalsTable, idx)
}

// getOneOrWatchTable reads one row by its "id" index; a missing row also
// watches the table, so that a blocked read wakes when it is created.
func getOneOrWatchTable[T any](s *Store, ws memdb.WatchSet, table string, id string) (uint64, *T, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(table, "id", id)
	if err != nil {
		return 0, nil, fmt.Errorf("failed %s lookup: %w", table, err)
	}
	ws.Add(ch)
	idx := maxIndex(txn, table)
	if raw == nil {
		watchTableIndex(txn, ws, table)
		return idx, nil, nil
	}
	return idx, raw.(*T), nil
}

// getByIndex lists the rows of table matching index = args.
func getByIndex[T any](s *Store, ws memdb.WatchSet, table, index string, args ...any) (uint64, []*T, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out, err := listTxn[T](txn, ws, table, index, args...)
	if err != nil {
		return 0, nil, err
	}
	return maxIndex(txn, table), out, nil
}

func listTxn[T any](txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) ([]*T, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("failed %s list: %w", table, err)
	}
	if ws != nil {
		ws.Add(iter.WatchCh())
	}
	out := []*T{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*T))
	}
	return out, nil
}
