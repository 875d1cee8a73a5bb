package state

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

const (
	jobsTable        = "jobs"
	jobVersionsTable = "job_versions"
)

// Job types and statuses (Nomad's values).
const (
	JobTypeService = "service"

	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Health check modes of an update strategy.
const (
	UpdateHealthChecks     = "checks"
	UpdateHealthTaskStates = "task_states"
	UpdateHealthManual     = "manual"
)

// Job is one registered job as Nomad's JSON job format has it (Go field
// names, durations in nanoseconds). The jobs table holds the latest version;
// job_versions holds every version.
type Job struct {
	Region      string
	Namespace   string
	ID          string
	Name        string
	Type        string
	Priority    int
	Datacenters []string
	// NodePool restricts placement to the pool's nodes ("all": any node).
	NodePool    string
	Meta        map[string]string
	Update      *UpdateStrategy
	Multiregion *Multiregion
	Constraints []*Constraint
	Affinities  []*Affinity
	Spreads     []*Spread
	TaskGroups  []*TaskGroup

	Stop              bool
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64

	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
}

// UpdateStrategy is a job's or group's update block.
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	AutoRevert       bool
	AutoPromote      bool
	Canary           int
}

// IsEmpty: a strategy with MaxParallel 0 means "no deployments" (Nomad's rule).
func (u *UpdateStrategy) IsEmpty() bool { return u == nil || u.MaxParallel == 0 }

// Multiregion is stored as given; a multiregion job's deployment ends blocked
// instead of successful, waiting for the other regions.
type Multiregion struct {
	Strategy *MultiregionStrategy
	Regions  []*MultiregionRegion
}

// MultiregionStrategy is Nomad's multiregion strategy block.
type MultiregionStrategy struct {
	MaxParallel int
	OnFailure   string
}

// MultiregionRegion is one region of a multiregion job.
type MultiregionRegion struct {
	Name        string
	Count       *int
	Datacenters []string
	Meta        map[string]string
}

// TaskGroup is a set of tasks placed together as one allocation.
type TaskGroup struct {
	Name             string
	Count            int
	Update           *UpdateStrategy
	RestartPolicy    *RestartPolicy
	ReschedulePolicy *ReschedulePolicy
	// Migrate says how a drain moves the group's allocations off a node.
	Migrate *MigrateStrategy
	// MaxClientDisconnect, when set, is how long allocations on a
	// disconnected node stay unknown before they are lost (Nomad's).
	MaxClientDisconnect *time.Duration
	Meta                map[string]string
	Tasks               []*Task
	Constraints         []*Constraint
	Affinities          []*Affinity
	Spreads             []*Spread
	// Networks is the group's network block (at most one).
	Networks []*NetworkResource
	// Services are the group's native services (provider "nomad").
	Services []*Service `json:",omitempty"`
}

// RestartPolicy says how a task that exits is restarted in place.
type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string
}

// Task is one unit of work run by a driver.
type Task struct {
	Name        string
	Driver      string
	Config      map[string]any
	Env         map[string]string
	Meta        map[string]string
	Resources   *Resources
	KillTimeout time.Duration
	KillSignal  string
	Constraints []*Constraint
	Affinities  []*Affinity
	// Services are the task's native services (provider "nomad").
	Services []*Service `json:",omitempty"`
}

// Resources a task asks for.
type Resources struct {
	CPU      int `codec:",omitempty"`
	MemoryMB int `codec:",omitempty"`
}

// LookupTaskGroup returns the group called name, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// Resources is the sum of the group's task resources (each counted: it
// saturates rather than wraps, whatever a stored job asks).
func (tg *TaskGroup) Resources() Resources {
	var r Resources
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			c := t.Resources.Counted()
			r.CPU = satAdd(r.CPU, c.CPU)
			r.MemoryMB = satAdd(r.MemoryMB, c.MemoryMB)
		}
	}
	return r
}

// Copy returns a copy of the job whose top-level fields may be changed.
// Nested values are shared: stored jobs are never changed in place.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	return &c
}

// SpecChanged says whether the two jobs differ in anything but their
// bookkeeping fields (status, stability, version, indexes, submit time), as
// Nomad's Job.SpecChanged does.
func (j *Job) SpecChanged(o *Job) bool {
	if j == nil || o == nil {
		return j != o
	}
	a, b := *j, *o
	for _, c := range []*Job{&a, &b} {
		c.Status, c.StatusDescription, c.Stable, c.Version = "", "", false, 0
		c.CreateIndex, c.ModifyIndex, c.JobModifyIndex, c.SubmitTime = 0, 0, 0, 0
	}
	return !reflect.DeepEqual(&a, &b)
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: jobsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "ID"},
			}}},
		},
	}, func() any { return new(Job) })
}

// Job returns the latest version of a job, or nil.
func (s *Store) Job(ws memdb.WatchSet, ns, id string) (uint64, *Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return jobTxn(txn, ws, ns, id)
}

func jobTxn(txn *memdb.Txn, ws memdb.WatchSet, ns, id string) (uint64, *Job, error) {
	ch, raw, err := txn.FirstWatch(jobsTable, "id", ns, id)
	if err != nil {
		return 0, nil, fmt.Errorf("failed job lookup: %w", err)
	}
	ws.Add(ch)
	idx := maxIndex(txn, jobsTable)
	if raw == nil {
		watchTableIndex(txn, ws, jobsTable)
		return idx, nil, nil
	}
	return idx, raw.(*Job), nil
}

// Jobs lists the jobs of namespace ns (AllNamespaces: every one) whose ID
// starts with prefix, by namespace then ID.
func (s *Store) Jobs(ws memdb.WatchSet, ns, prefix string) (uint64, []*Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(jobsTable, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("failed job list: %w", err)
	}
	ws.Add(iter.WatchCh())
	out := []*Job{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		j := raw.(*Job)
		if (ns == AllNamespaces || j.Namespace == ns) && strings.HasPrefix(j.ID, prefix) {
			out = append(out, j)
		}
	}
	return maxIndex(txn, jobsTable), out, nil
}

// JobRegisterResult is what registering a job did.
type JobRegisterResult struct {
	JobModifyIndex uint64
	Version        uint64
	// Changed: the spec differed from the latest version, so a new version was made.
	Changed bool
	// Index is the Raft index the registration was applied at.
	Index uint64
}

// upsertJobTxn registers job at idx: a changed spec (or a new job) becomes a
// new version; an unchanged one keeps its version and indexes.
func upsertJobTxn(txn *memdb.Txn, idx uint64, job *Job) (*JobRegisterResult, error) {
	raw, err := txn.First(jobsTable, "id", job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("failed job lookup: %w", err)
	}
	stored := job.Copy()
	if raw != nil {
		existing := raw.(*Job)
		if !existing.SpecChanged(job) {
			return &JobRegisterResult{JobModifyIndex: existing.JobModifyIndex, Version: existing.Version}, nil
		}
		stored.CreateIndex = existing.CreateIndex
		stored.Version = existing.Version + 1
	} else {
		stored.CreateIndex = idx
		stored.Version = 0
	}
	stored.ModifyIndex = idx
	stored.JobModifyIndex = idx
	stored.Stable = false
	if stored.Stop {
		stored.Status = JobStatusDead
	} else {
		stored.Status = JobStatusPending
	}
	if err := txn.Insert(jobsTable, stored); err != nil {
		return nil, fmt.Errorf("failed inserting job: %w", err)
	}
	if err := txn.Insert(jobVersionsTable, stored); err != nil {
		return nil, fmt.Errorf("failed inserting job version: %w", err)
	}
	if err := pruneJobVersionsTxn(txn, stored.Namespace, stored.ID); err != nil {
		return nil, err
	}
	if err := setIndex(txn, jobsTable, idx); err != nil {
		return nil, err
	}
	if err := setIndex(txn, jobVersionsTable, idx); err != nil {
		return nil, err
	}
	return &JobRegisterResult{JobModifyIndex: idx, Version: stored.Version, Changed: true}, nil
}

// JobRegister registers a job and inserts the evaluation that goes with it,
// in one transaction at idx.
func (s *Store) JobRegister(idx uint64, job *Job, eval *Evaluation) (*JobRegisterResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	res, err := upsertJobTxn(txn, idx, job)
	if err != nil {
		return nil, err
	}
	res.Index = idx
	if eval != nil {
		e := *eval
		e.JobModifyIndex = res.JobModifyIndex
		if err := upsertEvalTxn(txn, idx, &e); err != nil {
			return nil, err
		}
	}
	s.commitOrch(txn, idx)
	return res, nil
}

// JobPurge removes a job and all its versions at idx, and inserts eval
// (when given). Its evaluations, allocations and deployments stay, as in
// Nomad, but in the same transaction its live allocations are told to stop
// and its active deployments are cancelled: a job registered again under
// the same ID (at version 0 again) must not take them for its own.
func (s *Store) JobPurge(idx uint64, ns, id string, eval *Evaluation) error {
	txn := s.orchTxn()
	defer txn.Abort()
	raw, err := txn.First(jobsTable, "id", ns, id)
	if err != nil {
		return fmt.Errorf("failed job lookup: %w", err)
	}
	if raw == nil {
		return errorf(ErrNotFound, "job not found")
	}
	if err := txn.Delete(jobsTable, raw); err != nil {
		return fmt.Errorf("failed deleting job: %w", err)
	}
	versions, err := jobVersionsTxn(txn, memdb.NewWatchSet(), ns, id)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := txn.Delete(jobVersionsTable, v); err != nil {
			return fmt.Errorf("failed deleting job version: %w", err)
		}
	}
	if err := setIndex(txn, jobsTable, idx); err != nil {
		return err
	}
	if err := setIndex(txn, jobVersionsTable, idx); err != nil {
		return err
	}
	var now int64
	if eval != nil {
		now = eval.ModifyTime
		if err := upsertEvalTxn(txn, idx, eval); err != nil {
			return err
		}
	}
	if err := retirePurgedJobTxn(txn, idx, ns, id, now); err != nil {
		return err
	}
	s.commitOrch(txn, idx)
	return nil
}

// retirePurgedJobTxn stops a purged job's live allocations and cancels its
// active deployments.
func retirePurgedJobTxn(txn *memdb.Txn, idx uint64, ns, id string, now int64) error {
	allocs, err := listTxn[Allocation](txn, nil, allocsTable, "job", ns, id)
	if err != nil {
		return err
	}
	stopped := false
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		c := a.Copy()
		c.DesiredStatus = AllocDesiredStatusStop
		c.DesiredDescription = "alloc not needed since job was purged"
		c.ModifyIndex, c.AllocModifyIndex, c.ModifyTime = idx, idx, now
		if err := txn.Insert(allocsTable, c); err != nil {
			return fmt.Errorf("failed updating allocation: %w", err)
		}
		stopped = true
	}
	if stopped {
		if err := setIndex(txn, allocsTable, idx); err != nil {
			return err
		}
	}
	deployments, err := listTxn[Deployment](txn, nil, deploymentsTable, "job", ns, id)
	if err != nil {
		return err
	}
	for _, d := range deployments {
		if !d.Active() {
			continue
		}
		u := &DeploymentStatusUpdate{DeploymentID: d.ID, Status: DeploymentStatusCancelled, StatusDescription: DeploymentStatusDescriptionStoppedJob}
		if _, err := updateDeploymentStatusTxn(txn, idx, d, u, nil, nil, DeploymentCause{Kind: "operation", Operation: "purge"}, now); err != nil {
			return err
		}
	}
	return nil
}

// setJobStatusTxn records a job's computed status (pending, running, dead).
func setJobStatusTxn(txn *memdb.Txn, idx uint64, ns, id, status string) error {
	raw, err := txn.First(jobsTable, "id", ns, id)
	if err != nil {
		return fmt.Errorf("failed job lookup: %w", err)
	}
	if raw == nil || raw.(*Job).Status == status {
		return nil
	}
	j := raw.(*Job).Copy()
	j.Status = status
	j.ModifyIndex = idx
	if err := txn.Insert(jobsTable, j); err != nil {
		return fmt.Errorf("failed updating job: %w", err)
	}
	return setIndex(txn, jobsTable, idx)
}
