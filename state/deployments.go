package state

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

const deploymentsTable = "deployments"

// Deployment statuses (Nomad's values).
const (
	DeploymentStatusRunning      = "running"
	DeploymentStatusPaused       = "paused"
	DeploymentStatusFailed       = "failed"
	DeploymentStatusSuccessful   = "successful"
	DeploymentStatusCancelled    = "cancelled"
	DeploymentStatusInitializing = "initializing"
	DeploymentStatusPending      = "pending"
	DeploymentStatusBlocked      = "blocked"
	DeploymentStatusUnblocking   = "unblocking"
)

// Deployment status descriptions (Nomad's texts, verbatim).
const (
	DeploymentStatusDescriptionRunning               = "Deployment is running"
	DeploymentStatusDescriptionRunningNeedsPromotion = "Deployment is running but requires manual promotion"
	DeploymentStatusDescriptionRunningAutoPromotion  = "Deployment is running pending automatic promotion"
	DeploymentStatusDescriptionPaused                = "Deployment is paused"
	DeploymentStatusDescriptionSuccessful            = "Deployment completed successfully"
	DeploymentStatusDescriptionStoppedJob            = "Cancelled because job is stopped"
	DeploymentStatusDescriptionNewerJob              = "Cancelled due to newer version of job"
	DeploymentStatusDescriptionFailedAllocations     = "Failed due to unhealthy allocations"
	DeploymentStatusDescriptionProgressDeadline      = "Failed due to progress deadline"
	DeploymentStatusDescriptionFailedByUser          = "Deployment marked as failed"
	DeploymentStatusDescriptionFailedByPeer          = "Failed because of an error in peer region"
	DeploymentStatusDescriptionBlocked               = "Deployment is complete but waiting for peer region"
	DeploymentStatusDescriptionUnblocking            = "Deployment is unblocking remaining regions"
	DeploymentStatusDescriptionPendingForPeer        = "Deployment is pending, waiting for peer region"
)

// DeploymentStatusDescriptionRollback and friends add Nomad's rollback
// suffixes to a base description.
func DeploymentStatusDescriptionRollback(base string, version uint64) string {
	return fmt.Sprintf("%s - rolling back to job version %d", base, version)
}

func DeploymentStatusDescriptionRollbackNoop(base string, version uint64) string {
	return fmt.Sprintf("%s - not rolling back to stable job version %d as current job has same specification", base, version)
}

func DeploymentStatusDescriptionNoRollbackTarget(base string) string {
	return base + " - no stable job version to auto revert to"
}

// Deployment tracks the rollout of one version of a job.
type Deployment struct {
	ID                 string `codec:",omitempty"`
	Namespace          string `codec:",omitempty"`
	JobID              string `codec:",omitempty"`
	JobVersion         uint64 `codec:",omitempty"`
	JobModifyIndex     uint64 `codec:",omitempty"`
	JobSpecModifyIndex uint64 `codec:",omitempty"`
	JobCreateIndex     uint64 `codec:",omitempty"`
	IsMultiregion      bool   `codec:",omitempty"`
	TaskGroups         map[string]*DeploymentState
	Status             string `codec:",omitempty"`
	StatusDescription  string `codec:",omitempty"`
	EvalPriority       int    `codec:",omitempty"`
	CreateIndex        uint64 `codec:",omitempty"`
	ModifyIndex        uint64 `codec:",omitempty"`
	CreateTime         int64  `codec:",omitempty"`
	ModifyTime         int64  `codec:",omitempty"`
}

// DeploymentState is one task group's progress in a deployment.
type DeploymentState struct {
	AutoRevert       bool          `codec:",omitempty"`
	AutoPromote      bool          `codec:",omitempty"`
	ProgressDeadline time.Duration `codec:",omitempty"`
	// RequireProgressBy is nil until the first placement.
	RequireProgressBy *time.Time
	Promoted          bool `codec:",omitempty"`
	PlacedCanaries    []string
	DesiredCanaries   int `codec:",omitempty"`
	DesiredTotal      int `codec:",omitempty"`
	PlacedAllocs      int `codec:",omitempty"`
	HealthyAllocs     int `codec:",omitempty"`
	UnhealthyAllocs   int `codec:",omitempty"`
}

// Active says whether the deployment is still in progress.
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusBlocked,
		DeploymentStatusUnblocking, DeploymentStatusInitializing, DeploymentStatusPending:
		return true
	}
	return false
}

// RequiresPromotion: running, and some group with canaries is not promoted.
func (d *Deployment) RequiresPromotion() bool {
	if d == nil || d.Status != DeploymentStatusRunning {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted {
			return true
		}
	}
	return false
}

// HasAutoPromote: running, and every group with canaries promotes itself.
func (d *Deployment) HasAutoPromote() bool {
	if d == nil || d.Status != DeploymentStatusRunning {
		return false
	}
	any := false
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 {
			if !g.AutoPromote {
				return false
			}
			any = true
		}
	}
	return any
}

// Copy returns a deep copy that may be changed.
func (d *Deployment) Copy() *Deployment {
	c := *d
	c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		s := *v
		s.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
		if v.PlacedCanaries == nil {
			s.PlacedCanaries = nil
		}
		if v.RequireProgressBy != nil {
			t := *v.RequireProgressBy
			s.RequireProgressBy = &t
		}
		c.TaskGroups[k] = &s
	}
	return &c
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: deploymentsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: uuidIndex("ID", func(o *Deployment) string { return o.ID })},
			"job": {Name: "job", Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				stringIndex("Namespace", func(o *Deployment) string { return o.Namespace }),
				stringIndex("JobID", func(o *Deployment) string { return o.JobID }),
			}}},
			// The list order (deployments_list.go).
			deploymentsCreateIndex:   {Name: deploymentsCreateIndex, Unique: true, Indexer: deploymentOrderIndexer{}},
			deploymentsNsCreateIndex: {Name: deploymentsNsCreateIndex, Unique: true, Indexer: deploymentOrderIndexer{namespace: true}},
			// By ModifyIndex, for the watcher: it reads the deployments
			// changed after what it checked, not every one in progress.
			deploymentsModifyIndex: {Name: deploymentsModifyIndex, Indexer: uint64Index("ModifyIndex", func(o *Deployment) uint64 { return o.ModifyIndex })},
		},
	}, func() any { return new(Deployment) })
}

// Deployment returns the deployment with that ID, or nil.
func (s *Store) Deployment(ws memdb.WatchSet, id string) (uint64, *Deployment, error) {
	return getOneOrWatchTable[Deployment](s, ws, deploymentsTable, id)
}

// DeploymentsChangedSince lists the deployments whose ModifyIndex is above
// after, in ModifyIndex order (a deployment deleted since is not named);
// ws fires when any deployment is written or deleted.
func (s *Store) DeploymentsChangedSince(ws memdb.WatchSet, after uint64) (uint64, []*Deployment, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	if ws != nil {
		watchTableIndex(txn, ws, deploymentsTable)
	}
	iter, err := txn.LowerBound(deploymentsTable, deploymentsModifyIndex, after+1)
	if err != nil {
		return 0, nil, fmt.Errorf("failed deployment lookup: %w", err)
	}
	var out []*Deployment
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*Deployment))
	}
	return maxIndex(txn, deploymentsTable), out, nil
}

const deploymentsModifyIndex = "modify"

// DeploymentsByJob lists a job's deployments, newest first.
func (s *Store) DeploymentsByJob(ws memdb.WatchSet, ns, jobID string) (uint64, []*Deployment, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out, err := listTxn[Deployment](txn, ws, deploymentsTable, "job", ns, jobID)
	if err != nil {
		return 0, nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex > out[j].CreateIndex })
	return maxIndex(txn, deploymentsTable), out, nil
}

// LatestDeploymentByJob is a job's newest deployment, or nil.
func (s *Store) LatestDeploymentByJob(ws memdb.WatchSet, ns, jobID string) (uint64, *Deployment, error) {
	idx, all, err := s.DeploymentsByJob(ws, ns, jobID)
	if err != nil || len(all) == 0 {
		return idx, nil, err
	}
	return idx, all[0], nil
}

// DeploymentCause says why a deployment's status changed (for its history).
type DeploymentCause struct {
	// Kind: "operation" (an API call), "watcher" (a deployment watcher
	// rule), or "scheduler" (a plan).
	Kind string
	// Operation is the API operation (fail, pause, resume, promote,
	// allocation-health, unblock).
	Operation  string
	AccessorID string
	EvalID     string
	// Rule names the watcher rule (progress-deadline, unhealthy-allocations,
	// auto-promote) or the scheduler's decision (newer-version, job-stopped,
	// complete, placed).
	Rule string
}

// DeploymentStatusUpdate sets a deployment's status and description.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// DeploymentUpdateRequest is one status change of a deployment, with the
// evaluation it creates and, for a rollback, the job version to register.
type DeploymentUpdateRequest struct {
	Update DeploymentStatusUpdate
	Eval   *Evaluation
	Job    *Job
	Cause  DeploymentCause
	Now    int64
}

// DeploymentUpdateResult is what a deployment write reports.
type DeploymentUpdateResult struct {
	Index uint64
	// RevertedJobVersion is set when the write registered a stable version again.
	RevertedJobVersion *uint64
}

func lookupActiveDeploymentTxn(txn *memdb.Txn, id string) (*Deployment, error) {
	raw, err := txn.First(deploymentsTable, "id", id)
	if err != nil {
		return nil, fmt.Errorf("failed deployment lookup: %w", err)
	}
	if raw == nil {
		return nil, errorf(ErrNotFound, "deployment not found")
	}
	d := raw.(*Deployment)
	if !d.Active() {
		return nil, errorf(ErrConflict, "Deployment %q has terminal status %q", d.ID, d.Status)
	}
	return d, nil
}

// DeploymentUpdateStatus applies a status change at idx, with its eval, the
// rollback job (when given) and a history record, in one transaction.
func (s *Store) DeploymentUpdateStatus(idx uint64, req *DeploymentUpdateRequest) (*DeploymentUpdateResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	d, err := lookupActiveDeploymentTxn(txn, req.Update.DeploymentID)
	if err != nil {
		return nil, err
	}
	res, err := updateDeploymentStatusTxn(txn, idx, d, &req.Update, req.Job, req.Eval, req.Cause, req.Now)
	if err != nil {
		return nil, err
	}
	s.commitOrch(txn, idx)
	return res, nil
}

func updateDeploymentStatusTxn(txn *memdb.Txn, idx uint64, d *Deployment, u *DeploymentStatusUpdate, job *Job, eval *Evaluation, cause DeploymentCause, now int64) (*DeploymentUpdateResult, error) {
	c := d.Copy()
	c.Status = u.Status
	c.StatusDescription = u.StatusDescription
	c.ModifyIndex = idx
	c.ModifyTime = now
	if u.Status == DeploymentStatusPaused || u.Status == DeploymentStatusRunning {
		at := time.Unix(0, now).UTC()
		for _, g := range c.TaskGroups {
			if g.ProgressDeadline != 0 {
				by := at.Add(g.ProgressDeadline)
				g.RequireProgressBy = &by
			}
		}
	}
	if err := txn.Insert(deploymentsTable, c); err != nil {
		return nil, fmt.Errorf("failed updating deployment: %w", err)
	}
	if err := setIndex(txn, deploymentsTable, idx); err != nil {
		return nil, err
	}
	if err := addHistoryTxn(txn, idx, d, c, cause, now); err != nil {
		return nil, err
	}
	if u.Status == DeploymentStatusSuccessful {
		if err := setJobStableTxn(txn, idx, c.Namespace, c.JobID, c.JobVersion, true); err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	res := &DeploymentUpdateResult{Index: idx}
	if job != nil {
		stable := job.Version
		if _, err := upsertJobTxn(txn, idx, job); err != nil {
			return nil, err
		}
		res.RevertedJobVersion = &stable
	}
	if eval != nil {
		e := *eval
		if job != nil {
			e.JobModifyIndex = idx
		}
		if err := upsertEvalTxn(txn, idx, &e); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func isNotFound(err error) bool {
	se, ok := err.(*Error)
	return ok && se.Code == ErrNotFound
}

// DeploymentPromoteRequest promotes the canaries of some or all groups.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	Eval         *Evaluation
	Cause        DeploymentCause
	Now          int64
}

// PromotionErrors lists, in group-name order, the selected groups whose
// placed canaries are not yet healthy enough to promote: `Task group "<tg>"
// has <have>/<need> healthy allocations`. Empty means promotion may go on.
func PromotionErrors(d *Deployment, allocs func(id string) *Allocation, all bool, groups []string) []string {
	selected := map[string]bool{}
	for _, g := range groups {
		selected[g] = true
	}
	names := make([]string, 0, len(d.TaskGroups))
	for name := range d.TaskGroups {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []string
	for _, name := range names {
		g := d.TaskGroups[name]
		if (!all && !selected[name]) || g.DesiredCanaries == 0 {
			continue
		}
		healthy := 0
		for _, id := range g.PlacedCanaries {
			if a := allocs(id); a != nil && !a.TerminalStatus() && a.DeploymentStatus.IsHealthy() {
				healthy++
			}
		}
		if healthy < g.DesiredCanaries {
			errs = append(errs, fmt.Sprintf("Task group %q has %d/%d healthy allocations", name, healthy, g.DesiredCanaries))
		}
	}
	return errs
}

// DeploymentPromote promotes at idx: every selected group becomes Promoted,
// its canaries stop being canaries, and the description returns to
// "Deployment is running" when nothing needs promotion any more.
func (s *Store) DeploymentPromote(idx uint64, req *DeploymentPromoteRequest) (*DeploymentUpdateResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	d, err := lookupActiveDeploymentTxn(txn, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	lookup := func(id string) *Allocation {
		raw, err := txn.First(allocsTable, "id", id)
		if err != nil || raw == nil {
			return nil
		}
		return raw.(*Allocation)
	}
	if errs := PromotionErrors(d, lookup, req.All, req.Groups); len(errs) > 0 {
		return nil, errorf(ErrConflict, "%s", strings.Join(errs, "; "))
	}
	selected := map[string]bool{}
	for _, g := range req.Groups {
		selected[g] = true
	}
	c := d.Copy()
	at := time.Unix(0, req.Now).UTC()
	var canaries []string
	for name, g := range c.TaskGroups {
		if !req.All && !selected[name] {
			continue
		}
		g.Promoted = true
		if g.RequireProgressBy != nil && g.ProgressDeadline > 0 {
			by := at.Add(g.ProgressDeadline)
			g.RequireProgressBy = &by
		}
		canaries = append(canaries, g.PlacedCanaries...)
	}
	if c.Status == DeploymentStatusRunning && !c.RequiresPromotion() {
		c.StatusDescription = DeploymentStatusDescriptionRunning
	}
	c.ModifyIndex = idx
	c.ModifyTime = req.Now
	if err := txn.Insert(deploymentsTable, c); err != nil {
		return nil, fmt.Errorf("failed updating deployment: %w", err)
	}
	if err := setIndex(txn, deploymentsTable, idx); err != nil {
		return nil, err
	}
	for _, id := range canaries {
		a := lookup(id)
		if a == nil || a.DeploymentStatus == nil || !a.DeploymentStatus.Canary {
			continue
		}
		ac := a.Copy()
		ac.DeploymentStatus.Canary = false
		ac.DeploymentStatus.ModifyIndex = idx
		ac.ModifyIndex = idx
		ac.ModifyTime = req.Now
		if err := txn.Insert(allocsTable, ac); err != nil {
			return nil, fmt.Errorf("failed updating allocation: %w", err)
		}
		if err := setIndex(txn, allocsTable, idx); err != nil {
			return nil, err
		}
	}
	if err := addHistoryTxn(txn, idx, d, c, req.Cause, req.Now); err != nil {
		return nil, err
	}
	if req.Eval != nil {
		if err := upsertEvalTxn(txn, idx, req.Eval); err != nil {
			return nil, err
		}
	}
	s.commitOrch(txn, idx)
	return &DeploymentUpdateResult{Index: idx}, nil
}

// DeploymentAllocHealthRequest sets the health of allocations by hand; a
// failure (when any is unhealthy) and a rollback job go with it.
type DeploymentAllocHealthRequest struct {
	DeploymentID string
	Healthy      []string
	Unhealthy    []string
	// Fail, when set, is the status change the unhealthy allocations cause.
	Fail *DeploymentStatusUpdate
	Job  *Job
	Eval *Evaluation
	// Timestamp of the health (the leader's clock when it was asked).
	Timestamp time.Time
	Cause     DeploymentCause
	Now       int64
}

// DeploymentAllocHealth applies manual health at idx. Every listed
// allocation must exist and belong to the deployment, or nothing changes.
func (s *Store) DeploymentAllocHealth(idx uint64, req *DeploymentAllocHealthRequest) (*DeploymentUpdateResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	d, err := lookupActiveDeploymentTxn(txn, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	set := func(ids []string, healthy bool) error {
		for _, id := range ids {
			raw, err := txn.First(allocsTable, "id", id)
			if err != nil {
				return errorf(ErrInvalid, "alloc %q lookup failed: %v", id, err)
			}
			if raw == nil {
				return errorf(ErrInvalid, "unknown alloc %q", id)
			}
			a := raw.(*Allocation)
			if a.DeploymentID != d.ID {
				return errorf(ErrInvalid, "alloc %q is not part of deployment %q", id, d.ID)
			}
			c := a.Copy()
			if err := setAllocHealthTxn(txn, idx, c, healthy, req.Timestamp, req.Now, nil); err != nil {
				return err
			}
			if err := txn.Insert(allocsTable, c); err != nil {
				return fmt.Errorf("failed updating allocation: %w", err)
			}
		}
		return nil
	}
	if err := set(req.Healthy, true); err != nil {
		return nil, err
	}
	if err := set(req.Unhealthy, false); err != nil {
		return nil, err
	}
	if err := setIndex(txn, allocsTable, idx); err != nil {
		return nil, err
	}
	res := &DeploymentUpdateResult{Index: idx}
	if req.Fail != nil {
		// Re-read: the counters above changed it.
		raw, err := txn.First(deploymentsTable, "id", d.ID)
		if err != nil {
			return nil, fmt.Errorf("failed deployment lookup: %w", err)
		}
		if res, err = updateDeploymentStatusTxn(txn, idx, raw.(*Deployment), req.Fail, req.Job, req.Eval, req.Cause, req.Now); err != nil {
			return nil, err
		}
	} else if req.Eval != nil {
		if err := upsertEvalTxn(txn, idx, req.Eval); err != nil {
			return nil, err
		}
	}
	s.commitOrch(txn, idx)
	return res, nil
}
