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
	deployments := map[string]*Deployment{}
	loadDeployment := func(id string) (*Deployment, error) {
		if d, ok := deployments[id]; ok {
			return d, nil
		}
		raw, err := txn.First(deploymentsTable, "id", id)
		if err != nil {
			return nil, fmt.Errorf("failed deployment lookup: %w", err)
		}
		if raw == nil {
			return nil, nil
		}
		d := raw.(*Deployment).Copy()
		deployments[id] = d
		return d, nil
	}
	if p.Deployment != nil {
		d := p.Deployment.Copy()
		d.CreateIndex, d.ModifyIndex = idx, idx
		d.CreateTime, d.ModifyTime = p.Now, p.Now
		deployments[d.ID] = d
		if err := addHistoryTxn(txn, idx, nil, d, DeploymentCause{Kind: "scheduler", EvalID: p.EvalID, Rule: "created"}, p.Now); err != nil {
			return nil, err
		}
	}
	for _, st := range p.Stops {
		raw, _ := txn.First(allocsTable, "id", st.AllocID)
		a := raw.(*Allocation).Copy()
		a.DesiredStatus = AllocDesiredStatusStop
		a.DesiredDescription = st.DesiredDescription
		if st.ClientStatus != "" {
			a.ClientStatus = st.ClientStatus
			a.AppendState(AllocStateFieldClientStatus, st.ClientStatus, time.Unix(0, p.Now))
		}
		if st.FollowupEvalID != "" {
			a.FollowupEvalID = st.FollowupEvalID
		}
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = idx, idx, p.Now
		if err := txn.Insert(allocsTable, a); err != nil {
			return nil, fmt.Errorf("failed updating allocation: %w", err)
		}
	}
	for _, cs := range p.ClientStates {
		raw, _ := txn.First(allocsTable, "id", cs.AllocID)
		a := raw.(*Allocation).Copy()
		if cs.ClientStatus != "" {
			if cs.ClientStatus != a.ClientStatus {
				a.ClientStatus, a.ClientDescription = cs.ClientStatus, cs.ClientDescription
			}
			at := cs.Time
			if at == 0 {
				at = p.Now
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
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = idx, idx, p.Now
		if err := txn.Insert(allocsTable, a); err != nil {
			return nil, fmt.Errorf("failed updating allocation: %w", err)
		}
	}
	for _, fu := range p.Followups {
		raw, _ := txn.First(allocsTable, "id", fu.AllocID)
		a := raw.(*Allocation).Copy()
		a.FollowupEvalID = fu.FollowupEvalID
		// ModifyTime stays: it is the failure time a delay counts from
		// when the client reported no task times.
		a.ModifyIndex = idx
		if err := txn.Insert(allocsTable, a); err != nil {
			return nil, fmt.Errorf("failed updating allocation: %w", err)
		}
	}
	for _, e := range p.FollowupEvals {
		ev := *e
		ev.CreateTime, ev.ModifyTime = p.Now, p.Now
		if err := upsertEvalTxn(txn, idx, &ev); err != nil {
			return nil, err
		}
	}
	for _, ip := range p.InPlace {
		raw, _ := txn.First(allocsTable, "id", ip.AllocID)
		a := raw.(*Allocation).Copy()
		a.JobVersion = ip.JobVersion
		if ip.DeploymentID != a.DeploymentID {
			// The allocation joins the new deployment: it counts as placed
			// there (as Nomad counts it), and its health is reported anew.
			a.DeploymentID = ip.DeploymentID
			a.DeploymentStatus = nil
			if err := countPlacement(a, p.Now, loadDeployment); err != nil {
				return nil, err
			}
		}
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = idx, idx, p.Now
		if err := txn.Insert(allocsTable, a); err != nil {
			return nil, fmt.Errorf("failed updating allocation: %w", err)
		}
	}
	local, metrics := planStrings(), newMetricMaps()
	for _, pl := range p.Placements {
		a := pl.Copy()
		a.internStrings(shared, local)
		metrics.share(a.Metrics)
		a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = idx, idx, idx
		a.CreateTime, a.ModifyTime = p.Now, p.Now
		if a.ClientStatus == "" {
			a.ClientStatus = AllocClientStatusPending
		}
		if a.DesiredStatus == "" {
			a.DesiredStatus = AllocDesiredStatusRun
		}
		if err := countPlacement(a, p.Now, loadDeployment); err != nil {
			return nil, err
		}
		if a.PreviousAllocation != "" {
			if raw, err := txn.First(allocsTable, "id", a.PreviousAllocation); err == nil && raw != nil {
				prev := raw.(*Allocation).Copy()
				prev.NextAllocation = a.ID
				prev.ModifyIndex = idx
				if err := txn.Insert(allocsTable, prev); err != nil {
					return nil, fmt.Errorf("failed updating allocation: %w", err)
				}
			}
		}
		if err := txn.Insert(allocsTable, a); err != nil {
			return nil, fmt.Errorf("failed inserting allocation: %w", err)
		}
	}
	for _, u := range p.DeploymentUpdates {
		d, err := loadDeployment(u.DeploymentID)
		if err != nil {
			return nil, err
		}
		old := d.Copy()
		d.Status, d.StatusDescription = u.Status, u.StatusDescription
		d.ModifyIndex, d.ModifyTime = idx, p.Now
		rule := "complete"
		if u.Status == DeploymentStatusCancelled {
			rule = "cancelled"
		}
		if err := addHistoryTxn(txn, idx, old, d, DeploymentCause{Kind: "scheduler", EvalID: p.EvalID, Rule: rule}, p.Now); err != nil {
			return nil, err
		}
		if u.Status == DeploymentStatusSuccessful {
			if err := setJobStableTxn(txn, idx, d.Namespace, d.JobID, d.JobVersion, true); err != nil && !isNotFound(err) {
				return nil, err
			}
		}
	}
	for _, d := range deployments {
		d.ModifyIndex = idx
		if err := txn.Insert(deploymentsTable, d); err != nil {
			return nil, fmt.Errorf("failed writing deployment: %w", err)
		}
	}
	if len(deployments) > 0 {
		if err := setIndex(txn, deploymentsTable, idx); err != nil {
			return nil, err
		}
	}
	if len(p.Placements)+len(p.Stops)+len(p.InPlace)+len(p.Followups)+len(p.ClientStates) > 0 {
		if err := setIndex(txn, allocsTable, idx); err != nil {
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

// checkPlanTxn says why a plan no longer fits the state ("" when it does).
// Room on the nodes is read from usage: O(placements and stops), whatever
// the nodes already run.
func checkPlanTxn(txn *memdb.Txn, usage *nodeUsage, p *Plan) (string, error) {
	raw, err := txn.First(jobsTable, "id", p.Namespace, p.JobID)
	if err != nil {
		return "", fmt.Errorf("failed job lookup: %w", err)
	}
	var cur uint64
	if raw != nil {
		cur = raw.(*Job).JobModifyIndex
	}
	if cur != p.JobModifyIndex {
		return fmt.Sprintf("job %q changed since the plan was computed", p.JobID), nil
	}
	stopping := map[string]bool{}
	// freed: what the live allocations the plan stops give back, per node.
	freed := map[string]Resources{}
	for _, st := range p.Stops {
		raw, err := txn.First(allocsTable, "id", st.AllocID)
		if err != nil {
			return "", fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil {
			return fmt.Sprintf("allocation %s is gone", st.AllocID), nil
		}
		if a := raw.(*Allocation); !stopping[a.ID] && !a.TerminalStatus() {
			freed[a.NodeID] = freed[a.NodeID].Plus(a.Resources, 1)
		}
		stopping[st.AllocID] = true
	}
	for _, fu := range p.Followups {
		raw, err := txn.First(allocsTable, "id", fu.AllocID)
		if err != nil {
			return "", fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil {
			return fmt.Sprintf("allocation %s is gone", fu.AllocID), nil
		}
		// Another evaluation took care of it meanwhile.
		if a := raw.(*Allocation); a.FollowupEvalID != "" || a.NextAllocation != "" {
			return fmt.Sprintf("allocation %s already has a follow-up", fu.AllocID), nil
		}
	}
	for _, cs := range p.ClientStates {
		raw, err := txn.First(allocsTable, "id", cs.AllocID)
		if err != nil {
			return "", fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil || stopping[cs.AllocID] || raw.(*Allocation).TerminalStatus() {
			return fmt.Sprintf("allocation %s is gone or stopped", cs.AllocID), nil
		}
	}
	for _, ip := range p.InPlace {
		raw, err := txn.First(allocsTable, "id", ip.AllocID)
		if err != nil {
			return "", fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil || raw.(*Allocation).TerminalStatus() {
			return fmt.Sprintf("allocation %s is gone or stopped", ip.AllocID), nil
		}
	}
	// Migrations (placements replacing an allocation this plan stops as
	// migrated) may also go into a paused deployment, as in Nomad: a
	// paused rollout must not block a drain.
	migrating := map[string]bool{}
	for _, st := range p.Stops {
		if st.DesiredDescription == AllocDescMigrating {
			migrating[st.AllocID] = true
		}
	}
	running := func(id string, migration bool) (bool, error) {
		if p.Deployment != nil && p.Deployment.ID == id {
			return true, nil
		}
		raw, err := txn.First(deploymentsTable, "id", id)
		if err != nil {
			return false, fmt.Errorf("failed deployment lookup: %w", err)
		}
		if raw == nil {
			return false, nil
		}
		st := raw.(*Deployment).Status
		return st == DeploymentStatusRunning || (migration && st == DeploymentStatusPaused), nil
	}
	for _, u := range p.DeploymentUpdates {
		raw, err := txn.First(deploymentsTable, "id", u.DeploymentID)
		if err != nil {
			return "", fmt.Errorf("failed deployment lookup: %w", err)
		}
		if raw == nil || !raw.(*Deployment).Active() {
			return fmt.Sprintf("deployment %s is gone or no longer active", u.DeploymentID), nil
		}
		// Success needs the deployment still running: a pause or a
		// failure that came in meanwhile wins.
		if u.Status == DeploymentStatusSuccessful || u.Status == DeploymentStatusBlocked {
			if raw.(*Deployment).Status != DeploymentStatusRunning {
				return fmt.Sprintf("deployment %s is no longer running", u.DeploymentID), nil
			}
		}
	}
	// Resources per node: what the live allocations use, plus the placements.
	type onNode struct {
		need       Resources
		placements []*Allocation
		ports      []int
	}
	nodes := map[string]*onNode{}
	var order []string
	for _, pl := range p.Placements {
		if pl.DeploymentID != "" {
			ok, err := running(pl.DeploymentID, migrating[pl.PreviousAllocation])
			if err != nil {
				return "", err
			}
			if !ok {
				return fmt.Sprintf("deployment %s is not running", pl.DeploymentID), nil
			}
		}
		n := nodes[pl.NodeID]
		if n == nil {
			n = &onNode{}
			nodes[pl.NodeID] = n
			order = append(order, pl.NodeID)
		}
		n.need = n.need.Plus(pl.Resources, 1)
		n.placements = append(n.placements, pl)
		for _, port := range pl.AllocatedPorts {
			n.ports = append(n.ports, port.Value)
		}
	}
	for _, nodeID := range order {
		n := nodes[nodeID]
		raw, err := txn.First(nodesTable, "id", nodeID)
		if err != nil {
			return "", fmt.Errorf("failed node lookup: %w", err)
		}
		if raw == nil || !raw.(*Node).Ready() {
			return fmt.Sprintf("node %s is gone or not ready", nodeID), nil
		}
		node := raw.(*Node)
		used, held := usage.room(nodeID, n.ports)
		// What stays plus what is placed; freed (counted alike) is part
		// of used, so the difference is never negative.
		f := freed[nodeID]
		used.CPU, used.MemoryMB = used.CPU-f.CPU, used.MemoryMB-f.MemoryMB
		_, cpuOK := Room(node.Resources.CPU, used.CPU, n.need.CPU)
		_, memOK := Room(node.Resources.MemoryMB, used.MemoryMB, n.need.MemoryMB)
		if !cpuOK || !memOK {
			return fmt.Sprintf("node %s has no room left", nodeID), nil
		}
		if reason := portCollision(node, held, stopping, n.placements); reason != "" {
			return reason, nil
		}
	}
	return "", nil
}

// portCollision says which host port two allocations (or an allocation
// and the node's reserved ports) would share on node: the applier's
// guarantee that two plans computed side by side never hand out one port
// twice ("" if none). held lists, per port the placements ask for, the
// live allocations holding it; placements are the plan's on this node.
func portCollision(node *Node, held map[int][]string, stopping map[string]bool, placements []*Allocation) string {
	taken := map[int]string{}
	for _, pl := range placements {
		for _, port := range pl.AllocatedPorts {
			other, ok := taken[port.Value]
			if !ok {
				other, ok = holder(node, held[port.Value], stopping, port.Value)
			}
			if ok {
				return fmt.Sprintf("node %s: port %d (%s of allocation %s) is already taken by %s", node.ID, port.Value, port.Label, pl.ID, other)
			}
			taken[port.Value] = "allocation " + pl.ID
		}
	}
	return ""
}

// holder names what holds port on node before the plan: a live allocation
// the plan does not stop (the highest ID, as the node's allocations were
// listed in ID order), else the node's reserved ports.
func holder(node *Node, owners []string, stopping map[string]bool, port int) (string, bool) {
	best := ""
	for _, id := range owners {
		if !stopping[id] && id > best {
			best = id
		}
	}
	if best != "" {
		return "allocation " + best, true
	}
	for _, p := range node.ReservedPorts {
		if p == port {
			return "the node's reserved ports", true
		}
	}
	return "", false
}
