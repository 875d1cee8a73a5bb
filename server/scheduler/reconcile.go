package scheduler

import (
	"time"

	"github.com/ctlplane/ctlplane/server/scheduler/usage"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// Why an allocation is stopped (Nomad's texts).
const (
	allocNotNeeded   = "alloc not needed due to job update"
	allocUpdating    = "alloc is being updated due to job update"
	allocLost        = "alloc is lost since its node is down"
	allocRescheduled = "alloc was rescheduled because it failed"
	allocMigrating   = state.AllocDescMigrating
)

// result is one computed plan and what the evaluation reports about it.
type result struct {
	plan *state.Plan
	// queued counts, per group, the allocations no node could take.
	queued map[string]int
	// blocked: something could not be placed for lack of nodes, resources or drivers.
	blocked      bool
	deploymentID string
	// failed is, per group, the metric of its first failed placement;
	// placer, then, what the placement learnt of the node classes.
	failed map[string]*state.AllocMetric
	placer *placer
}

// reconciler computes one plan from one point-in-time state.
type reconciler struct {
	snap     State
	eval     *state.Evaluation
	job      *state.Job
	res      *result
	placer   *placer
	nodes    map[string]*state.Node
	versions map[uint64]*state.Job
	stopped  map[string]bool
	// deployment is the current version's deployment (existing or created
	// by this plan), nil when there is none or it already succeeded.
	deployment *state.Deployment
	created    bool
	// exists: some deployment (of any status) tracks the current version.
	exists bool
	// now is the evaluation's time: reschedule delays are counted to it.
	now time.Time
}

// groupState is one task group's allocations, sorted out.
type groupState struct {
	tg       *state.TaskGroup
	strategy *state.UpdateStrategy
	dstate   *state.DeploymentState
	// canaries are the live canaries of the current deployment.
	canaries []*state.Allocation
	// counted are the live allocations that count toward Count: current,
	// inplace and destructive are its parts.
	counted                       []*state.Allocation
	current, inplace, destructive []*state.Allocation
	// donors are dead (failed or lost) allocations awaiting a replacement,
	// by name index; donorStop says how to stop one when it is replaced.
	donors    map[int]*state.Allocation
	donorStop map[string]string
	// canaryDonors are dead canaries of the current deployment: their
	// replacements are canaries again.
	canaryDonors []*state.Allocation
	// rescheduled are the failed allocations replaced now under their
	// reschedule policy (their replacements carry a tracker); later are
	// the ones to replace once their delay has passed.
	rescheduled map[string]bool
	later       []delayedReschedule
	// migrate are the live allocations a drain marked to move
	// (DesiredTransition.Migrate): they count toward Count until replaced.
	migrate []*state.Allocation
	// disconnecting become unknown in this plan (their node disconnected).
	disconnecting []*state.Allocation
	missing       int
	hadRunning    bool

	placed, queued int
	requireCanary  bool
	// migrated counts the migrations this plan places; names and
	// placedNames keep two placements of one plan off one name.
	migrated    int
	names       *nameIndex
	placedNames map[int]bool
}

// compute reconciles the evaluation's job with snap and returns the plan,
// placing with limited placement when view says so (PlacementLimiter).
func compute(snap State, eval *state.Evaluation, view UsageSource, now time.Time) (*result, error) {
	l, ok := view.(PlacementLimiter)
	return computeWith(snap, eval, view, now, ok && l.LimitedPlacement())
}

// computeWith is compute with limited placement on or off.
func computeWith(snap State, eval *state.Evaluation, view UsageSource, now time.Time, limited bool) (*result, error) {
	return computeOpts(snap, eval, view, now, computeOptions{limited: limited})
}

// computeOptions: limited placement; uncached scores every node for
// every placement and checks nodes one by one (the tests' reference for
// the score cache and the per-class static checks).
type computeOptions struct {
	limited, uncached bool
}

func computeOpts(snap State, eval *state.Evaluation, view UsageSource, now time.Time, opts computeOptions) (*result, error) {
	ns, jobID := eval.Namespace, eval.JobID
	_, job, err := snap.Job(nil, ns, jobID)
	if err != nil {
		return nil, err
	}
	_, allocs, err := snap.AllocsByJob(nil, ns, jobID)
	if err != nil {
		return nil, err
	}
	_, deployments, err := snap.DeploymentsByJob(nil, ns, jobID)
	if err != nil {
		return nil, err
	}
	r := &reconciler{
		snap: snap, eval: eval, job: job,
		res: &result{plan: &state.Plan{EvalID: eval.ID, Namespace: ns, JobID: jobID,
			Annotations: &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{}}}, queued: map[string]int{}},
		versions: map[uint64]*state.Job{},
		stopped:  map[string]bool{},
		now:      now,
	}
	if job != nil {
		r.res.plan.JobModifyIndex = job.JobModifyIndex
	}
	if job == nil || job.Stop {
		r.stopJob(allocs, deployments)
		return r.res, nil
	}
	// Allocations made before this job was created belong to an earlier
	// job under the same ID (purged, then registered again), as Nomad's
	// AllocsByJob leaves out other CreateIndexes.
	own := allocs[:0:0]
	for _, a := range allocs {
		if a.CreateIndex > job.CreateIndex {
			own = append(own, a)
		}
	}
	allocs = own
	var nodes *usage.NodeList
	if src, ok := view.(NodeListSource); ok {
		nodes, err = src.NodeList(snap)
	} else {
		nodes, err = usage.ReadNodeList(snap)
	}
	if err != nil {
		return nil, err
	}
	if view != nil {
		used, err := view.NodeUsage(snap)
		if err != nil {
			return nil, err
		}
		r.placer = newPlacerFromUsage(nodes, used, allocs, func(id string) ([]*state.Allocation, error) {
			_, as, err := snap.AllocsByNode(nil, id)
			return as, err
		})
	} else {
		_, cluster, err := snap.Allocs(nil, state.AllNamespaces)
		if err != nil {
			return nil, err
		}
		r.placer = newPlacer(nodes, cluster, ns, jobID)
	}
	if opts.limited {
		r.placer.limited, r.placer.seed = true, seedOf(eval.ID)
	}
	r.placer.uncached = opts.uncached
	defer r.placer.releaseNodes()
	r.nodes = nodes.ByID
	r.pickDeployment(deployments)

	byGroup := map[string][]*state.Allocation{}
	for _, a := range allocs {
		if job.LookupTaskGroup(a.TaskGroup) == nil {
			if a.DesiredStatus == state.AllocDesiredStatusRun {
				r.stop(a, allocNotNeeded, "")
			}
			continue
		}
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	groups := make([]*groupState, 0, len(job.TaskGroups))
	for _, tg := range job.TaskGroups {
		gs, err := r.classify(tg, byGroup[tg.Name])
		if err != nil {
			return nil, err
		}
		groups = append(groups, gs)
		r.res.queued[tg.Name] = 0
		r.desired(tg.Name)
		r.createFollowups(gs.later)
	}
	r.createDeployment(groups)
	for _, gs := range groups {
		r.reconcileGroup(gs)
	}
	for _, gs := range groups {
		r.markDisconnected(gs.disconnecting)
	}
	r.dropStoppedClientStates()
	r.finishDeployment(groups)
	if r.deployment != nil {
		r.res.deploymentID = r.deployment.ID
	}
	if r.placer.err != nil {
		return nil, r.placer.err
	}
	return r.res, nil
}

// stopJob stops every allocation of a stopped or purged job and cancels its
// active deployments.
func (r *reconciler) stopJob(allocs []*state.Allocation, deployments []*state.Deployment) {
	for _, a := range allocs {
		if a.DesiredStatus == state.AllocDesiredStatusRun {
			r.stop(a, allocNotNeeded, "")
		}
	}
	for _, d := range deployments {
		if d.Active() {
			r.cancel(d, state.DeploymentStatusDescriptionStoppedJob)
		}
	}
}

// pickDeployment finds the current version's deployment and cancels every
// other active one (they track an older version or an older job).
func (r *reconciler) pickDeployment(deployments []*state.Deployment) {
	for _, d := range deployments { // newest first
		current := d.JobVersion == r.job.Version && d.JobCreateIndex == r.job.CreateIndex
		if current && !r.exists {
			r.exists = true
			// A finished one no longer gates anything: later placements
			// (e.g. a lost allocation's replacement) run untracked.
			if d.Status != state.DeploymentStatusSuccessful && d.Status != state.DeploymentStatusCancelled {
				r.deployment = d
			}
			continue
		}
		if d.Active() {
			r.cancel(d, state.DeploymentStatusDescriptionNewerJob)
		}
	}
}

func (r *reconciler) cancel(d *state.Deployment, desc string) {
	r.res.plan.DeploymentUpdates = append(r.res.plan.DeploymentUpdates, &state.DeploymentStatusUpdate{
		DeploymentID: d.ID, Status: state.DeploymentStatusCancelled, StatusDescription: desc,
	})
}

// stop stops an allocation and frees what it used for this plan's placements.
func (r *reconciler) stop(a *state.Allocation, desc, clientStatus string) {
	if r.stopped[a.ID] {
		return
	}
	if r.placer != nil && !a.TerminalStatus() {
		r.placer.release(a)
	}
	r.addStop(a, desc, clientStatus)
}

// addStop records the stop only (its resources were already released).
func (r *reconciler) addStop(a *state.Allocation, desc, clientStatus string) {
	r.stopped[a.ID] = true
	if desc != allocUpdating && desc != allocMigrating { // counted as such
		r.desired(a.TaskGroup).Stop++
	}
	r.res.plan.Stops = append(r.res.plan.Stops, &state.AllocStop{AllocID: a.ID, DesiredDescription: desc, ClientStatus: clientStatus})
}

// desired is the group's entry in the plan's annotations.
func (r *reconciler) desired(group string) *state.DesiredUpdates {
	m := r.res.plan.Annotations.DesiredTGUpdates
	d := m[group]
	if d == nil {
		d = &state.DesiredUpdates{}
		m[group] = d
	}
	return d
}

// tainted says whether the allocation's node is gone, down or
// disconnected (what runs there is lost, unless taintOf says otherwise).
func (r *reconciler) tainted(nodeID string) bool {
	n := r.nodes[nodeID]
	return n == nil || n.Status == state.NodeStatusDown || n.Status == state.NodeStatusDisconnected
}

// stillFits says whether the allocation's node is still in the job's
// node pool and datacenters and has the group's drivers.
func (r *reconciler) stillFits(a *state.Allocation, tg *state.TaskGroup) bool {
	n := r.nodes[a.NodeID]
	return n != nil && state.InNodePool(n, r.job.NodePool) && inDatacenters(r.job.Datacenters, n.Datacenter) &&
		hasDrivers(n, tg) && nodeMeets(r.job, tg, n)
}

// version returns one stored version of the job (nil when it is gone).
func (r *reconciler) version(v uint64) (*state.Job, error) {
	if j, ok := r.versions[v]; ok {
		return j, nil
	}
	_, j, err := r.snap.JobVersion(nil, r.job.Namespace, r.job.ID, v)
	if err != nil {
		return nil, err
	}
	r.versions[v] = j
	return j, nil
}

// updateStrategy is the group's update block, else the job's (Nomad copies
// the job's into groups that have none).
func updateStrategy(job *state.Job, tg *state.TaskGroup) *state.UpdateStrategy {
	if tg.Update != nil {
		return tg.Update
	}
	return job.Update
}

// createDeployment creates the current version's deployment when a group
// with an update strategy has something to place or update and no
// deployment tracks this version yet. One deployment covers every such group.
func (r *reconciler) createDeployment(groups []*groupState) {
	if r.exists {
		return
	}
	var d *state.Deployment
	canaries, auto := false, true
	for _, gs := range groups {
		s := gs.strategy
		updating := len(gs.destructive)+len(gs.inplace) > 0
		if s.IsEmpty() || gs.tg.Count == 0 || (gs.missing <= 0 && !updating) || (gs.hadRunning && !updating) {
			continue
		}
		if d == nil {
			d = &state.Deployment{
				ID:                 uuid.NewString(),
				Namespace:          r.job.Namespace,
				JobID:              r.job.ID,
				JobVersion:         r.job.Version,
				JobModifyIndex:     r.job.JobModifyIndex,
				JobSpecModifyIndex: r.job.JobModifyIndex,
				JobCreateIndex:     r.job.CreateIndex,
				IsMultiregion:      r.job.Multiregion != nil,
				TaskGroups:         map[string]*state.DeploymentState{},
				Status:             state.DeploymentStatusRunning,
				StatusDescription:  state.DeploymentStatusDescriptionRunning,
				EvalPriority:       r.job.Priority,
			}
		}
		ds := &state.DeploymentState{
			AutoRevert:       s.AutoRevert,
			AutoPromote:      s.AutoPromote,
			ProgressDeadline: s.ProgressDeadline,
			DesiredTotal:     gs.tg.Count,
		}
		if len(gs.destructive) > 0 && s.Canary > 0 {
			ds.DesiredCanaries = s.Canary
			canaries = true
			auto = auto && s.AutoPromote
		}
		d.TaskGroups[gs.tg.Name] = ds
		gs.dstate = ds
	}
	if d == nil {
		return
	}
	if canaries {
		d.StatusDescription = state.DeploymentStatusDescriptionRunningNeedsPromotion
		if auto {
			d.StatusDescription = state.DeploymentStatusDescriptionRunningAutoPromotion
		}
	}
	r.deployment, r.created, r.exists = d, true, true
	r.res.plan.Deployment = d
}
