package state

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Plan is one scheduler decision for one job: what to place, stop and
// update, and what happens to the job's deployment. The leader applies it
// as one Raft entry, and only if the state it was computed from still holds
// for what it touches (see ApplyPlan).
type Plan struct {
	EvalID    string `codec:",omitempty"`
	Namespace string `codec:",omitempty"`
	JobID     string `codec:",omitempty"`
	// JobModifyIndex is the JobModifyIndex of the job version the plan was
	// computed for (0: the job was gone).
	JobModifyIndex uint64 `codec:",omitempty"`
	Placements     []*Allocation
	Stops          []*AllocStop
	InPlace        []*AllocInPlace
	// Deployment is a deployment the plan creates.
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	// FollowupEvals are evaluations the plan creates for later (delayed
	// reschedules: WaitUntil set), and Followups link failed allocations
	// to them, so that no later evaluation creates another.
	FollowupEvals []*Evaluation
	Followups     []*AllocFollowup
	// ClientStates are the servers' changes of client status: unknown on
	// a disconnected node, running again once it reconnected.
	ClientStates []*AllocClientState
	Now          int64 `codec:",omitempty"`
	// Annotations say what the scheduler wanted per group (Nomad's plan
	// annotations, read by a dry run). They are not part of the Raft entry.
	Annotations *PlanAnnotations `codec:"-"`
}

// AllocClientState sets an allocation's client status as the servers see
// it and records the change in its AllocStates (Nomad's disconnect and
// reconnect updates). FollowupEvalID, when set, is the evaluation that
// marks an unknown allocation lost once its node stayed away too long; a
// status other than unknown clears it.
type AllocClientState struct {
	AllocID           string `codec:",omitempty"`
	ClientStatus      string `codec:",omitempty"`
	ClientDescription string `codec:",omitempty"`
	FollowupEvalID    string `codec:",omitempty"`
	// Time is when the change happened (Unix nanoseconds; 0: the plan's Now).
	Time int64 `codec:",omitempty"`
	// Reconnected: the allocation was kept when its node came back; the
	// replacement it had is stopped, so it has no NextAllocation any more.
	// (ClientStatus "" then leaves its status as it is.)
	Reconnected bool `codec:",omitempty"`
}

// AllocFollowup links a failed allocation to the evaluation that will
// replace it once its reschedule delay has passed.
type AllocFollowup struct {
	AllocID        string
	FollowupEvalID string
}

// PlanAnnotations are Nomad's Plan.Annotations.
type PlanAnnotations struct {
	// DesiredTGUpdates: per task group of the job (and per group of
	// allocations the job no longer has), what the plan does.
	DesiredTGUpdates map[string]*DesiredUpdates
}

// DesiredUpdates counts a plan's decisions for one group (Nomad's). Place
// and Canary count attempted placements (some may find no node), Stop
// every stop but a destructive update's, Ignore the allocations left as
// they are (destructive updates waiting for their turn included).
// Migrate and Preemptions stay 0: there is no draining or preemption.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}

// AllocStop tells an allocation to stop.
type AllocStop struct {
	AllocID            string
	DesiredDescription string
	// ClientStatus, when set, also marks the allocation (e.g. lost).
	ClientStatus string
	// FollowupEvalID links a failed allocation to its replacement's eval.
	FollowupEvalID string
}

// AllocInPlace moves an allocation to a new job version whose group changed
// only in what a running task can take on (the scheduler's in-place rule),
// without replacing it.
type AllocInPlace struct {
	AllocID      string
	JobVersion   uint64
	DeploymentID string
}

// IsNoOp says whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.Placements) == 0 && len(p.Stops) == 0 && len(p.InPlace) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0 && len(p.FollowupEvals) == 0 && len(p.Followups) == 0 &&
		len(p.ClientStates) == 0
}

// PlanResult says whether a plan was applied, and at which index.
type PlanResult struct {
	Index uint64
	// Refused says why the plan was not applied (stale state); empty when it was.
	Refused string
}

// ApplyPlan applies a plan at idx, or refuses it whole when the state it was
// computed from no longer holds: the job changed, a node it places on is
// gone, not ready, or out of CPU or memory, an allocation it stops or
// updates is gone, or a deployment it places for or updates is no longer
// running. The scheduler then tries again from a fresh snapshot.
func (s *Store) ApplyPlan(idx uint64, p *Plan) (*PlanResult, error) {
	return s.ApplyPlanWithEvals(idx, p, nil)
}

// ApplyPlanWithEvals is ApplyPlan that also writes evals (the outcome of
// the evaluation that made the plan: it complete, its blocked evaluation)
// in the same transaction, and only when the plan is applied: one Raft
// entry per evaluation instead of two. A refused plan writes nothing.
func (s *Store) ApplyPlanWithEvals(idx uint64, p *Plan, evals []*Evaluation) (*PlanResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	if reason, err := checkPlanTxn(txn, s.usage, p); err != nil || reason != "" {
		return &PlanResult{Refused: reason}, err
	}
	w := &planWrite{txn: txn, idx: idx, p: p, deployments: map[string]*Deployment{}}
	for _, step := range []func() error{
		w.createDeployment, w.stop, w.setClientStates, w.linkFollowups, w.insertFollowupEvals,
		w.updateInPlace, w.place, w.updateDeployments, w.writeDeployments, w.setAllocsIndex,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	for _, e := range evals {
		if err := upsertEvalTxn(txn, idx, e); err != nil {
			return nil, err
		}
	}
	if err := refreshJobStatusTxn(txn, idx, p.Namespace, p.JobID); err != nil {
		return nil, err
	}
	s.commitOrch(txn, idx)
	return &PlanResult{Index: idx}, nil
}

// planWrite applies a checked plan inside its write transaction, one step
// per kind of change. The deployments it touches are read once into
// deployments, changed there and written together by writeDeployments.
type planWrite struct {
	txn         *memdb.Txn
	idx         uint64
	p           *Plan
	deployments map[string]*Deployment
}

// deployment returns the plan's copy of deployment id (nil: none).
func (w *planWrite) deployment(id string) (*Deployment, error) {
	if d, ok := w.deployments[id]; ok {
		return d, nil
	}
	raw, err := w.txn.First(deploymentsTable, "id", id)
	if err != nil {
		return nil, fmt.Errorf("failed deployment lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	d := raw.(*Deployment).Copy()
	w.deployments[id] = d
	return d, nil
}

// alloc returns a copy of allocation id to change; checkPlanTxn made sure
// every allocation the plan changes exists.
func (w *planWrite) alloc(id string) *Allocation {
	raw, _ := w.txn.First(allocsTable, "id", id)
	return raw.(*Allocation).Copy()
}

func (w *planWrite) update(a *Allocation) error {
	if err := w.txn.Insert(allocsTable, a); err != nil {
		return fmt.Errorf("failed updating allocation: %w", err)
	}
	return nil
}

// createDeployment adds the deployment the plan starts, with its history.
func (w *planWrite) createDeployment() error {
	if w.p.Deployment == nil {
		return nil
	}
	d := w.p.Deployment.Copy()
	d.CreateIndex, d.ModifyIndex = w.idx, w.idx
	d.CreateTime, d.ModifyTime = w.p.Now, w.p.Now
	w.deployments[d.ID] = d
	return addHistoryTxn(w.txn, w.idx, nil, d, DeploymentCause{Kind: "scheduler", EvalID: w.p.EvalID, Rule: "created"}, w.p.Now)
}

// stop marks the stopped allocations desired stop (and, for those the
// servers end themselves, their client status).
func (w *planWrite) stop() error {
	for _, st := range w.p.Stops {
		a := w.alloc(st.AllocID)
		a.DesiredStatus = AllocDesiredStatusStop
		a.DesiredDescription = st.DesiredDescription
		if st.ClientStatus != "" {
			a.ClientStatus = st.ClientStatus
			a.AppendState(AllocStateFieldClientStatus, st.ClientStatus, time.Unix(0, w.p.Now))
		}
		if st.FollowupEvalID != "" {
			a.FollowupEvalID = st.FollowupEvalID
		}
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = w.idx, w.idx, w.p.Now
		if err := w.update(a); err != nil {
			return err
		}
	}
	return nil
}

// setClientStates applies the servers' changes of client status
// (disconnect and reconnect).
func (w *planWrite) setClientStates() error {
	for _, cs := range w.p.ClientStates {
		a := w.alloc(cs.AllocID)
		if cs.ClientStatus != "" {
			if cs.ClientStatus != a.ClientStatus {
				a.ClientStatus, a.ClientDescription = cs.ClientStatus, cs.ClientDescription
			}
			at := cs.Time
			if at == 0 {
				at = w.p.Now
			}
			a.AppendState(AllocStateFieldClientStatus, cs.ClientStatus, time.Unix(0, at))
		}
		switch {
		case cs.FollowupEvalID != "":
			a.FollowupEvalID = cs.FollowupEvalID
		case cs.ClientStatus != "" && cs.ClientStatus != AllocClientStatusUnknown:
			// Back from a disconnect: its timeout's follow-up is moot, and
			// a later failure must be free to get a follow-up of its own.
			a.FollowupEvalID = ""
		}
		if cs.Reconnected {
			a.NextAllocation = ""
		}
		// AllocModifyIndex too: a client that comes back learns of it.
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = w.idx, w.idx, w.p.Now
		if err := w.update(a); err != nil {
			return err
		}
	}
	return nil
}

// linkFollowups links failed allocations to the evaluations that will
// replace them.
func (w *planWrite) linkFollowups() error {
	for _, fu := range w.p.Followups {
		a := w.alloc(fu.AllocID)
		a.FollowupEvalID = fu.FollowupEvalID
		// ModifyTime stays: it is the failure time a delay counts from
		// when the client reported no task times.
		a.ModifyIndex = w.idx
		if err := w.update(a); err != nil {
			return err
		}
	}
	return nil
}

func (w *planWrite) insertFollowupEvals() error {
	for _, e := range w.p.FollowupEvals {
		ev := *e
		ev.CreateTime, ev.ModifyTime = w.p.Now, w.p.Now
		if err := upsertEvalTxn(w.txn, w.idx, &ev); err != nil {
			return err
		}
	}
	return nil
}

// updateInPlace moves allocations to the job's new version without
// replacing them.
func (w *planWrite) updateInPlace() error {
	for _, ip := range w.p.InPlace {
		a := w.alloc(ip.AllocID)
		a.JobVersion = ip.JobVersion
		if ip.DeploymentID != a.DeploymentID {
			// The allocation joins the new deployment: it counts as placed
			// there (as Nomad counts it), and its health is reported anew.
			a.DeploymentID = ip.DeploymentID
			a.DeploymentStatus = nil
			if err := countPlacement(a, w.p.Now, w.deployment); err != nil {
				return err
			}
		}
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = w.idx, w.idx, w.p.Now
		if err := w.update(a); err != nil {
			return err
		}
	}
	return nil
}

// place inserts the new allocations, counts them into their deployments
// and links each to the allocation it replaces.
func (w *planWrite) place() error {
	local, metrics := planStrings(), newMetricMaps()
	for _, pl := range w.p.Placements {
		a := pl.Copy()
		a.internStrings(shared, local)
		metrics.share(a.Metrics)
		a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = w.idx, w.idx, w.idx
		a.CreateTime, a.ModifyTime = w.p.Now, w.p.Now
		if a.ClientStatus == "" {
			a.ClientStatus = AllocClientStatusPending
		}
		if a.DesiredStatus == "" {
			a.DesiredStatus = AllocDesiredStatusRun
		}
		if err := countPlacement(a, w.p.Now, w.deployment); err != nil {
			return err
		}
		if err := w.linkPrevious(a); err != nil {
			return err
		}
		if err := w.txn.Insert(allocsTable, a); err != nil {
			return fmt.Errorf("failed inserting allocation: %w", err)
		}
	}
	return nil
}

// linkPrevious sets NextAllocation on the allocation a replaces, if it is
// still there.
func (w *planWrite) linkPrevious(a *Allocation) error {
	if a.PreviousAllocation == "" {
		return nil
	}
	raw, err := w.txn.First(allocsTable, "id", a.PreviousAllocation)
	if err != nil || raw == nil {
		return nil
	}
	prev := raw.(*Allocation).Copy()
	prev.NextAllocation = a.ID
	prev.ModifyIndex = w.idx
	return w.update(prev)
}

// updateDeployments applies the scheduler's deployment status changes
// (complete, cancelled); a successful one marks its job version stable.
func (w *planWrite) updateDeployments() error {
	for _, u := range w.p.DeploymentUpdates {
		d, err := w.deployment(u.DeploymentID)
		if err != nil {
			return err
		}
		old := d.Copy()
		d.Status, d.StatusDescription = u.Status, u.StatusDescription
		d.ModifyIndex, d.ModifyTime = w.idx, w.p.Now
		rule := "complete"
		if u.Status == DeploymentStatusCancelled {
			rule = "cancelled"
		}
		if err := addHistoryTxn(w.txn, w.idx, old, d, DeploymentCause{Kind: "scheduler", EvalID: w.p.EvalID, Rule: rule}, w.p.Now); err != nil {
			return err
		}
		if u.Status == DeploymentStatusSuccessful {
			if err := setJobStableTxn(w.txn, w.idx, d.Namespace, d.JobID, d.JobVersion, true); err != nil && !isNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// writeDeployments writes every deployment the plan touched.
func (w *planWrite) writeDeployments() error {
	for _, d := range w.deployments {
		d.ModifyIndex = w.idx
		if err := w.txn.Insert(deploymentsTable, d); err != nil {
			return fmt.Errorf("failed writing deployment: %w", err)
		}
	}
	if len(w.deployments) == 0 {
		return nil
	}
	return setIndex(w.txn, deploymentsTable, w.idx)
}

func (w *planWrite) setAllocsIndex() error {
	p := w.p
	if len(p.Placements)+len(p.Stops)+len(p.InPlace)+len(p.Followups)+len(p.ClientStates) == 0 {
		return nil
	}
	return setIndex(w.txn, allocsTable, w.idx)
}

// countPlacement counts a newly placed (or newly joined) allocation into its
// deployment's group: PlacedAllocs, PlacedCanaries, and the progress
// deadline from the first placement on. The deployment's indexes are set by
// the caller when it writes it.
func countPlacement(a *Allocation, now int64, load func(string) (*Deployment, error)) error {
	if a.DeploymentID == "" {
		return nil
	}
	d, err := load(a.DeploymentID)
	if err != nil || d == nil {
		return err
	}
	g := d.TaskGroups[a.TaskGroup]
	if g == nil {
		return nil
	}
	g.PlacedAllocs++
	if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
		g.PlacedCanaries = append(g.PlacedCanaries, a.ID)
	}
	if g.RequireProgressBy == nil && g.ProgressDeadline > 0 {
		by := time.Unix(0, now).UTC().Add(g.ProgressDeadline)
		g.RequireProgressBy = &by
	}
	d.ModifyTime = now
	return nil
}
