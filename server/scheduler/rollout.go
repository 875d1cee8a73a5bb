package scheduler

import (
	"math"
	"sort"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// reconcileGroup turns a sorted-out group into plan entries: in-place
// updates, canaries, replacements of dead allocations and new ones up to
// Count, and destructive updates within the rolling-update limit.
func (r *reconciler) reconcileGroup(gs *groupState) {
	tracked := r.deployment != nil && gs.dstate != nil
	depID := ""
	if tracked {
		depID = r.deployment.ID
	}
	// Nothing is placed for a tracked deployment that is not running
	// (paused, failed, blocked ...).
	ready := !tracked || r.deployment.Status == state.DeploymentStatusRunning
	canaryState := tracked && gs.dstate.DesiredCanaries > 0 && !gs.dstate.Promoted

	desired := r.desired(gs.tg.Name)
	desired.InPlaceUpdate += uint64(len(gs.inplace))
	desired.Ignore += uint64(len(gs.current))
	if canaryState {
		desired.Ignore += uint64(len(gs.canaries))
	}
	for _, a := range gs.inplace {
		r.res.plan.InPlace = append(r.res.plan.InPlace, &state.AllocInPlace{AllocID: a.ID, JobVersion: r.job.Version, DeploymentID: depID})
	}

	names := newNameIndex()
	gs.names = names
	for _, a := range gs.counted {
		names.take(allocIndex(a.Name))
	}
	for _, a := range gs.canaries {
		names.take(allocIndex(a.Name))
	}
	for _, a := range gs.migrate {
		names.take(allocIndex(a.Name))
	}
	r.migrate(gs, ready, depID)

	// Canaries come first when the version changed destructively. Once a
	// deployment wants canaries, it keeps that many until promoted, even if
	// the allocations they were to replace are gone meanwhile.
	gs.requireCanary = canaryState && len(gs.canaries) < gs.dstate.DesiredCanaries
	if gs.requireCanary && ready {
		n := gs.dstate.DesiredCanaries - len(gs.canaries)
		// A canary may share its name only with an allocation it is to
		// replace (a destructive update), so that promotion stops that one.
		taken := map[int]bool{}
		for _, group := range [][]*state.Allocation{gs.canaries, gs.current, gs.inplace} {
			for _, a := range group {
				taken[allocIndex(a.Name)] = true
			}
		}
		// A dead canary is replaced by a canary under its name.
		byIndex(gs.canaryDonors)
		for _, prev := range gs.canaryDonors {
			if idx := allocIndex(prev.Name); n > 0 && idx >= 0 && !taken[idx] {
				taken[idx] = true
				names.take(idx)
				n--
				r.placeAlloc(gs, idx, prev, true, depID)
			}
		}
		for _, idx := range canaryIndexes(n, gs.destructive, taken, names) {
			names.take(idx)
			r.placeAlloc(gs, idx, nil, true, depID)
		}
	}

	// Migrations placed by this plan are in flight too: a rolling update
	// in the same plan may not take the group below Count − MaxParallel.
	limit := max(r.limit(gs, tracked)-gs.migrated, 0)
	if ready {
		// Every placement, even one no node took, counts against the limit
		// (Nomad's), so a shortage never turns into more updates.
		attempted := 0
		n := gs.missing
		// Dead allocations are replaced under their own names, lowest first.
		idxs := make([]int, 0, len(gs.donors))
		for idx := range gs.donors {
			idxs = append(idxs, idx)
		}
		sort.Ints(idxs)
		for _, idx := range idxs {
			if n == 0 {
				break
			}
			if idx < 0 || idx >= gs.tg.Count || names.used[idx] {
				continue
			}
			names.take(idx)
			n--
			attempted++
			r.placeAlloc(gs, idx, gs.donors[idx], false, depID)
		}
		// New allocations wait until the canaries are promoted.
		for ; n > 0 && !canaryState; n-- {
			attempted++
			r.placeAlloc(gs, names.free(), nil, false, depID)
		}
		limit -= min(attempted, limit)
		// Failed allocations nothing replaces (the group is full without
		// them) are stopped, so that they do not linger as runnable.
		if gs.missing == 0 {
			for _, idx := range idxs {
				if prev := gs.donors[idx]; gs.donorStop[prev.ID] != "" {
					r.stop(prev, allocNotNeeded, "")
				}
			}
		}
	} else {
		r.rescheduleWhileNotReady(gs, names)
	}

	// Destructive updates: at most limit in flight; the old allocation is
	// stopped in the same plan as its replacement is placed.
	started := 0
	if ready && !canaryState {
		started = min(len(gs.destructive), limit)
		for _, a := range gs.destructive[:started] {
			r.placer.release(a)
			if !r.placeReplacement(gs, a, depID) {
				r.placer.reclaim(a)
				continue
			}
			r.addStop(a, allocUpdating, "")
		}
	}
	desired.DestructiveUpdate += uint64(started)
	desired.Ignore += uint64(len(gs.destructive) - started)
}

// migrate replaces the allocations a drain marked, each stopped in the
// plan that places its replacement (under its name, on a ready node),
// outside the rolling-update limit and whatever the deployment's status
// (Nomad's computeMigrations: a paused deployment must not block a drain).
// Without room elsewhere the allocation keeps running.
func (r *reconciler) migrate(gs *groupState, ready bool, depID string) {
	if !ready && (r.deployment == nil || r.deployment.Status != state.DeploymentStatusPaused) {
		depID = "" // a failed or blocked deployment takes no placements; a paused one takes migrations
	}
	r.desired(gs.tg.Name).Migrate += uint64(len(gs.migrate))
	canarying := gs.dstate != nil && gs.dstate.DesiredCanaries > 0 && !gs.dstate.Promoted
	byIndex(gs.migrate)
	for _, a := range gs.migrate {
		// While canaries wait for promotion, an old allocation moves as
		// its own version, outside the deployment (Nomad's
		// downgradeNonCanary): the promoted canary replaces it later.
		var old *state.Job
		if canarying && a.JobVersion != r.job.Version && !(a.DeploymentStatus != nil && a.DeploymentStatus.Canary) {
			if j, err := r.version(a.JobVersion); err == nil && j != nil && j.LookupTaskGroup(gs.tg.Name) != nil {
				old = j
			}
		}
		r.placer.release(a)
		dep := depID
		if old != nil {
			dep = ""
		}
		if !r.placeAllocNamed(gs, allocIndex(a.Name), a, false, dep, "") {
			r.placer.reclaim(a)
			continue
		}
		if old != nil {
			placed := r.res.plan.Placements[len(r.res.plan.Placements)-1]
			placed.JobVersion = old.Version
			placed.Resources = old.LookupTaskGroup(gs.tg.Name).Resources()
		}
		r.addStop(a, allocMigrating, "")
		gs.migrated++
	}
}

// rescheduleWhileNotReady replaces the failed allocations due for
// rescheduling even though the current deployment failed, except its own:
// Nomad's computeReplacements, "to avoid odd user experiences". The
// replacements run outside the deployment. (Nomad also places them into a
// paused deployment; here they wait for the resume, when they are placed
// within it.)
func (r *reconciler) rescheduleWhileNotReady(gs *groupState, names *nameIndex) {
	if r.deployment == nil || r.deployment.Status != state.DeploymentStatusFailed {
		return
	}
	idxs := make([]int, 0, len(gs.donors))
	for idx, prev := range gs.donors {
		if gs.rescheduled[prev.ID] && prev.DeploymentID != r.deployment.ID {
			idxs = append(idxs, idx)
		}
	}
	sort.Ints(idxs)
	n := gs.missing
	for _, idx := range idxs {
		if n == 0 {
			break
		}
		if idx < 0 || idx >= gs.tg.Count || names.used[idx] {
			continue
		}
		names.take(idx)
		n--
		r.placeAlloc(gs, idx, gs.donors[idx], false, "")
	}
}

// limit is how many destructive updates may start now: MaxParallel minus
// the allocations of the deployment not yet healthy; none while one is
// unhealthy. Without a deployment there is no limit.
func (r *reconciler) limit(gs *groupState, tracked bool) int {
	if !tracked || gs.strategy.IsEmpty() {
		return math.MaxInt
	}
	limit := gs.strategy.MaxParallel
	for _, a := range gs.counted {
		if a.DeploymentID != r.deployment.ID {
			continue
		}
		if a.DeploymentStatus.IsUnhealthy() {
			return 0
		}
		if !a.DeploymentStatus.IsHealthy() {
			limit--
		}
	}
	return max(limit, 0)
}

// canaryIndexes picks n canary names not in taken: first those of
// allocations being destructively updated (so the promoted canary takes
// over the name), then free ones.
func canaryIndexes(n int, destructive []*state.Allocation, taken map[int]bool, names *nameIndex) []int {
	var out []int
	for _, a := range destructive {
		if len(out) == n {
			return out
		}
		if idx := allocIndex(a.Name); idx >= 0 && !taken[idx] {
			taken[idx] = true
			out = append(out, idx)
		}
	}
	for len(out) < n {
		idx := names.free()
		if !taken[idx] {
			out = append(out, idx)
		}
	}
	return out
}

// placeReplacement places the new version of a destructively updated allocation.
func (r *reconciler) placeReplacement(gs *groupState, old *state.Allocation, depID string) bool {
	return r.placeAllocNamed(gs, allocIndex(old.Name), old, false, depID, "")
}

// placeAlloc places one allocation of the group under index idx; prev, when
// set, is the dead allocation it replaces (stopped with it when needed).
func (r *reconciler) placeAlloc(gs *groupState, idx int, prev *state.Allocation, canary bool, depID string) bool {
	stopDesc := ""
	if prev != nil {
		stopDesc = gs.donorStop[prev.ID]
	}
	if canary {
		r.desired(gs.tg.Name).Canary++
	} else {
		r.desired(gs.tg.Name).Place++
	}
	return r.placeAllocNamed(gs, idx, prev, canary, depID, stopDesc)
}

func (r *reconciler) placeAllocNamed(gs *groupState, idx int, prev *state.Allocation, canary bool, depID, stopPrev string) bool {
	// Two old allocations may share a name (a canary beside the one it
	// replaces); their replacements in one plan may not.
	if gs.placedNames[idx] && gs.names != nil {
		idx = gs.names.free()
	}
	var avoid map[string]bool
	if prev != nil {
		avoid = penaltyNodes(prev)
	}
	ni, ports, metric := r.placer.place(r.job, gs.tg, avoid)
	if ni == nil {
		r.res.recordFailure(gs.tg.Name, metric, r.placer)
		gs.queued++
		r.res.queued[gs.tg.Name]++
		r.res.blocked = true
		return false
	}
	a := &state.Allocation{
		ID:            uuid.NewString(),
		Namespace:     r.job.Namespace,
		EvalID:        r.eval.ID,
		Name:          allocName(r.job.ID, gs.tg.Name, idx),
		NodeID:        ni.node.ID,
		NodeName:      ni.node.Name,
		JobID:         r.job.ID,
		JobVersion:    r.job.Version,
		TaskGroup:     gs.tg.Name,
		Resources:     gs.tg.Resources(),
		DesiredStatus: state.AllocDesiredStatusRun,
		ClientStatus:  state.AllocClientStatusPending,
		DeploymentID:  depID,
		Metrics:       metric,
		// Nomad's Resources.Networks and AllocatedResources.Shared.Ports
		// are read from these.
		AllocatedPorts: ports,
	}
	if prev != nil {
		a.PreviousAllocation = prev.ID
		if gs.rescheduled[prev.ID] {
			a.RescheduleTracker = rescheduleTracker(prev, r.policyOf(prev), r.now)
		}
		if stopPrev != "" {
			r.stop(prev, stopPrev, "")
		}
	}
	if canary {
		a.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
	}
	r.res.plan.Placements = append(r.res.plan.Placements, a)
	if gs.placedNames == nil {
		gs.placedNames = map[int]bool{}
	}
	gs.placedNames[idx] = true
	gs.placed++
	return true
}

// complete says whether the group has nothing left to place or update.
func (gs *groupState) complete() bool {
	return gs.missing == 0 && len(gs.destructive) == 0 && len(gs.inplace) == 0 &&
		!gs.requireCanary && gs.placed == 0 && gs.queued == 0
}

// finishDeployment marks the current deployment successful (blocked for a
// multiregion job) once every group is done, healthy enough and promoted:
// Nomad's rule, applied by the scheduler rather than the watcher.
func (r *reconciler) finishDeployment(groups []*groupState) {
	d := r.deployment
	if d == nil || r.created || d.Status != state.DeploymentStatusRunning {
		return
	}
	for _, gs := range groups {
		if !gs.complete() {
			return
		}
	}
	for _, ds := range d.TaskGroups {
		if ds.HealthyAllocs < max(ds.DesiredTotal, ds.DesiredCanaries) || (ds.DesiredCanaries > 0 && !ds.Promoted) {
			return
		}
	}
	u := &state.DeploymentStatusUpdate{
		DeploymentID:      d.ID,
		Status:            state.DeploymentStatusSuccessful,
		StatusDescription: state.DeploymentStatusDescriptionSuccessful,
	}
	if r.job.Multiregion != nil {
		u.Status, u.StatusDescription = state.DeploymentStatusBlocked, state.DeploymentStatusDescriptionBlocked
	}
	r.res.plan.DeploymentUpdates = append(r.res.plan.DeploymentUpdates, u)
}
