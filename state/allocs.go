package state

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

const allocsTable = "allocs"

// Allocation desired and client statuses (Nomad's values).
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"

	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	// AllocClientStatusUnknown: its node is disconnected (the group has
	// MaxClientDisconnect); not terminal, it may still run there.
	AllocClientStatusUnknown = "unknown"
)

// Task states and event types (Nomad's values).
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"

	TaskReceived          = "Received"
	TaskSetup             = "Task Setup"
	TaskStarted           = "Started"
	TaskTerminated        = "Terminated"
	TaskRestarting        = "Restarting"
	TaskNotRestarting     = "Not Restarting"
	TaskKilling           = "Killing"
	TaskKilled            = "Killed"
	TaskDriverFailure     = "Driver Failure"
	TaskSiblingFailed     = "Sibling Task Failed"
	TaskAllocUnhealthy    = "Alloc Unhealthy"
	TaskFailedValidation  = "Failed Validation"
	TaskSetupFailure      = "Setup Failure"
	TaskRestartSignal     = "Restart Signaled"
	TaskLeaderDead        = "Leader Task Dead"
	TaskClientReconnected = "Reconnected"
)

// Allocation is one placement of a task group of one job version on a node.
type Allocation struct {
	ID                 string `codec:",omitempty"`
	Namespace          string `codec:",omitempty"`
	EvalID             string `codec:",omitempty"`
	Name               string `codec:",omitempty"`
	NodeID             string `codec:",omitempty"`
	NodeName           string `codec:",omitempty"`
	JobID              string `codec:",omitempty"`
	JobVersion         uint64 `codec:",omitempty"`
	TaskGroup          string `codec:",omitempty"`
	Resources          Resources
	DesiredStatus      string `codec:",omitempty"`
	DesiredDescription string `codec:",omitempty"`
	ClientStatus       string `codec:",omitempty"`
	ClientDescription  string `codec:",omitempty"`
	TaskStates         map[string]*TaskState
	DeploymentID       string `codec:",omitempty"`
	DeploymentStatus   *AllocDeploymentStatus
	PreviousAllocation string `codec:",omitempty"`
	NextAllocation     string `codec:",omitempty"`
	// FollowupEvalID is the evaluation that will replace this allocation
	// after it failed.
	FollowupEvalID string `codec:",omitempty"`
	// RescheduleTracker lists the reschedules that led to this allocation.
	RescheduleTracker *RescheduleTracker
	DesiredTransition DesiredTransition
	// AllocStates records the server's changes of ClientStatus (unknown,
	// running again on reconnect, lost), oldest first.
	AllocStates []*AllocState

	// Metrics is what the scheduler saw placing the allocation.
	Metrics *AllocMetric
	// AllocatedPorts are the host ports the scheduler gave the group's
	// network block on the node (Nomad's AllocatedResources.Shared.Ports).
	AllocatedPorts []AllocatedPort
	// CheckResults are the latest results of its service checks, by
	// check ID, as its client reported them.
	CheckResults map[string]*CheckResult `json:",omitempty"`

	CreateIndex      uint64 `codec:",omitempty"`
	ModifyIndex      uint64 `codec:",omitempty"`
	AllocModifyIndex uint64 `codec:",omitempty"`
	CreateTime       int64  `codec:",omitempty"`
	ModifyTime       int64  `codec:",omitempty"`
}

// AllocDeploymentStatus is an allocation's health as its deployment sees it.
type AllocDeploymentStatus struct {
	// Healthy is nil until health is known.
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool   `codec:",omitempty"`
	ModifyIndex uint64 `codec:",omitempty"`
}

// IsHealthy and IsUnhealthy say whether health was reported either way.
func (d *AllocDeploymentStatus) IsHealthy() bool {
	return d != nil && d.Healthy != nil && *d.Healthy
}
func (d *AllocDeploymentStatus) IsUnhealthy() bool {
	return d != nil && d.Healthy != nil && !*d.Healthy
}

// TaskState is a task's state as the client reports it.
type TaskState struct {
	State       string `codec:",omitempty"`
	Failed      bool   `codec:",omitempty"`
	Restarts    uint64 `codec:",omitempty"`
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// TaskEvent is one thing that happened to a task (a record field).
type TaskEvent struct {
	Type             string        `codec:",omitempty"`
	Time             int64         `codec:",omitempty"`
	FailsTask        bool          `codec:",omitempty"`
	RestartReason    string        `codec:",omitempty"`
	SetupError       string        `codec:",omitempty"`
	DriverError      string        `codec:",omitempty"`
	KillError        string        `codec:",omitempty"`
	KillReason       string        `codec:",omitempty"`
	DownloadError    string        `codec:",omitempty"`
	ValidationError  string        `codec:",omitempty"`
	FailedSibling    string        `codec:",omitempty"`
	SecretsError     string        `codec:",omitempty"`
	TaskSignalReason string        `codec:",omitempty"`
	TaskSignal       string        `codec:",omitempty"`
	DriverMessage    string        `codec:",omitempty"`
	Message          string        `codec:",omitempty"`
	DisplayMessage   string        `codec:",omitempty"`
	ExitCode         int           `codec:",omitempty"`
	Signal           int           `codec:",omitempty"`
	KillTimeout      time.Duration `codec:",omitempty"`
	StartDelay       int64         `codec:",omitempty"`
	DiskLimit        int64         `codec:",omitempty"`
}

// TerminalStatus says whether the allocation is done: told to stop, or ended on its client.
func (a *Allocation) TerminalStatus() bool {
	switch a.DesiredStatus {
	case AllocDesiredStatusStop, AllocDesiredStatusEvict:
		return true
	}
	return a.ClientTerminalStatus()
}

// ClientTerminalStatus says whether the allocation ended on its client.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Copy returns a copy whose fields, TaskStates map and DeploymentStatus may be changed.
func (a *Allocation) Copy() *Allocation {
	c := *a
	if a.TaskStates != nil {
		c.TaskStates = make(map[string]*TaskState, len(a.TaskStates))
		for k, v := range a.TaskStates {
			c.TaskStates[k] = v
		}
	}
	if a.DeploymentStatus != nil {
		ds := *a.DeploymentStatus
		c.DeploymentStatus = &ds
	}
	c.RescheduleTracker = a.RescheduleTracker.Copy()
	if a.AllocStates != nil {
		c.AllocStates = append([]*AllocState(nil), a.AllocStates...)
	}
	return &c
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: allocsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: uuidIndex("ID", func(o *Allocation) string { return o.ID })},
			// A node's allocations in ModifyIndex order: its client's
			// changes read follows only what changed. It is also the
			// by-node index (allocsOfNodeTxn): one index less to write
			// on every report.
			allocsNodeModifyIndex: {Name: allocsNodeModifyIndex, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				stringIndex("NodeID", func(o *Allocation) string { return o.NodeID }),
				uint64Index("ModifyIndex", func(o *Allocation) uint64 { return o.ModifyIndex }),
			}}},
			"job": {Name: "job", Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				stringIndex("Namespace", func(o *Allocation) string { return o.Namespace }),
				stringIndex("JobID", func(o *Allocation) string { return o.JobID }),
			}}},
			"deployment": {Name: "deployment", AllowMissing: true, Indexer: uuidIndex("DeploymentID", func(o *Allocation) string { return o.DeploymentID })},
			"eval":       {Name: "eval", AllowMissing: true, Indexer: uuidIndex("EvalID", func(o *Allocation) string { return o.EvalID })},
			// ModifyIndex order, for readers that follow only what changed.
			"modify": {Name: "modify", Indexer: uint64Index("ModifyIndex", func(o *Allocation) uint64 { return o.ModifyIndex })},
		},
	}, func() any { return new(Allocation) })
}

// Alloc returns the allocation with that ID, or nil.
func (s *Store) Alloc(ws memdb.WatchSet, id string) (uint64, *Allocation, error) {
	return getOneOrWatchTable[Allocation](s, ws, allocsTable, id)
}

// Allocs lists the allocations of namespace ns (AllNamespaces: every one), by ID.
func (s *Store) Allocs(ws memdb.WatchSet, ns string) (uint64, []*Allocation, error) {
	return getAll(s, ws, allocsTable, func(a *Allocation) bool { return ns == AllNamespaces || a.Namespace == ns })
}

// AllocsByNode lists a node's allocations, by ID.
func (s *Store) AllocsByNode(ws memdb.WatchSet, nodeID string) (uint64, []*Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out, err := allocsOfNodeTxn(txn, ws, nodeID)
	if err != nil {
		return 0, nil, err
	}
	slices.SortFunc(out, func(a, b *Allocation) int { return strings.Compare(a.ID, b.ID) })
	return maxIndex(txn, allocsTable), out, nil
}

// allocsOfNodeTxn lists a node's allocations in ModifyIndex order (ws, if
// not nil, watches them).
func allocsOfNodeTxn(txn *memdb.Txn, ws memdb.WatchSet, nodeID string) ([]*Allocation, error) {
	// The node ID with its terminator: exactly this node's keys.
	return listTxn[Allocation](txn, ws, allocsTable, allocsNodeModifyIndex+"_prefix", nodeID+"\x00")
}

// AllocsByJob lists a job's allocations, by ID.
func (s *Store) AllocsByJob(ws memdb.WatchSet, ns, jobID string) (uint64, []*Allocation, error) {
	return getByIndex[Allocation](s, ws, allocsTable, "job", ns, jobID)
}

// AllocsByDeployment lists a deployment's allocations, by ID.
func (s *Store) AllocsByDeployment(ws memdb.WatchSet, deploymentID string) (uint64, []*Allocation, error) {
	return getByIndex[Allocation](s, ws, allocsTable, "deployment", deploymentID)
}

// AllocsByEval lists the allocations an evaluation created, by ID.
func (s *Store) AllocsByEval(ws memdb.WatchSet, evalID string) (uint64, []*Allocation, error) {
	return getByIndex[Allocation](s, ws, allocsTable, "eval", evalID)
}

// AllocsModifiedSince lists the allocations written after index, in
// ModifyIndex order.
func (s *Store) AllocsModifiedSince(index uint64) ([]*Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.LowerBound(allocsTable, "modify", index+1)
	if err != nil {
		return nil, fmt.Errorf("failed allocation list: %w", err)
	}
	var out []*Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*Allocation))
	}
	return out, nil
}

// AllocClientUpdate is what a client reports about one of its allocations.
type AllocClientUpdate struct {
	ID                string `codec:",omitempty"`
	ClientStatus      string `codec:",omitempty"`
	ClientDescription string `codec:",omitempty"`
	TaskStates        map[string]*TaskState
	// DeploymentStatus carries health (Healthy and Timestamp); nil: unchanged.
	DeploymentStatus *AllocDeploymentStatus
	// CheckResults are the latest check results; nil: unchanged.
	CheckResults map[string]*CheckResult
}

// NodeAllocReports is one node's reports, checked by the server that
// accepted them, with the evaluations they cause and the time they were
// accepted at.
type NodeAllocReports struct {
	NodeID  string `codec:",omitempty"`
	Updates []*AllocClientUpdate
	Evals   []*Evaluation
	Now     int64 `codec:",omitempty"`
}

// AllocsClientUpdate applies a batch of client reports at idx, with the
// evaluations they cause (e.g. replacements of failed allocations), and
// counts newly reported health into each allocation's deployment. Updates
// for allocations that no longer exist, or that belong to another node, are
// skipped: the client learns it on its next read.
func (s *Store) AllocsClientUpdate(idx uint64, nodeID string, updates []*AllocClientUpdate, evals []*Evaluation, now int64) error {
	return s.AllocsClientUpdates(idx, []*NodeAllocReports{{NodeID: nodeID, Updates: updates, Evals: evals, Now: now}})
}

// AllocsClientUpdates applies the reports of many nodes at idx in one
// transaction (the servers' group commit of client reports), each node's
// as AllocsClientUpdate does.
func (s *Store) AllocsClientUpdates(idx uint64, nodes []*NodeAllocReports) error {
	txn := s.orchTxn()
	defer txn.Abort()
	touched := false
	jobs := map[[2]string]bool{} // job → an allocation of it stopped
	deps := map[string]*Deployment{}
	for _, n := range nodes {
		t, err := allocsClientUpdateTxn(txn, idx, n.NodeID, n.Updates, n.Now, jobs, deps)
		if err != nil {
			return err
		}
		touched = touched || t
	}
	if touched {
		if err := setIndex(txn, allocsTable, idx); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		for _, e := range n.Evals {
			if err := upsertEvalTxn(txn, idx, e); err != nil {
				return err
			}
		}
	}
	for k, stopped := range jobs {
		if !stopped {
			raw, err := txn.First(jobsTable, "id", k[0], k[1])
			if err != nil {
				return fmt.Errorf("failed job lookup: %w", err)
			}
			if raw != nil && raw.(*Job).Status == JobStatusRunning {
				continue // running, and nothing of it stopped: it stays running
			}
		}
		if err := refreshJobStatusTxn(txn, idx, k[0], k[1]); err != nil {
			return err
		}
	}
	s.commitOrch(txn, idx)
	return nil
}

// allocsClientUpdateTxn applies one node's reports in txn, marking in jobs
// the jobs whose status may change (deps: the deployments this transaction
// copied); it says whether it wrote an allocation.
func allocsClientUpdateTxn(txn *memdb.Txn, idx uint64, nodeID string, updates []*AllocClientUpdate, now int64,
	jobs map[[2]string]bool, deps map[string]*Deployment) (bool, error) {
	touched := false
	for _, u := range updates {
		raw, err := txn.First(allocsTable, "id", u.ID)
		if err != nil {
			return false, fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil || (nodeID != "" && raw.(*Allocation).NodeID != nodeID) {
			continue
		}
		a := raw.(*Allocation).Copy()
		wasLive := !a.TerminalStatus()
		a.ClientStatus = u.ClientStatus
		a.ClientDescription = u.ClientDescription
		if u.TaskStates != nil {
			a.TaskStates = internTaskStates(u.TaskStates, shared)
		}
		if u.CheckResults != nil {
			a.CheckResults = u.CheckResults
		}
		a.ClientStatus, a.ClientDescription = shared(a.ClientStatus), shared(a.ClientDescription)
		var healthChange *bool
		if u.DeploymentStatus != nil && u.DeploymentStatus.Healthy != nil && a.DeploymentID != "" {
			if a.DeploymentStatus == nil {
				a.DeploymentStatus = &AllocDeploymentStatus{}
			}
			if a.DeploymentStatus.Healthy == nil || *a.DeploymentStatus.Healthy != *u.DeploymentStatus.Healthy {
				h := *u.DeploymentStatus.Healthy
				healthChange = &h
			}
		}
		a.ModifyIndex = idx
		a.ModifyTime = now
		if healthChange != nil {
			if err := setAllocHealthTxn(txn, idx, a, *healthChange, u.DeploymentStatus.Timestamp, now, deps); err != nil {
				return false, err
			}
		}
		if err := txn.Insert(allocsTable, a); err != nil {
			return false, fmt.Errorf("failed updating allocation: %w", err)
		}
		// Refreshing the job's status walks all of its allocations, too
		// much for every report: it can only change when an allocation
		// stops being live, or while the job is not running yet.
		jobs[[2]string{a.Namespace, a.JobID}] = jobs[[2]string{a.Namespace, a.JobID}] || (wasLive && a.TerminalStatus())
		touched = true
	}
	return touched, nil
}

// setAllocHealthTxn records an allocation's health (a is the copy about to
// be inserted) and updates its deployment's counters as Nomad does: unset →
// healthy +1, unset → unhealthy +1, healthy → unhealthy moves one from
// healthy to unhealthy; unhealthy → healthy changes no counter. copies
// (may be nil) holds the deployments txn already copied and inserted: a
// batch of reports on one deployment copies and inserts it once, then
// counts into that copy (no indexed field changes).
func setAllocHealthTxn(txn *memdb.Txn, idx uint64, a *Allocation, healthy bool, ts time.Time, now int64, copies map[string]*Deployment) error {
	if a.DeploymentStatus == nil {
		a.DeploymentStatus = &AllocDeploymentStatus{}
	}
	prev := a.DeploymentStatus.Healthy
	h := healthy
	a.DeploymentStatus.Healthy = &h
	if ts.IsZero() {
		ts = time.Unix(0, now).UTC()
	}
	a.DeploymentStatus.Timestamp = ts
	a.DeploymentStatus.ModifyIndex = idx
	a.ModifyIndex = idx
	a.ModifyTime = now
	if a.DeploymentID == "" {
		return nil
	}
	d := copies[a.DeploymentID]
	copied := d != nil
	if !copied {
		raw, err := txn.First(deploymentsTable, "id", a.DeploymentID)
		if err != nil {
			return fmt.Errorf("failed deployment lookup: %w", err)
		}
		if raw == nil {
			return nil
		}
		d = raw.(*Deployment).Copy()
	}
	st := d.TaskGroups[a.TaskGroup]
	if st == nil {
		return nil
	}
	switch {
	case prev == nil && healthy:
		st.HealthyAllocs++
	case prev == nil && !healthy:
		st.UnhealthyAllocs++
	case prev != nil && *prev && !healthy:
		st.HealthyAllocs--
		st.UnhealthyAllocs++
	}
	if healthy && st.ProgressDeadline > 0 {
		by := ts.Add(st.ProgressDeadline)
		if st.RequireProgressBy == nil || by.After(*st.RequireProgressBy) {
			st.RequireProgressBy = &by
		}
	}
	d.ModifyIndex = idx
	d.ModifyTime = now
	if copied {
		return nil // inserted by this transaction already
	}
	if err := txn.Insert(deploymentsTable, d); err != nil {
		return fmt.Errorf("failed updating deployment: %w", err)
	}
	if copies != nil {
		copies[d.ID] = d
	}
	return setIndex(txn, deploymentsTable, idx)
}

// refreshJobStatusTxn sets a job's status from its allocations as Nomad
// does: dead when stopped and nothing runs, running when something runs or
// is placed, pending otherwise. It reads until the answer is known: the
// first live allocation (most writes), else the first waiting evaluation,
// not every allocation and evaluation of the job.
func refreshJobStatusTxn(txn *memdb.Txn, idx uint64, ns, jobID string) error {
	raw, err := txn.First(jobsTable, "id", ns, jobID)
	if err != nil {
		return fmt.Errorf("failed job lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	job := raw.(*Job)
	// Nomad's getJobStatus: running while an allocation is not terminal,
	// pending while an evaluation is (a delayed reschedule, a blocked
	// placement), dead once it had either and both are over. A stopped
	// job is dead as soon as nothing runs.
	live, anyAlloc, err := firstTxn(txn, allocsTable, "job", ns, jobID, func(a *Allocation) bool { return !a.TerminalStatus() })
	if err != nil {
		return err
	}
	status := JobStatusPending
	switch {
	case live:
		status = JobStatusRunning
	case job.Stop:
		status = JobStatusDead
	default:
		waiting, anyEval, err := firstTxn(txn, evalsTable, "job", ns, jobID, func(e *Evaluation) bool { return !e.Terminal() })
		if err != nil {
			return err
		}
		if !waiting && (anyAlloc || anyEval) {
			status = JobStatusDead
		}
	}
	return setJobStatusTxn(txn, idx, ns, jobID, status)
}

// firstTxn walks a job's rows of table until match accepts one: found says
// whether one did, seen whether the job has a row at all.
func firstTxn[T any](txn *memdb.Txn, table, index, ns, jobID string, match func(*T) bool) (found, seen bool, err error) {
	iter, err := txn.Get(table, index, ns, jobID)
	if err != nil {
		return false, false, fmt.Errorf("failed %s lookup: %w", table, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		seen = true
		if match(raw.(*T)) {
			return true, true, nil
		}
	}
	return false, seen, nil
}
